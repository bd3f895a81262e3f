import { parseArgs } from "node:util";
import { SessionsError } from "@sessions/core";
import type { CommandSpec, OptionSpec } from "./spec.js";

/**
 * The parsed options of one command, by long name (`--drain-ms 500` → `{ "drain-ms": "500" }`): strings for string
 * options, `true` for boolean flags, `undefined` when absent (defaults are applied by the command's handler).
 */
export type OptionValues = Record<string, string | boolean | undefined>;

export interface ParsedCommand {
  values: OptionValues;
  positionals: string[];
}

/**
 * A mistake on the command line: a `SessionsError` (`invalid_params`, exit 2) whose `details.usage` names the
 * command whose `--help` the hint points to (`""` for the top level).
 */
export function usageError(message: string, command: string, field?: string): SessionsError {
  return new SessionsError("invalid_params", message, {
    ...(field === undefined ? {} : { field }),
    details: { usage: command },
  });
}

/** The command a usage error's hint points to, or `undefined` when the error is not a usage error. */
export function usageCommandOf(error: unknown): string | undefined {
  if (!SessionsError.isInstance(error)) return undefined;
  const usage = error.details?.usage;
  return typeof usage === "string" ? usage : undefined;
}

function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let previous = row[0] as number;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const current = row[j] as number;
      row[j] = Math.min(
        (row[j] as number) + 1,
        (row[j - 1] as number) + 1,
        previous + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
      previous = current;
    }
  }
  return row[b.length] as number;
}

/** The closest candidate within two edits (or a prefix match), for "did you mean …?". */
export function closest(input: string, candidates: readonly string[]): string | undefined {
  let best: { name: string; score: number } | undefined;
  for (const name of candidates) {
    const score = name.startsWith(input) || input.startsWith(name) ? 0.5 : distance(input, name);
    if (score <= 2 && (best === undefined || score < best.score)) best = { name, score };
  }
  return best?.name;
}

function parseArgsOptions(options: Readonly<Record<string, OptionSpec>>) {
  return Object.fromEntries(
    Object.entries(options).map(([name, spec]) => [
      name,
      { type: spec.type, ...(spec.short === undefined ? {} : { short: spec.short }) },
    ]),
  );
}

/**
 * Parses a command's arguments against its spec. Every option must be one the command declares, string options
 * need a value and boolean options take none; anything else is a usage error naming the option.
 *
 * @throws SessionsError `invalid_params` (exit 2, field: the option as typed) for an unknown option (with a "did you
 * mean" guess), a string option without a value or a flag given a value.
 * @example
 * ```ts
 * import { COMMANDS, parseCommandArgs } from "@sessions/cli";
 *
 * const serve = COMMANDS.find((c) => c.name === "serve")!;
 * parseCommandArgs(["--port", "8080", "--drain-ms", "500"], serve).values; // { port: "8080", "drain-ms": "500" }
 * ```
 */
export function parseCommandArgs(argv: readonly string[], spec: CommandSpec): ParsedCommand {
  const { tokens } = parseArgs({
    args: [...argv],
    options: parseArgsOptions(spec.options),
    strict: false,
    allowPositionals: true,
    tokens: true,
  });
  const values: OptionValues = {};
  const positionals: string[] = [];
  for (const token of tokens) {
    if (token.kind === "positional") {
      positionals.push(token.value);
      continue;
    }
    if (token.kind !== "option") continue;
    const option = spec.options[token.name];
    if (option === undefined) {
      const known = Object.keys(spec.options);
      const guess = closest(token.name, known);
      throw usageError(
        `unknown option ${token.rawName} for "${spec.name}"${guess === undefined ? "" : ` (did you mean --${guess}?)`}`,
        spec.name,
        token.rawName,
      );
    }
    if (option.type === "boolean") {
      if (token.value !== undefined)
        throw usageError(`${token.rawName} takes no value`, spec.name, token.rawName);
      values[token.name] = true;
      continue;
    }
    // `--port --db x`: a string option swallowed the next option as its value.
    const missing = token.value === undefined || (!token.inlineValue && token.value.startsWith("--"));
    if (missing) {
      throw usageError(
        `${token.rawName} needs a value (${token.rawName} ${option.placeholder ?? "value"})`,
        spec.name,
        token.rawName,
      );
    }
    values[token.name] = token.value;
  }
  return { values, positionals };
}

/** A whole number ≥ `min` from a string option, or a usage error naming the option. */
export function wholeNumber(
  value: string | boolean | undefined,
  option: string,
  command: string,
  fallback: number,
  range: { min?: number | undefined; max?: number | undefined } = {},
): number {
  if (value === undefined || typeof value === "boolean") return fallback;
  const min = range.min ?? 0;
  const max = range.max ?? Number.MAX_SAFE_INTEGER;
  const n = Number(value);
  if (value.trim() === "" || !Number.isInteger(n) || n < min || n > max) {
    const bounds = range.max === undefined ? `a whole number ≥ ${min}` : `a whole number ${min}..${max}`;
    throw usageError(`--${option} must be ${bounds} (got ${JSON.stringify(value)})`, command, `--${option}`);
  }
  return n;
}

/** A string option's value (`undefined` when absent). */
export function text(value: string | boolean | undefined): string | undefined {
  return typeof value === "string" ? value : undefined;
}
