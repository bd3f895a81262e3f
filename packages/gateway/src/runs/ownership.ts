import type { Clock } from "../clock.js";
import { holderGone, leaseHolderData } from "../store/lease-liveness.js";
import type { SessionStore } from "../store/types.js";

const GATEWAY_LEASE_TTL_MS = 30_000;
const HEARTBEAT_MS = 10_000;

export const gatewayLeaseName = (owner: string) => `gateway:${owner}`;

/**
 * This gateway instance says it is alive: a lease named after it, renewed on a heartbeat (real time, unref'd)
 * and given up on close. Runs record their owner; recovery takes over only runs whose owner is gone.
 */
export async function holdGatewayLease(deps: {
  store: SessionStore;
  clock: Clock;
  owner: string;
}): Promise<{ release(): Promise<void> }> {
  const name = gatewayLeaseName(deps.owner);
  await deps.store.acquireLease({
    name,
    owner: deps.owner,
    ttlMs: GATEWAY_LEASE_TTL_MS,
    now: deps.clock.now(),
    data: leaseHolderData(),
  });
  const heartbeat = setInterval(() => {
    deps.store.renewLease(name, deps.owner, GATEWAY_LEASE_TTL_MS, deps.clock.now()).catch(() => undefined);
  }, HEARTBEAT_MS);
  heartbeat.unref();
  return {
    async release() {
      clearInterval(heartbeat);
      await deps.store.releaseLease(name, deps.owner).catch(() => false);
    },
  };
}

/** Tells whether the gateway instance `owner` is gone (its lease lapsed or its process died on this host). */
export function ownerLiveness(deps: { store: SessionStore; clock: Clock; owner: string }) {
  const known = new Map<string, boolean>();
  return async (owner: string | undefined): Promise<boolean> => {
    if (owner === undefined) return true;
    if (owner === deps.owner) return false;
    let gone = known.get(owner);
    if (gone === undefined) {
      const lease = await deps.store.getLease(gatewayLeaseName(owner));
      gone = lease === undefined || holderGone(lease, deps.clock.now());
      known.set(owner, gone);
    }
    return gone;
  };
}
