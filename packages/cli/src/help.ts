import {
  BIN,
  COMMANDS,
  type CommandSpec,
  ENVIRONMENT,
  EXIT_CODES,
  type OptionSpec,
  ROOT_OPTIONS,
} from "./spec.js";

const WIDTH = 100;

function wrap(text: string, indent: string, width = WIDTH): string[] {
  const lines: string[] = [];
  let line = "";
  for (const word of text.split(/\s+/).filter((w) => w !== "")) {
    if (line !== "" && indent.length + line.length + 1 + word.length > width) {
      lines.push(indent + line);
      line = word;
    } else line = line === "" ? word : `${line} ${word}`;
  }
  if (line !== "") lines.push(indent + line);
  return lines;
}

function table(rows: readonly (readonly [string, string])[]): string[] {
  const left = Math.min(34, Math.max(...rows.map(([a]) => a.length)));
  const out: string[] = [];
  for (const [a, b] of rows) {
    if (a.length > left) {
      out.push(`  ${a}`);
      out.push(...wrap(b, " ".repeat(left + 4)));
      continue;
    }
    const [first = "", ...more] = wrap(b, "", WIDTH - left - 4);
    out.push(`  ${a.padEnd(left)}  ${first}`);
    for (const line of more) out.push(`${" ".repeat(left + 4)}${line}`);
  }
  return out;
}

function optionLabel(name: string, option: OptionSpec): string {
  const short = option.short === undefined ? "" : `-${option.short}, `;
  const value = option.type === "string" ? ` <${option.placeholder ?? "value"}>` : "";
  return `${short}--${name}${value}`;
}

function optionRows(options: Readonly<Record<string, OptionSpec>>): [string, string][] {
  return Object.entries(options).map(([name, option]) => [
    optionLabel(name, option),
    option.default === undefined ? option.description : `${option.description} (default: ${option.default})`,
  ]);
}

function footer(): string[] {
  return [
    "",
    "Environment:",
    ...table(ENVIRONMENT),
    "",
    "Exit codes:",
    ...table(EXIT_CODES.map(([code, meaning]) => [String(code), meaning])),
  ];
}

/** `sessions-gateway --help`: every command with its summary. */
export function rootHelp(): string {
  return [
    `${BIN} — run and operate a sessions gateway`,
    "",
    `Usage: ${BIN} <command> [options]`,
    "",
    "Commands:",
    ...table(COMMANDS.map((c) => [`${c.name}${c.args === undefined ? "" : ` ${c.args}`}`, c.summary])),
    "",
    "Options:",
    ...table(optionRows(ROOT_OPTIONS)),
    ...footer(),
    "",
    `Run "${BIN} <command> --help" for a command's options and defaults.`,
  ].join("\n");
}

/** `sessions-gateway sessions --help`: the commands of one group. */
export function groupHelp(group: string): string {
  const commands = COMMANDS.filter((c) => c.name.startsWith(`${group} `));
  return [
    `${BIN} ${group} — ${group} on a running gateway`,
    "",
    `Usage: ${BIN} ${group} <${commands.map((c) => c.name.slice(group.length + 1)).join("|")}> [options]`,
    "",
    "Commands:",
    ...table(commands.map((c) => [`${c.name}${c.args === undefined ? "" : ` ${c.args}`}`, c.summary])),
    ...footer(),
    "",
    `Run "${BIN} ${group} <command> --help" for a command's options and defaults.`,
  ].join("\n");
}

/** `sessions-gateway <command> --help`: usage, what it does, every option with its default, exit codes. */
export function commandHelp(spec: CommandSpec): string {
  const lines = [
    `${BIN} ${spec.name} — ${spec.summary}`,
    "",
    `Usage: ${BIN} ${spec.name}${spec.args === undefined ? "" : ` ${spec.args}`} [options]`,
  ];
  for (const paragraph of spec.details ?? []) lines.push("", ...wrap(paragraph, ""));
  lines.push("", "Options:", ...table(optionRows(spec.options)), ...footer());
  if (spec.examples !== undefined && spec.examples.length > 0) {
    lines.push("", "Examples:", ...spec.examples.map((e) => `  ${e}`));
  }
  return lines.join("\n");
}
