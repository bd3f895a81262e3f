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
export async function holdGatewayLease(
  deps: {
    store: SessionStore;
    clock: Clock;
    owner: string;
  },
  /** Shorter in cluster mode, so that other gateways take a dead one's work over sooner. */
  ttlMs = GATEWAY_LEASE_TTL_MS,
): Promise<{ release(): Promise<void> }> {
  const name = gatewayLeaseName(deps.owner);
  const take = () =>
    deps.store.acquireLease({
      name,
      owner: deps.owner,
      ttlMs,
      now: deps.clock.now(),
      data: leaseHolderData(),
    });
  await take();
  const heartbeat = setInterval(
    () => {
      // Renewed, or taken again after a stall longer than the lease (the gateway is alive after all).
      deps.store
        .renewLease(name, deps.owner, ttlMs, deps.clock.now())
        .then((renewed) => (renewed ? undefined : take()))
        .catch(() => undefined);
    },
    ttlMs === GATEWAY_LEASE_TTL_MS ? HEARTBEAT_MS : Math.max(100, Math.floor(ttlMs / 3)),
  );
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
