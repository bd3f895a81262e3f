import { type Logger, SessionsError } from "@sessions/core";
import { type Clock, monotonicNow } from "../clock.js";
import type { LaneHold } from "../context.js";
import { LaneLost } from "../run-table.js";
import { holderGone, leaseHolderData } from "../store/lease-liveness.js";
import type { AcquireLease, AcquireLeaseResult, SessionStore } from "../store/types.js";
import { isTransientStoreError } from "../store/until-stored.js";
import type { ClusterSettings } from "./options.js";
import type { StoreContact } from "./store-contact.js";

const POLL_MIN_MS = 20;
const POLL_MAX_MS = 500;
/**
 * At most this many runs of one session in a row under one tenure of its lane: then the lane is given back with a
 * run's end and taken again, so other gateways' runs of the session get their turn.
 */
export const TENURE_RUNS = 64;

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
  contact: StoreContact;
  closed: () => boolean;
  logger: Logger;
  /** How many runs of the session run or wait on this gateway's own lane (the one running included). */
  runsHere: (sessionKey: string) => number;
}) {
  const { store, clock, owner, settings, logger, contact } = deps;
  /** Lanes kept with a run's end for the next run of the session here, by lease name (see `run`). */
  const kept = new Map<string, { held: ReturnType<typeof hold>; runs: number }>();
  /** When each lease this gateway asked for with a run's start was asked for (monotonic): what its tenure counts from. */
  const askedAt = new WeakMap<AcquireLease, number>();
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

  /**
   * One try at the lease: taken (with when it was asked for, the start of its tenure), or held by a live gateway (a
   * dead one's on this host is freed for the next try).
   */
  async function attempt(
    name: string,
  ): Promise<{ taken: number } | Extract<AcquireLeaseResult, { acquired: false }> | "freed"> {
    const now = clock.now();
    const sentAt = monotonicNow(clock);
    const lapsedBefore = contact.lapsedBefore();
    const result = await store.acquireLease({
      name,
      owner,
      ttlMs: settings.leaseTtlMs,
      now,
      data: leaseHolderData(),
      lapsedBefore,
    });
    contact.reached(sentAt);
    if (result.acquired) return { taken: sentAt };
    if (!holderGone(result.holder, lapsedBefore)) return result;
    // Its gateway died on this host: free the lane now rather than when the lease lapses.
    await store.releaseLease(name, result.holder.owner);
    return "freed";
  }

  /**
   * Waits until this gateway holds the lease `name`; resolves with when the winning try was sent (monotonic), or
   * with `"closed"` once this gateway closes: a closing gateway stops waiting for a lease another gateway holds
   * (the holder may be waiting for this one to finish closing).
   */
  async function acquire(name: string, sessionKey: string): Promise<number | "closed"> {
    const since = clock.now();
    let warned = false;
    for (let delay = POLL_MIN_MS, tries = 1; ; delay = Math.min(POLL_MAX_MS, delay * 2), tries++) {
      if (deps.closed()) return "closed";
      let result: Awaited<ReturnType<typeof attempt>>;
      try {
        result = await attempt(name);
      } catch (error) {
        // The store is back soon (a database restarting): the run waits for its lane as for a busy one.
        if (!isTransientStoreError(error) || deps.closed()) throw error;
        contact.lost();
        if (!warned) logger.warn("the store is unavailable; waiting for the lease", { lease: name });
        warned = true;
        await sleep(sessionKey, Math.max(delay, Math.min(POLL_MAX_MS, error.retryAfterMs ?? POLL_MAX_MS)));
        continue;
      }
      if (result === "freed") continue;
      if ("taken" in result) {
        if (tries > 1) logger.debug("took the lease", { lease: name, waitedMs: clock.now() - since, tries });
        return result.taken;
      }
      if (tries === 1) logger.debug("waiting for the lease", { lease: name, holder: result.holder.owner });
      await sleep(sessionKey, delay);
    }
  }

  /**
   * Holds the lease `name`, taken by a request sent at monotonic `takenAt`: renewed every heartbeat, and lost —
   * `signal` aborts with `LaneLost` — when a renewal finds it taken, or when none confirmed since `takenAt` leaves
   * it `graceMs` before it expires (measured on this gateway's monotonic clock from when the last confirmed
   * renewal was sent, as the store counts its expiry from then). Another gateway takes it over only `graceMs`
   * after it expires, so this one has stopped acting under it by then, whatever the network does.
   */
  function hold(name: string, takenAt: number): { signal: AbortSignal; stop(): void; valid(): boolean } {
    const lost = new AbortController();
    let confirmed = takenAt;
    let stopped = false;
    let deadline: unknown;
    const lose = (reason: string) => {
      if (stopped || lost.signal.aborted) return;
      logger.warn("stopped acting under a lease it could not keep", { lease: name, reason });
      lost.abort(new LaneLost(name, reason));
      stop();
    };
    const arm = () => {
      if (deadline !== undefined) clock.clearTimeout(deadline);
      const left = confirmed + settings.leaseTtlMs - settings.graceMs - monotonicNow(clock);
      deadline = clock.setTimeout(
        () => {
          deadline = undefined;
          if (monotonicNow(clock) >= confirmed + settings.leaseTtlMs - settings.graceMs)
            lose(`not renewed within ${settings.leaseTtlMs - settings.graceMs} ms`);
          else arm();
        },
        Math.max(0, left),
      );
    };
    const renew = setInterval(() => {
      const sentAt = monotonicNow(clock);
      store.renewLease(name, owner, settings.leaseTtlMs, clock.now()).then(
        (renewed) => {
          if (stopped) return;
          contact.reached(sentAt);
          if (!renewed) return lose("another gateway holds it");
          confirmed = Math.max(confirmed, sentAt);
        },
        () => contact.lost(),
      );
    }, settings.heartbeatMs);
    renew.unref();
    function stop() {
      stopped = true;
      clearInterval(renew);
      if (deadline !== undefined) clock.clearTimeout(deadline);
    }
    arm();
    return {
      signal: lost.signal,
      stop,
      // Asked right before a side effect: the deadline's timer may not have fired yet (a process waking from a
      // pause runs its overdue timers in order, and another's may come first).
      valid: () =>
        !stopped &&
        !lost.signal.aborted &&
        monotonicNow(clock) < confirmed + settings.leaseTtlMs - settings.graceMs,
    };
  }

  /** Stops renewing the lease `name` and gives it back (a failed release leaves it to lapse). */
  async function giveUp(name: string, held: ReturnType<typeof hold>): Promise<void> {
    held.stop();
    await store.releaseLease(name, owner).catch(() => false);
  }

  /** The session's lane lease as this gateway asks for it now (with a run's start). */
  function lease(sessionKey: string): AcquireLease {
    const asked: AcquireLease = {
      name: laneLeaseName(sessionKey),
      owner,
      ttlMs: settings.leaseTtlMs,
      now: clock.now(),
      data: leaseHolderData(),
      lapsedBefore: contact.lapsedBefore(),
    };
    askedAt.set(asked, monotonicNow(clock));
    return asked;
  }

  return {
    lease,
    /** Gives back a lane a run's start took that no run will use (the start was a repeat). */
    async give(sessionKey: string): Promise<void> {
      await store.releaseLease(laneLeaseName(sessionKey), owner).catch(() => false);
    },
    /**
     * Runs `task` holding the session's lane (a closing gateway runs it at once: it ends the run as closed).
     * `taken`: the lease the run's start took the lane with (the run was recorded as started). The hold's `signal`
     * aborts when the lane is lost (`LaneLost`): the task must stop acting under it.
     */
    async run<T>(
      sessionKey: string,
      task: (hold?: LaneHold) => Promise<T>,
      taken?: AcquireLease,
    ): Promise<T> {
      const name = laneLeaseName(sessionKey);
      // The run before it here kept the lane for it: the tenure goes on (its renewals too), no round trip.
      let tenure = kept.get(name);
      kept.delete(name);
      if (tenure?.held.signal.aborted) tenure = undefined;
      let held: ReturnType<typeof hold>;
      let runs = 1;
      if (tenure !== undefined) {
        held = tenure.held;
        runs = tenure.runs + 1;
      } else {
        const takenAt =
          taken === undefined
            ? await acquire(name, sessionKey)
            : (askedAt.get(taken) ?? monotonicNow(clock) - Math.max(0, clock.now() - taken.now));
        if (takenAt === "closed") return task();
        held = hold(name, takenAt);
      }
      let released = false;
      let passed = false;
      try {
        return await task({
          lease: { name, owner },
          signal: held.signal,
          valid: () => held.valid(),
          passOn: () =>
            !held.signal.aborted && !deps.closed() && runs < TENURE_RUNS && deps.runsHere(sessionKey) > 1,
          passed: () => {
            passed = true;
          },
          released: () => {
            released = true;
            held.stop();
          },
        });
      } finally {
        // Kept only once the end that kept it is recorded: an end refused means the lane may be another's. And only
        // while a next run is still here: the one being recorded that it was kept for may have been declined since.
        if (passed && !released && !held.signal.aborted && deps.runsHere(sessionKey) > 1)
          kept.set(name, { held, runs });
        else {
          held.stop();
          if (!released) await store.releaseLease(name, owner).catch(() => false);
        }
      }
    },
    /**
     * Runs a short `task` holding the lease `name` (e.g. `budget:<rootRunId>`) across the cluster: waits for it with
     * backoff like a lane, gives it up at once after. For read-then-write steps the store's units do not cover.
     */
    async exclusive<T>(name: string, task: () => Promise<T>): Promise<T> {
      const takenAt = await acquire(name, name);
      if (takenAt === "closed") throw new SessionsError("unavailable", "The gateway is closed");
      // Renewed while the task runs, as a lane is: a slow store call must not let another gateway in meanwhile.
      const held = hold(name, takenAt);
      try {
        return await task();
      } finally {
        await giveUp(name, held);
      }
    },
    /** Gives back the session's kept lane if no run of it is here any more (the one it was kept for was not created). */
    async giveKept(sessionKey: string): Promise<void> {
      const name = laneLeaseName(sessionKey);
      const left = kept.get(name);
      if (left === undefined || deps.runsHere(sessionKey) > 0) return;
      kept.delete(name);
      await giveUp(name, left.held);
    },
    /** Gives back the lanes kept for a next run that never came to take them (the gateway stopping). */
    async releaseKept(): Promise<void> {
      const left = [...kept.entries()];
      kept.clear();
      for (const [name, { held }] of left) await giveUp(name, held);
    },
    /** A run of `sessionKey` ended somewhere: gateways waiting for its lane try again now. */
    wake(sessionKey: string): void {
      for (const wake of [...(sleepers.get(sessionKey) ?? [])]) wake();
    },
  };
}

export type ClusterLanes = ReturnType<typeof createClusterLanes>;
