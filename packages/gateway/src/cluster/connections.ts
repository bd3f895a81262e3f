import type { Logger } from "@sessions/core";
import type { Clock } from "../clock.js";
import { holderGone, leaseHolderData } from "../store/lease-liveness.js";
import type { SessionStore } from "../store/types.js";
import type { ClusterSettings } from "./options.js";

/** A connection only one gateway may hold at a time: a Discord gateway socket, Telegram long polling, … */
export interface ExclusiveConnection {
  /** Opens it: called when this gateway takes the lease (at start, or when the previous holder died). */
  start(): unknown;
  /** Closes it: called when the lease is lost (this gateway stalled past it) or given up on `close()`. */
  stop(): unknown;
}

export interface HeldConnection {
  /** The lease's name: `connection:<name>`. */
  readonly lease: string;
  /** Whether this gateway holds it (and `start` has succeeded) right now. */
  readonly held: boolean;
  /** Stops it here (if held) and gives the lease up, so another gateway takes it over at once. */
  release(): Promise<void>;
}

export const connectionLeaseName = (name: string) => `connection:${name}`;

/**
 * Keeps trying to hold `connection:<name>`: whoever holds it runs the connection and renews the lease; the other
 * gateways try again every heartbeat and take over once the holder's lease lapses (or at once when the holder's
 * process died on this host). A `start` that throws gives the lease back for another try.
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
    if (held) {
      if (await store.renewLease(lease, owner, settings.leaseTtlMs, now)) return;
      logger.warn("lost a connection lease; stopping it here", { connection: name });
      await stopHere("lease lost");
      return;
    }
    let result = await store.acquireLease({
      name: lease,
      owner,
      ttlMs: settings.leaseTtlMs,
      now,
      data: leaseHolderData(),
    });
    if (!result.acquired && holderGone(result.holder, now)) {
      await store.releaseLease(lease, result.holder.owner);
      result = await store.acquireLease({
        name: lease,
        owner,
        ttlMs: settings.leaseTtlMs,
        now,
        data: leaseHolderData(),
      });
    }
    if (!result.acquired || stopped) return;
    try {
      await connection.start();
      held = true;
      logger.info("holding connection", { connection: name });
    } catch (error) {
      logger.warn("connection start failed; giving the lease back", {
        connection: name,
        error: String(error),
      });
      await store.releaseLease(lease, owner).catch(() => false);
    }
  }

  const step = () => {
    busy = busy.then(tick).catch((error: unknown) => {
      logger.warn("connection lease check failed", { connection: name, error: String(error) });
    });
  };
  step();
  const timer = setInterval(step, settings.heartbeatMs);
  timer.unref();

  return {
    lease,
    get held() {
      return held;
    },
    async release() {
      if (stopped) return;
      stopped = true;
      clearInterval(timer);
      await busy;
      if (held) await stopHere("released");
      await store.releaseLease(lease, owner).catch(() => false);
    },
  };
}
