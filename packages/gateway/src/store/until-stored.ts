import { SessionsError } from "@sessions/core";
import type { Clock } from "../clock.js";

/** How long a write that must land is retried while the store is unavailable, by default. */
export const STORE_OUTAGE_MS = 10 * 60_000;
const MAX_PAUSE_MS = 5_000;

/** True for a store failure worth waiting out: the database restarting, a lost connection, no space yet. */
export function isTransientStoreError(error: unknown): error is SessionsError {
  return (
    SessionsError.isInstance(error) &&
    (error.code === "unavailable" || error.code === "storage_full") &&
    typeof error.retryAfterMs === "number"
  );
}

/**
 * Runs `write` until the store answers, for a write whose effect already happened elsewhere and must be recorded
 * (a run's end after the runner replied, a delivery after the platform took it): while the store is unavailable
 * it waits as long as the store suggests (at most 5 s) and tries again, up to `outageMs` in all or until
 * `stop()` says the gateway is closing; then, or on any other failure, it throws the last error. `write` must be
 * safe to repeat: a write that committed but whose answer was lost is tried again.
 */
export async function untilStored<T>(
  write: () => Promise<T>,
  options: {
    clock: Clock;
    stop: () => boolean;
    onRetry?: ((error: SessionsError, attempt: number) => void) | undefined;
    outageMs?: number | undefined;
  },
): Promise<T> {
  const { clock } = options;
  const started = clock.now();
  for (let attempt = 1; ; attempt++) {
    try {
      return await write();
    } catch (error) {
      const waited = clock.now() - started;
      if (
        !isTransientStoreError(error) ||
        options.stop() ||
        waited >= (options.outageMs ?? STORE_OUTAGE_MS)
      ) {
        throw error;
      }
      options.onRetry?.(error, attempt);
      const pause = Math.min(MAX_PAUSE_MS, Math.max(10, error.retryAfterMs ?? 1000));
      await new Promise<void>((resolve) => clock.setTimeout(resolve, pause));
    }
  }
}
