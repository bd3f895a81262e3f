import { type Clock, monotonicNow } from "../clock.js";
import type { StoreContact } from "../cluster/store-contact.js";
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
  /** In cluster mode: hears whether each heartbeat reached the store. */
  contact?: Pick<StoreContact, "reached" | "lost">,
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
      const sentAt = monotonicNow(deps.clock);
      deps.store
        .renewLease(name, deps.owner, ttlMs, deps.clock.now())
        .then((renewed) => {
          contact?.reached(sentAt);
          return renewed ? undefined : take();
        })
        .catch(() => contact?.lost());
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

/**
 * How a gateway instance is gone: `stopped` (its lease given up on close, or its process no longer runs on this
 * host), or `lapsed` (its lease ran out: it died elsewhere, froze, or lost the store — nobody can tell which).
 */
export type Gone = "stopped" | "lapsed";

/**
 * Tells whether the gateway instance `owner` is gone, and how (false: alive): its process died on this host, or its
 * lease lapsed before `lapsedBefore()` (in a cluster: its expiry plus a grace, and never while this gateway's own
 * contact with the store is too recent to judge by; see `StoreContact`).
 */
export function ownerLiveness(deps: {
  store: SessionStore;
  clock: Clock;
  owner: string;
  lapsedBefore?: (() => number) | undefined;
}) {
  const known = new Map<string, { gone: Gone | false; expiresAt: number }>();
  /**
   * `wroteAt`: when the owner last wrote the work in question (a run's start or end). A lease that lapsed before
   * then says nothing of that work: its owner was alive to write it after the lapse (a partition healed, and it has
   * not renewed yet), so the work is not taken from it.
   */
  return async (owner: string | undefined, wroteAt?: number): Promise<Gone | false> => {
    if (owner === undefined) return "stopped";
    if (owner === deps.owner) return false;
    let seen = known.get(owner);
    if (seen === undefined) {
      const lease = await deps.store.getLease(gatewayLeaseName(owner));
      let gone: Gone | false;
      if (lease === undefined) gone = "stopped";
      else if (holderGone(lease, Number.NEGATIVE_INFINITY)) gone = "stopped";
      else if (holderGone(lease, deps.lapsedBefore?.() ?? deps.clock.now())) gone = "lapsed";
      else gone = false;
      seen = { gone, expiresAt: lease?.expiresAt ?? Number.POSITIVE_INFINITY };
      known.set(owner, seen);
    }
    if (seen.gone === "lapsed" && wroteAt !== undefined && wroteAt > seen.expiresAt) return false;
    return seen.gone;
  };
}
