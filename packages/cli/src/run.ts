import { SessionsError } from "@sessions/core";
import { closest, parseCommandArgs, usageCommandOf, usageError } from "./args.js";
import { commandHelp, groupHelp, rootHelp } from "./help.js";
import { importOpenClawCommand } from "./import-openclaw.js";
import { replay } from "./replay.js";
import { serve } from "./serve.js";
import { type CliIo, sessionActions } from "./sessions.js";
import { BIN, COMMANDS, type CommandSpec, IMPORT_OPENCLAW, REPLAY, SERVE } from "./spec.js";
import { VERSION } from "./version.js";

export type { CliIo } from "./sessions.js";

const GROUPS = ["sessions"];

/** Which command `argv` names, and the arguments after the command words. */
function findCommand(
  argv: readonly string[],
): { spec: CommandSpec; rest: string[] } | { group: string } | null {
  const [first, second] = argv;
  if (first === undefined || first.startsWith("-")) return null;
  const two = COMMANDS.find((c) => c.name === `${first} ${second}`);
  if (two !== undefined) return { spec: two, rest: argv.slice(2) };
  const one = COMMANDS.find((c) => c.name === first);
  if (one !== undefined) return { spec: one, rest: argv.slice(1) };
  if (GROUPS.includes(first)) return { group: first };
  return null;
}

function checkArgCount(spec: CommandSpec, positionals: readonly string[]): void {
  const declared = spec.args?.match(/<[^>]+>/g) ?? [];
  const variadic = declared.some((a) => a.endsWith("…>"));
  if (!variadic && positionals.length > declared.length) {
    throw usageError(`unexpected argument ${JSON.stringify(positionals[declared.length])}`, spec.name);
  }
}

function unknownCommand(words: readonly string[], group?: string): SessionsError {
  const names = group === undefined ? [...new Set(COMMANDS.map((c) => c.name.split(" ")[0] as string))] : [];
  const actions = group === undefined ? [] : COMMANDS.filter((c) => c.name.startsWith(`${group} `));
  const word = (group === undefined ? words[0] : words[1]) ?? "";
  const guess = closest(
    word,
    group === undefined ? names : actions.map((c) => c.name.slice(group.length + 1)),
  );
  const where = group === undefined ? "" : `${group} `;
  return usageError(
    `unknown command "${where}${word}"${guess === undefined ? "" : ` (did you mean "${where}${guess}"?)`}`,
    group ?? "",
  );
}

/**
 * Runs `sessions-gateway` with `argv` (without node and the script) and returns the exit code: 0 success, 1
 * failure, 2 usage. Errors are thrown; `runCli` prints them.
 */
async function dispatch(argv: readonly string[], io: CliIo): Promise<number> {
  const found = findCommand(argv);
  if (found === null) {
    const first = argv[0];
    if (first === undefined) {
      io.err(`${rootHelp()}\n`);
      return 2;
    }
    if (first === "help") return dispatch([...argv.slice(1), "--help"], io);
    if (first === "--help" || first === "-h") {
      io.out(rootHelp());
      return 0;
    }
    if (first === "--version" || first === "-v") {
      io.out(VERSION);
      return 0;
    }
    if (first.startsWith("-")) {
      throw usageError(`unknown option ${first.split("=")[0]} (options go after the command)`, "");
    }
    throw unknownCommand(argv);
  }
  if ("group" in found) {
    const action = argv[1];
    if (action === undefined || action === "--help" || action === "-h") {
      (action === undefined ? (t: string) => io.err(`${t}\n`) : io.out)(groupHelp(found.group));
      return action === undefined ? 2 : 0;
    }
    throw unknownCommand(argv, found.group);
  }
  const { spec, rest } = found;
  const { values, positionals } = parseCommandArgs(rest, spec);
  if (values.help === true) {
    io.out(commandHelp(spec));
    return 0;
  }
  checkArgCount(spec, positionals);
  if (spec === SERVE) {
    await serve(values, io.out);
    return 0;
  }
  if (spec === REPLAY) return replay(positionals[0], values, io);
  if (spec === IMPORT_OPENCLAW) return importOpenClawCommand(positionals, values, io);
  const action = sessionActions[spec.name.slice("sessions ".length)];
  if (action === undefined) throw new SessionsError("internal", `no handler for "${spec.name}"`);
  await action(positionals, values, io);
  return 0;
}

/** The exit code for an error: 2 for mistakes on the command line (bad arguments), 1 for everything else. */
export function exitCodeOf(error: unknown): number {
  return SessionsError.isInstance(error) && error.code === "invalid_params" ? 2 : 1;
}

/** One clear line for an error, plus a hint line for usage errors. */
export function describeError(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const field =
    SessionsError.isInstance(error) && error.field && !message.includes(error.field)
      ? ` (${error.field})`
      : "";
  const lines = [`${BIN}: ${message}${field}`];
  const usage = usageCommandOf(error);
  if (usage !== undefined) {
    lines.push(`Run "${BIN}${usage === "" ? "" : ` ${usage}`} --help" for usage.`);
  }
  return `${lines.join("\n")}\n`;
}

const processIo: CliIo = {
  out: (line) => process.stdout.write(`${line}\n`),
  err: (text) => process.stderr.write(text),
  tty: process.stderr.isTTY === true,
};

/**
 * Runs the CLI and resolves to its exit code (see {@link EXIT_CODES}): 0 success, 1 failure, 2 usage error. Errors
 * are printed to `io.err` as one line (plus a `--help` hint for usage errors), never thrown.
 *
 * @example
 * ```ts
 * import { runCli } from "@sessions/cli";
 *
 * process.exitCode = await runCli(process.argv.slice(2));
 * ```
 */
export async function runCli(argv: readonly string[], io: CliIo = processIo): Promise<number> {
  try {
    return await dispatch(argv, io);
  } catch (error) {
    io.err(describeError(error));
    return exitCodeOf(error);
  }
}
