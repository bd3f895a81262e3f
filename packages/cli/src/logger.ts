import type { Logger } from "@sessions/core";

/** How much `serve` logs, quietest last. */
export const LOG_LEVELS = ["debug", "info", "warn", "error", "silent"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

const RANK: Record<LogLevel, number> = { debug: 0, info: 1, warn: 2, error: 3, silent: 4 };

/** Whether `value` names a log level (trimmed, any case). */
export function parseLogLevel(value: string): LogLevel | undefined {
  const level = value.trim().toLowerCase();
  return (LOG_LEVELS as readonly string[]).includes(level) ? (level as LogLevel) : undefined;
}

/**
 * A logger that writes one line per entry at `level` and above: `<ISO time> <level> <prefix>: <message> <fields as
 * JSON>`, the prefix naming the part that logged (`serve`, `gateway`, `store-postgres`). Lines go to `write` (stderr
 * by default), so a `serve` that prints its URL on stdout keeps stdout clean.
 */
export function lineLogger(
  level: LogLevel,
  options: { write?: ((line: string) => void) | undefined; now?: (() => Date) | undefined } = {},
): Logger {
  const write = options.write ?? ((line: string) => process.stderr.write(line));
  const now = options.now ?? (() => new Date());
  // The root's lines are serve's own; a child's (`gateway`, `gateway/outbox`, `store-postgres`) name their part.
  const make = (prefix: string | undefined): Logger => {
    const at =
      (entry: Exclude<LogLevel, "silent">) =>
      (message: string, fields?: Record<string, unknown>): void => {
        if (RANK[entry] < RANK[level]) return;
        const rest = fields === undefined || Object.keys(fields).length === 0 ? "" : ` ${json(fields)}`;
        write(`${now().toISOString()} ${entry} ${prefix ?? "serve"}: ${message}${rest}\n`);
      };
    return {
      debug: at("debug"),
      info: at("info"),
      warn: at("warn"),
      error: at("error"),
      child: (name) => make(prefix === undefined ? name : `${prefix}/${name}`),
    };
  };
  return make(undefined);
}

/** Fields as one line of JSON; a field that cannot be serialised (a cycle, a BigInt) is shown by `String`. */
function json(fields: Record<string, unknown>): string {
  try {
    return JSON.stringify(fields, (_key, value: unknown) =>
      typeof value === "bigint" ? String(value) : value instanceof Error ? value.message : value,
    );
  } catch {
    return JSON.stringify(Object.fromEntries(Object.entries(fields).map(([k, v]) => [k, String(v)])));
  }
}
