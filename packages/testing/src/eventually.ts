/**
 * Waiting for a condition instead of the clock.
 *
 * A test that sleeps and then asserts, or gives up after a budget close to the normal time, judges the machine's
 * load rather than the code: it fails on a busy laptop or a shared CI runner. `eventually` polls until the
 * condition holds, with a bound far above any normal time (60 s by default), and when the bound is reached it fails
 * with what was still missing: the description and the condition's last error or value.
 */

/** Options of {@link eventually}. */
export interface EventuallyOptions {
  /** Gives up after this long. Default 60,000 ms: a bound for a condition that will never hold, not a budget. */
  timeoutMs?: number | undefined;
  /** Pause between two checks. Default 5 ms. */
  intervalMs?: number | undefined;
}

/** The default bound of {@link eventually}: far above the normal time of anything a test waits for. */
export const EVENTUALLY_TIMEOUT_MS = 60_000;

/** What {@link eventually} throws when its condition never held. */
export class ConditionTimeoutError extends Error {
  override readonly name = "ConditionTimeoutError";
}

/**
 * Resolves once `check` holds: returns without throwing and with a value other than `false`. An assertion that
 * throws (`expect(…)`) is retried like a `false`. Resolves to the value `check` returned last.
 *
 * ```ts
 * await eventually(() => expect(api.calls("sendMessage")).toHaveLength(2), "two messages sent");
 * const run = await eventually(async () => (await store.getRun(id))?.status === "ok" && run, "run ok");
 * ```
 *
 * @param what names the condition in the error; a function is called at failure time, to show state then.
 */
export async function eventually<T>(
  check: () => T | Promise<T>,
  what: string | (() => string) = "condition",
  options: EventuallyOptions = {},
): Promise<Exclude<T, false>> {
  const timeoutMs = options.timeoutMs ?? EVENTUALLY_TIMEOUT_MS;
  const intervalMs = options.intervalMs ?? 5;
  const started = Date.now();
  let last: { error: unknown } | { value: unknown } = { value: undefined };
  for (let round = 0; ; round++) {
    try {
      const value = await check();
      if (value !== false) return value as Exclude<T, false>;
      last = { value };
    } catch (error) {
      last = { error };
    }
    // Always at least two checks, however long the first took on a loaded machine.
    if (round > 0 && Date.now() - started >= timeoutMs) break;
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
  const label = typeof what === "function" ? what() : what;
  const detail =
    "error" in last
      ? `: ${last.error instanceof Error ? last.error.message : String(last.error)}`
      : ` (last value ${String(last.value)})`;
  throw new ConditionTimeoutError(`${label} still not true after ${timeoutMs} ms${detail}`, {
    cause: "error" in last ? last.error : undefined,
  });
}
