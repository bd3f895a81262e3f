import { SessionsError } from "@sessions/core";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parseCommandArgs, usageCommandOf } from "./args.js";
import { commandHelp, rootHelp } from "./help.js";
import { runCli } from "./run.js";
import { toolRow } from "./sessions.js";
import { COMMANDS, EXIT_CODES, SERVE, SESSIONS_LIST } from "./spec.js";

async function cli(...argv: string[]) {
  const out: string[] = [];
  let err = "";
  const code = await runCli(argv, { out: (line) => out.push(line), err: (t) => (err += t), tty: false });
  return { code, stdout: out.join("\n"), stderr: err };
}

describe("--help", () => {
  it.each(COMMANDS.map((c) => [c.name, c] as const))(
    "%s --help is its own: usage, every option with its description and default, exit codes",
    async (name, spec) => {
      const { code, stdout, stderr } = await cli(...name.split(" "), "--help");
      expect(code).toBe(0);
      expect(stderr).toBe("");
      expect(stdout).toBe(commandHelp(spec));
      expect(stdout.split("\n")[0]).toBe(`sessions-gateway ${name} — ${spec.summary}`);
      expect(stdout).toContain(`Usage: sessions-gateway ${name}`);
      for (const [option, o] of Object.entries(spec.options)) {
        expect(stdout).toContain(`--${option}`);
        expect(stdout.replace(/\s+/g, " ")).toContain(o.description);
        if (o.default !== undefined) expect(stdout.replace(/\s+/g, " ")).toContain(`(default: ${o.default})`);
      }
      expect(stdout).toContain("Exit codes:");
      for (const [exit] of EXIT_CODES) expect(stdout).toMatch(new RegExp(`^  ${exit}\\s`, "m"));
    },
  );

  it("documents --drain-ms and the other serve defaults", async () => {
    const { stdout } = await cli("serve", "-h");
    const flat = stdout.replace(/\s+/g, " ");
    expect(flat).toMatch(
      /--drain-ms <N> on SIGINT\/SIGTERM, how long running work may finish .* \(default: 10000\)/,
    );
    expect(flat).toContain("--port <N> port to listen on (0 picks a free one) (default: 18789)");
    expect(flat).toContain("SESSIONS_GATEWAY_TOKEN");
  });

  it("differs per subcommand, and `help <command>` is the same text", async () => {
    const texts = await Promise.all(COMMANDS.map((c) => cli(...c.name.split(" "), "--help")));
    expect(new Set(texts.map((t) => t.stdout)).size).toBe(COMMANDS.length);
    expect((await cli("help", "sessions", "send")).stdout).toBe(
      (await cli("sessions", "send", "--help")).stdout,
    );
    expect((await cli("--help")).stdout).toBe(rootHelp());
    expect((await cli("sessions", "--help")).stdout).toMatch(/^sessions-gateway sessions — /);
  });

  it("without a command prints the overview to stderr and exits 2", async () => {
    const { code, stdout, stderr } = await cli();
    expect(code).toBe(2);
    expect(stdout).toBe("");
    expect(stderr).toContain("Commands:");
  });

  it("--version prints the package version", async () => {
    const { code, stdout } = await cli("--version");
    expect(code).toBe(0);
    expect(stdout).toMatch(/^\d+\.\d+\.\d+/);
  });
});

describe("mistakes on the command line", () => {
  it.each([
    [
      ["serve", "--prot", "1"],
      'sessions-gateway: unknown option --prot for "serve" (did you mean --port?)',
      "serve",
    ],
    [["serve", "--frobnicate"], 'sessions-gateway: unknown option --frobnicate for "serve"', "serve"],
    [["sessions", "list", "-x"], 'sessions-gateway: unknown option -x for "sessions list"', "sessions list"],
    [["sessions", "list", "--json=yes"], "sessions-gateway: --json takes no value", "sessions list"],
    [["serve", "--port"], "sessions-gateway: --port needs a value (--port N)", "serve"],
    [["serve", "--port", "--db", "x"], "sessions-gateway: --port needs a value (--port N)", "serve"],
    [
      ["serve", "--port", "http"],
      'sessions-gateway: --port must be a whole number 0..65535 (got "http")',
      "serve",
    ],
    [
      ["serve", "--drain-ms", "-5"],
      'sessions-gateway: --drain-ms must be a whole number ≥ 0 (got "-5")',
      "serve",
    ],
    [
      ["sessions", "list", "--limit", "0"],
      'sessions-gateway: --limit must be a whole number ≥ 1 (got "0")',
      "sessions list",
    ],
    [
      ["sessions", "patch", "main", "--send-policy", "maybe"],
      'sessions-gateway: --send-policy must be allow, deny or inherit (got "maybe")',
      "sessions patch",
    ],
    [["sessions", "list", "extra"], 'sessions-gateway: unexpected argument "extra"', "sessions list"],
    [
      ["sessions", "send", "main"],
      "sessions-gateway: sessions send needs <key> and <message…>",
      "sessions send",
    ],
    [["serv"], 'sessions-gateway: unknown command "serv" (did you mean "serve"?)', ""],
    [
      ["sessions", "lst"],
      'sessions-gateway: unknown command "sessions lst" (did you mean "sessions list"?)',
      "sessions",
    ],
    [["--port", "1", "serve"], "sessions-gateway: unknown option --port (options go after the command)", ""],
  ])("%j → one clear line, a hint, exit 2", async (argv, line, command) => {
    const { code, stdout, stderr } = await cli(...argv);
    expect(code).toBe(2);
    expect(stdout).toBe("");
    expect(stderr.trimEnd().split("\n")).toEqual([
      line,
      `Run "sessions-gateway${command === "" ? "" : ` ${command}`} --help" for usage.`,
    ]);
  });

  it("never throws anything but a usage error naming the command, for any argv", () => {
    const word = fc.oneof(
      fc.constantFrom("--port", "--db", "--json", "--help", "-h", "--", "-x", "--drain-ms", "--url"),
      fc.string({ maxLength: 8 }),
      fc.string({ maxLength: 8 }).map((s) => `--${s}`),
    );
    fc.assert(
      fc.property(fc.array(word, { maxLength: 6 }), fc.constantFrom(...COMMANDS), (argv, spec) => {
        try {
          const { values } = parseCommandArgs(argv, spec);
          for (const name of Object.keys(values)) expect(Object.hasOwn(spec.options, name)).toBe(true);
        } catch (error) {
          expect(SessionsError.isInstance(error) && error.code === "invalid_params").toBe(true);
          expect(usageCommandOf(error)).toBe(spec.name);
        }
      }),
      { numRuns: 500 },
    );
  });

  it("accepts every declared option, in = and space forms", () => {
    expect(parseCommandArgs(["--port=0", "--db", "x.db", "--drain-ms", "5"], SERVE).values).toEqual({
      port: "0",
      db: "x.db",
      "drain-ms": "5",
    });
    expect(parseCommandArgs(["--json", "--limit", "3", "--", "--not-an-option"], SESSIONS_LIST)).toEqual({
      values: { json: true, limit: "3" },
      positionals: ["--not-an-option"],
    });
  });
});

describe("toolRow", () => {
  it.each([
    [{ key: "agent:main:main", kind: "direct" }, undefined, { kind: "main", channel: "unknown" }],
    [{ key: "agent:main:home", kind: "direct" }, "home", { kind: "main", channel: "unknown" }],
    [
      { key: "agent:main:discord:group:dev", kind: "group" },
      undefined,
      { kind: "group", channel: "discord" },
    ],
    [{ key: "agent:main:cron:nightly", kind: "direct" }, undefined, { kind: "cron", channel: "internal" }],
    [
      { key: "agent:ops:subagent:1", kind: "direct", lastChannel: "Telegram" },
      undefined,
      { kind: "other", channel: "telegram" },
    ],
  ])("%j (mainKey %j) → %j", (row, mainKey, expected) => {
    expect(toolRow(row, mainKey)).toMatchObject(expected);
  });
});
