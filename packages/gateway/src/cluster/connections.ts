import type { Logger } from "@sessions/core";
import { type Clock, monotonicNow } from "../clock.js";
import { holderGone, leaseHolderData } from "../store/lease-liveness.js";
import type { SessionStore } from "../store/types.js";
import type { ClusterSettings } from "./options.js";

/** A connection only one gateway may hold at a time: a Discord gateway socket, Telegram long polling, … */
export interface ExclusiveConnection {
  /**
   * Opens it: called when this gateway takes the lease (at start, or when the previous holder died). A connection
   * that can end by itself (a fatal polling error, a socket closed for good) calls `lost(error)` when it does: the
   * gateway then stops it, gives the lease back and waits before trying again, so another gateway takes it over.
   */
  start(lost: (error: unknown) => void): unknown;
  /** Closes it: called when the lease is lost (this gateway stalled past it) or given up on `close()`. */
  stop(): unknown;
}

/**
 * A connection that only one gateway of a cluster runs at a time (a bot's Socket Mode link, a Telegram long poll),
 * held through the store's `connection:<name>` lease: what {@link Gateway.holdConnection} returns.
 */
export interface HeldConnection {
  /** The lease's name: `connection:<name>`. */
  readonly lease: string;
  /** Whether this gateway holds it (and `start` has succeeded) right now. */
  readonly held: boolean;
  /** Stops it here (if held) and gives the lease up, so another gateway takes it over at once. */
  release(): Promise<void>;
}

export const connectionLeaseName = (name: string) => `connection:${name}`;

/** The longest a gateway waits before trying a connection again after it failed to start or was lost. */
const CONNECTION_RETRY_MAX_MS = 30_000;

/**
 * Keeps trying to hold `connection:<name>`: whoever holds it runs the connection and renews the lease; the other
 * gateways try again every heartbeat and take over once the holder's lease lapses (or at once when the holder's
 * process died on this host). A `start` that throws, or a connection that reports itself `lost`, gives the lease
 * back; this gateway then waits (two heartbeats, doubling up to 30 s) before trying again, so that another gateway
 * takes it over first.
 */
export function holdExclusiveConnection(
  deps: { store: SessionStore; clock: Clock; owner: string; settings: ClusterSettings; logger: Logger },
  name: string,
  connection: ExclusiveConnection,
): HeldConnection {
  const { store, clock, owner, settings, logger } = deps;
  const lease = connectionLeaseName(name);
  let held = false;
  let stopped = false;
  let busy: Promise<void> = Promise.resolve();
  /** Which `start` runs now: a `lost` report from an earlier one is stale. */
  let generation = 0;
  /** Failed starts and losses in a row, and when this gateway may try again. */
  let failures = 0;
  let retryAt = 0;
  /** When the newest renewal (or the take) that the store confirmed was sent, on the monotonic clock. */
  let confirmedAt = 0;

  function backOff(): void {
    failures++;
    const wait = Math.min(settings.heartbeatMs * 2 ** failures, CONNECTION_RETRY_MAX_MS);
    retryAt = clock.now() + wait;
  }

  async function stopHere(reason: string): Promise<void> {
    held = false;
    try {
      await connection.stop();
    } catch (error) {
      logger.warn("connection stop failed", { connection: name, reason, error: String(error) });
    }
  }

  async function tick(): Promise<void> {
    if (stopped) return;
    const now = clock.now();
    const sentAt = monotonicNow(clock);
    if (held) {
      if (await store.renewLease(lease, owner, settings.leaseTtlMs, now)) {
        failures = 0; // it has run for a heartbeat
        confirmedAt = Math.max(confirmedAt, sentAt);
        return;
      }
      logger.warn("lost a connection lease; stopping it here", { connection: name });
      await stopHere("lease lost");
      return;
    }
    if (now < retryAt) return;
    // Another gateway's lease is taken only `graceMs` after it lapsed: by then its holder has stopped (below).
    const ask = {
      name: lease,
      owner,
      ttlMs: settings.leaseTtlMs,
      now,
      data: leaseHolderData(),
      lapsedBefore: now - settings.graceMs,
    };
    let result = await store.acquireLease(ask);
    if (!result.acquired && holderGone(result.holder, now - settings.graceMs)) {
      await store.releaseLease(lease, result.holder.owner);
      result = await store.acquireLease(ask);
    }
    if (!result.acquired || stopped) return;
    confirmedAt = sentAt;
    const started = ++generation;
    try {
      await connection.start((error) => queue(() => lost(started, error)));
      held = true;
      logger.info("holding connection", { connection: name });
    } catch (error) {
      logger.warn("connection start failed; giving the lease back", {
        connection: name,
        error: String(error),
      });
      await store.releaseLease(lease, owner).catch(() => false);
      backOff();
    }
  }

  /** The connection ended by itself (Telegram's 409 Conflict, a revoked token): hand it to another gateway. */
  async function lost(started: number, error: unknown): Promise<void> {
    if (stopped || !held || started !== generation) return;
    logger.warn("connection lost; giving the lease back", { connection: name, error: String(error) });
    await stopHere("lost");
    await store.releaseLease(lease, owner).catch(() => false);
    backOff();
  }

  function queue(task: () => Promise<void>): void {
    busy = busy.then(task).catch((error: unknown) => {
      logger.warn("connection lease check failed", { connection: name, error: String(error) });
    });
  }
  const step = () => queue(tick);
  step();
  const timer = setInterval(step, settings.heartbeatMs);
  timer.unref();
  // Not renewed in time (the store unreachable, a renewal held by a partition): stopped here `graceMs` before the
  // lease expires, apart from the heartbeat's queue, which a held call blocks.
  const watchdog = setInterval(
    () => {
      if (!held || stopped) return;
      if (monotonicNow(clock) - confirmedAt < settings.leaseTtlMs - settings.graceMs) return;
      logger.warn("could not renew a connection lease in time; stopping it here", { connection: name });
      generation++;
      void stopHere("lease not renewed in time");
    },
    Math.max(50, Math.floor(settings.graceMs / 2)),
  );
  watchdog.unref();

  return {
    lease,
    get held() {
      return held;
    },
    async release() {
      if (stopped) return;
      stopped = true;
      clearInterval(timer);
      clearInterval(watchdog);
      await busy;
      if (held) await stopHere("released");
      await store.releaseLease(lease, owner).catch(() => false);
    },
  };
}
