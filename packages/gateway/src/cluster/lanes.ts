import type { Logger } from "@sessions/core";
import type { Clock } from "../clock.js";
import type { LaneHold } from "../context.js";
import { holderGone, leaseHolderData } from "../store/lease-liveness.js";
import type { AcquireLease, AcquireLeaseResult, SessionStore } from "../store/types.js";
import { isTransientStoreError } from "../store/until-stored.js";
import type { ClusterSettings } from "./options.js";

const POLL_MIN_MS = 20;
const POLL_MAX_MS = 500;

export const laneLeaseName = (sessionKey: string) => `lane:${sessionKey}`;

/**
 * One run at a time per session across every gateway on the store: a run executes while its gateway holds the
 * session's lane lease (renewed as it runs, released when it ends). A gateway that finds the lane taken waits,
 * woken when a run of that session ends anywhere (the change feed) or by a short poll; a holder that died is
 * noticed when its lease lapses, or at once on the same host.
 */
export function createClusterLanes(deps: {
  store: SessionStore;
  clock: Clock;
  owner: string;
  settings: ClusterSettings;
  closed: () => boolean;
  logger: Logger;
}) {
  const { store, clock, owner, settings, logger } = deps;
  const sleepers = new Map<string, Set<() => void>>();

  function sleep(sessionKey: string, ms: number): Promise<void> {
    return new Promise((resolve) => {
      let set = sleepers.get(sessionKey);
      if (set === undefined) {
        set = new Set();
        sleepers.set(sessionKey, set);
      }
      const own = set;
      const wake = () => {
        clearTimeout(timer);
        own.delete(wake);
        if (own.size === 0 && sleepers.get(sessionKey) === own) sleepers.delete(sessionKey);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      own.add(wake);
    });
  }

  /** One try at the lease: taken, or held by a live gateway (a dead one's on this host is freed for the next try). */
  async function attempt(name: string): Promise<AcquireLeaseResult | "freed"> {
    const now = clock.now();
    const result = await store.acquireLease({
      name,
      owner,
      ttlMs: settings.leaseTtlMs,
      now,
      data: leaseHolderData(),
    });
    if (result.acquired || !holderGone(result.holder, now)) return result;
    // Its gateway died on this host: free the lane now rather than when the lease lapses.
    await store.releaseLease(name, result.holder.owner);
    return "freed";
  }

  async function acquire(name: string, sessionKey: string): Promise<void> {
    const since = clock.now();
    let warned = false;
    for (let delay = POLL_MIN_MS, tries = 1; ; delay = Math.min(POLL_MAX_MS, delay * 2), tries++) {
      let result: AcquireLeaseResult | "freed";
      try {
        result = await attempt(name);
      } catch (error) {
        // The store is back soon (a database restarting): the run waits for its lane as for a busy one.
        if (!isTransientStoreError(error) || deps.closed()) throw error;
        if (!warned) logger.warn("the store is unavailable; waiting for the lease", { lease: name });
        warned = true;
        await sleep(sessionKey, Math.max(delay, Math.min(POLL_MAX_MS, error.retryAfterMs ?? POLL_MAX_MS)));
        continue;
      }
      if (result === "freed") continue;
      if (result.acquired) {
        if (tries > 1) logger.debug("took the lease", { lease: name, waitedMs: clock.now() - since, tries });
        return;
      }
      if (tries === 1) logger.debug("waiting for the lease", { lease: name, holder: result.holder.owner });
      await sleep(sessionKey, delay);
    }
  }

  /** Renews the held lease `name` every heartbeat (while `holding()`) until the returned stop is called. */
  function keepRenewed(name: string, holding: () => boolean = () => true): () => void {
    const renew = setInterval(() => {
      if (holding()) store.renewLease(name, owner, settings.leaseTtlMs, clock.now()).catch(() => undefined);
    }, settings.heartbeatMs);
    renew.unref();
    return () => clearInterval(renew);
  }

  /** The session's lane lease as this gateway asks for it now. */
  function lease(sessionKey: string): AcquireLease {
    return {
      name: laneLeaseName(sessionKey),
      owner,
      ttlMs: settings.leaseTtlMs,
      now: clock.now(),
      data: leaseHolderData(),
    };
  }

  return {
    lease,
    /** Gives back a lane a run's start took that no run will use (the start was a repeat). */
    async give(sessionKey: string): Promise<void> {
      await store.releaseLease(laneLeaseName(sessionKey), owner).catch(() => false);
    },
    /**
     * Runs `task` holding the session's lane (a closing gateway runs it at once: it ends the run as closed).
     * `taken`: the lane was taken already, with the run's start (the run was recorded as started).
     */
    async run<T>(sessionKey: string, task: (hold?: LaneHold) => Promise<T>, taken = false): Promise<T> {
      if (deps.closed() && !taken) return task();
      const name = laneLeaseName(sessionKey);
      if (!taken) await acquire(name, sessionKey);
      let released = false;
      const stopRenewing = keepRenewed(name, () => !released);
      try {
        return await task({
          lease: { name, owner },
          released: () => {
            released = true;
          },
        });
      } finally {
        stopRenewing();
        if (!released) await store.releaseLease(name, owner).catch(() => false);
      }
    },
    /**
     * Runs a short `task` holding the lease `name` (e.g. `budget:<rootRunId>`) across the cluster: waits for it with
     * backoff like a lane, gives it up at once after. For read-then-write steps the store's units do not cover.
     */
    async exclusive<T>(name: string, task: () => Promise<T>): Promise<T> {
      await acquire(name, name);
      // Renewed while the task runs, as a lane is: a slow store call must not let another gateway in meanwhile.
      const stopRenewing = keepRenewed(name);
      try {
        return await task();
      } finally {
        stopRenewing();
        await store.releaseLease(name, owner).catch(() => false);
      }
    },
    /** A run of `sessionKey` ended somewhere: gateways waiting for its lane try again now. */
    wake(sessionKey: string): void {
      for (const wake of [...(sleepers.get(sessionKey) ?? [])]) wake();
    },
  };
}

export type ClusterLanes = ReturnType<typeof createClusterLanes>;
