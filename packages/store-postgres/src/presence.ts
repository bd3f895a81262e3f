import type { Logger } from "@sessions/core";
import { payloadPrefix } from "./broadcast.js";

/** How often a store says it is here (a NOTIFY) and looks for other gateways' connections. */
export const HELLO_MS = 2_000;
/** How long after the last sign of another gateway this one still counts it as there. */
export const PEER_TTL_MS = 5_000;

/** The payload a store says it is here with, on the messages channel (older gateways ignore it: no `b`, no `p`). */
export const helloPayload = (origin: string) => `${payloadPrefix(origin)}"h":1}`;
const HELLO_END = ',"h":1}';

/**
 * Whether any other gateway shares this store's schema: while none does, nothing this one commits or raises needs
 * announcing (NOTIFY was a sixth of a lone gateway's CPU and a statement per batch of commits).
 *
 * Two signs of another gateway, each enough: a hello heard from it (every store says hello on opening and every
 * `HELLO_MS` after), or a client's backend in `pg_stat_activity` that is not one of this store's own and whose last
 * statement named the schema (how gateways of a release without hellos are seen during a rolling upgrade; a person's
 * query on the schema counts too, which only costs announcing; autovacuum's workers do not). Gateways on other
 * schemas of the database do not count.
 * A store counts itself alone only once a look at `pg_stat_activity` sent after the last sign found no other, and
 * `PEER_TTL_MS` has passed since that sign (or since it opened): it starts out announcing, and a gateway that joins
 * is heard at once, by its hello, before its own store has finished opening.
 */
export function createPresence(deps: {
  origin: string;
  /** Monotonic milliseconds. */
  now(): number;
  /** Sends `payload` on the messages channel. */
  sayHello(payload: string): Promise<void>;
  /** The backend pids whose last statement named this store's schema, other than the one asking. */
  schemaBackends(): Promise<number[]>;
  /** This store's own backend pids (its pool and its LISTEN connection). */
  ownPids(): ReadonlySet<number>;
  logger: Logger;
}) {
  const { origin, now } = deps;
  const ownPrefix = payloadPrefix(origin);
  const ownHello = helloPayload(origin);
  let lastSign = now();
  /** When the last look that found no other gateway was sent (`-Infinity`: none yet). */
  let lastEmptyLook = Number.NEGATIVE_INFINITY;
  let echoed: (() => void) | undefined;
  let timer: ReturnType<typeof setInterval> | undefined;
  let looking = false;

  async function look(): Promise<void> {
    if (looking) return;
    looking = true;
    const sentAt = now();
    try {
      const own = deps.ownPids();
      const others = (await deps.schemaBackends()).filter((pid) => !own.has(pid));
      if (others.length > 0) lastSign = Math.max(lastSign, now());
      else lastEmptyLook = sentAt;
    } catch (error) {
      // No answer is no sign either way: the store goes on as it was.
      deps.logger.debug("could not look for other gateways", { error: String(error) });
    } finally {
      looking = false;
    }
  }

  const hello = () =>
    deps.sayHello(ownHello).catch((error: unknown) => {
      deps.logger.debug("could not say hello to the other gateways", { error: String(error) });
    });

  return {
    /** True while no other gateway is known to share the schema: announcing would reach nobody. */
    alone(): boolean {
      return lastEmptyLook > lastSign && now() - lastSign >= PEER_TTL_MS;
    },
    /** Takes a payload heard on the messages channel: true when it was a hello (nothing else to do with it). */
    heard(payload: string): boolean {
      if (!payload.endsWith(HELLO_END)) return false;
      if (payload === ownHello) {
        echoed?.();
        return true;
      }
      if (payload.startsWith(ownPrefix)) return false;
      lastSign = Math.max(lastSign, now());
      return true;
    },
    /**
     * Says hello and waits (at most `echoWithinMs`) to hear it back: the other gateways have it on their LISTEN
     * connections by then. Then says it again, and looks, every `HELLO_MS`.
     */
    async start(echoWithinMs = 1_000): Promise<void> {
      const echo = new Promise<void>((resolve) => {
        echoed = resolve;
        setTimeout(resolve, echoWithinMs).unref();
      });
      await hello();
      await echo;
      echoed = undefined;
      timer = setInterval(() => {
        void hello();
        void look();
      }, HELLO_MS);
      timer.unref();
    },
    stop(): void {
      if (timer !== undefined) clearInterval(timer);
      timer = undefined;
    },
  };
}

export type Presence = ReturnType<typeof createPresence>;
