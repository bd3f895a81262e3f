import { type ChildProcess, execFile, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { hostname, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { createGatewayClient } from "@sessions/gateway-client";
import { eventually } from "@sessions/testing/eventually";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { formatTable } from "./table.js";

const run = promisify(execFile);
const here = dirname(fileURLToPath(import.meta.url));
const cli = join(here, "cli.ts");
const demoConfig = join(here, "..", "examples", "demo.json5");
const dir = mkdtempSync(join(tmpdir(), "sessions-cli-"));
const token = "cli-test-token";

let server: ChildProcess;
let url = "";
let serverLog = "";
const serveProcesses = new Set<ChildProcess>();

function startServer(args: string[]): Promise<{ child: ChildProcess; url: string }> {
  return startServerWithEnv(args, { SESSIONS_GATEWAY_TOKEN: token });
}

function startServerWithEnv(
  args: string[],
  env: Record<string, string>,
): Promise<{ child: ChildProcess; url: string }> {
  return new Promise((resolve, reject) => {
    const { SESSIONS_GATEWAY_TOKEN: _inherited, ...base } = process.env;
    let log = "";
    const child = spawn(process.execPath, ["--import", "tsx", cli, "serve", ...args], {
      cwd: here,
      env: { ...base, ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    serveProcesses.add(child);
    child.stdout?.on("data", (d) => {
      serverLog += String(d);
      log += String(d);
      const match = /listening (ws:\/\/\S+)/.exec(log);
      if (match) resolve({ child, url: match[1] as string });
    });
    child.stderr?.on("data", (d) => {
      serverLog += String(d);
    });
    child.on("exit", (code) => reject(new Error(`serve exited ${code}: ${serverLog}`)));
  });
}

/** A SQLite store's owner lease (`store.owner`), read with the gateway's own driver: the CLI has none of its own. */
function ownerLease(path: string): { acquiredAt: number; expiresAt: number; pid: unknown } | undefined {
  const gatewayRequire = createRequire(
    createRequire(import.meta.url).resolve("@sessions/gateway/package.json"),
  );
  const Database = gatewayRequire("better-sqlite3") as new (
    file: string,
    options: { readonly: boolean },
  ) => { prepare(sql: string): { get(...params: unknown[]): unknown }; close(): void };
  const db = new Database(path, { readonly: true });
  try {
    const row = db
      .prepare("SELECT acquired_at, expires_at, data FROM leases WHERE name = ?")
      .get("store.owner") as { acquired_at: number; expires_at: number; data: string | null } | undefined;
    if (row === undefined) return undefined;
    const data = JSON.parse(row.data ?? "{}") as { pid?: unknown };
    return { acquiredAt: row.acquired_at, expiresAt: row.expires_at, pid: data.pid };
  } finally {
    db.close();
  }
}

async function sessions(...args: string[]) {
  return run(process.execPath, ["--import", "tsx", cli, "sessions", ...args, "--url", url], {
    cwd: here,
    env: { ...process.env, SESSIONS_GATEWAY_TOKEN: token },
  });
}

async function client<T>(fn: (c: ReturnType<typeof createGatewayClient>) => Promise<T>): Promise<T> {
  const c = createGatewayClient({ url, token, reconnect: false });
  try {
    return await fn(c);
  } finally {
    await c.close();
  }
}

async function failing(args: string[], env: Record<string, string> = {}) {
  try {
    await run(process.execPath, ["--import", "tsx", cli, ...args], {
      cwd: here,
      env: { ...process.env, ...env },
    });
  } catch (error) {
    return error as { code: number; stderr: string; stdout: string };
  }
  throw new Error(`expected ${args.join(" ")} to fail`);
}

beforeAll(async () => {
  ({ child: server, url } = await startServer([
    "--config",
    demoConfig,
    "--port",
    "0",
    "--db",
    join(dir, "gw.db"),
  ]));
});

afterAll(() => {
  server?.kill("SIGKILL");
  for (const child of serveProcesses) child.kill("SIGKILL");
  rmSync(dir, { recursive: true, force: true });
});

describe("sessions-gateway", () => {
  it("serves the demo config and answers the client subcommands", async () => {
    const sent = await sessions("send", "main", "hello", "over", "the", "wire", "--wait");
    expect(sent.stdout.trim()).toBe("echo: hello over the wire");

    const spawned = await sessions(
      "spawn",
      "main",
      "dig",
      "into",
      "it",
      "--agent",
      "research",
      "--label",
      "digger",
    );
    expect(spawned.stdout).toMatch(/^accepted agent:research:subagent:[0-9a-f-]{36} \(run [0-9a-f-]{36}\)/);

    const list = await sessions("list");
    const lines = list.stdout.trim().split("\n");
    expect(lines[0]).toMatch(/^KEY\s+KIND\s+CHANNEL\s+LABEL\s+UPDATEDAT\s+TOTALTOKENS$/);
    // Kinds and channels as the session tools show them, not the wire's coarse `direct`.
    expect(list.stdout).toMatch(/^agent:main:main\s+main\s+unknown\s/m);
    expect(list.stdout).toMatch(/^agent:research:subagent:\S+\s+other\s+unknown\s+digger/m);
    expect(lines.at(-1)).toBe("2 session(s)");

    const json = JSON.parse((await sessions("list", "--json")).stdout);
    expect(json).toMatchObject({ count: 2, hasMore: false });
    const tool = (await client(async (c) =>
      c.callTool({ requesterKey: "main", name: "sessions_list", params: {} }),
    )) as { sessions: { key: string; kind: string; channel: string }[] };
    for (const row of json.sessions as { key: string; kind: string; channel: string }[]) {
      const same = tool.sessions.find((t) => t.key === row.key || `agent:main:${t.key}` === row.key);
      if (same !== undefined)
        expect({ kind: row.kind, channel: row.channel }).toEqual({ kind: same.kind, channel: same.channel });
    }
    expect(json.sessions.find((r: { key: string }) => r.key === "agent:main:main")).toMatchObject({
      kind: "main",
      channel: "unknown",
    });

    const patched = await sessions("patch", "main", "--label", "home", "--send-policy", "deny");
    expect(patched.stdout).toMatch(/agent:main:main\s+home\s+deny/);
    const inherit = JSON.parse(
      (await sessions("patch", "main", "--send-policy", "inherit", "--json")).stdout,
    );
    expect(inherit.entry.sendPolicy).toBeUndefined();

    const history = await sessions("history", "main", "--limit", "20");
    expect(history.stdout).toMatch(
      /^SEQ\s+ROLE\s+TEXT\n1\s+user\s+hello over the wire\n2\s+assistant\s+echo: hello over the wire/,
    );
  });

  it("prints one clear line and a non-zero code on errors", async () => {
    const usage = await failing(["sessions", "history", "--url", url], { SESSIONS_GATEWAY_TOKEN: token });
    expect(usage.code).toBe(2);
    expect(usage.stderr.trim().split("\n")).toEqual([
      "sessions-gateway: sessions history needs <key>",
      'Run "sessions-gateway sessions history --help" for usage.',
    ]);

    const auth = await failing(["sessions", "list", "--url", url], { SESSIONS_GATEWAY_TOKEN: "wrong" });
    expect(auth.code).toBe(1);
    expect(auth.stderr.trim()).toBe("sessions-gateway: gateway token mismatch");

    const missing = await failing(["sessions", "patch", "agent:main:ghost", "--label", "x", "--url", url], {
      SESSIONS_GATEWAY_TOKEN: token,
    });
    expect(missing.stderr.trim()).toBe("sessions-gateway: Session not found: agent:main:ghost");

    const badConfig = join(dir, "bad.json5");
    writeFileSync(badConfig, "{ tools: { sessions: { visibility: 'everyone' } } }");
    const invalid = await failing([
      "serve",
      "--config",
      badConfig,
      "--port",
      "0",
      "--db",
      join(dir, "bad.db"),
    ]);
    expect(invalid.code).toBe(1);
    expect(invalid.stderr.trim()).toBe(
      'sessions-gateway: Invalid sessions config: tools.sessions.visibility: Invalid option: expected one of "self"|"tree"|"agent"|"all"',
    );

    const unreachable = await failing(["sessions", "list", "--url", "ws://127.0.0.1:9"]);
    expect(unreachable.stderr.trim()).toMatch(/^sessions-gateway: /);
    expect(unreachable.stderr.trim().split("\n")).toHaveLength(1);
  });

  it("applies configured tokens even without the shared token, and validates them", async () => {
    const config = join(dir, "tokens.json5");
    writeFileSync(config, `{ gateway: { tokens: [{ token: "bound-token-1", requesterKey: "main" }] } }`);
    const bound = await startServerWithEnv(
      ["--config", config, "--port", "0", "--db", join(dir, "tokens.db")],
      {},
    );
    try {
      const wrong = await failing(["sessions", "list", "--url", bound.url], {
        SESSIONS_GATEWAY_TOKEN: "anything-else",
      });
      expect(wrong.stderr.trim()).toBe("sessions-gateway: gateway token mismatch");
      const scoped = await failing(["sessions", "list", "--url", bound.url], {
        SESSIONS_GATEWAY_TOKEN: "bound-token-1",
      });
      expect(scoped.stderr.trim()).toMatch(
        /^sessions-gateway: this token may only call sessions.tools.call and runs.tree as agent:main:main/,
      );
    } finally {
      bound.child.kill("SIGKILL");
    }
    const badTokens = join(dir, "bad-tokens.json5");
    writeFileSync(badTokens, `{ gateway: { tokens: [{ token: "short" }] } }`);
    const invalid = await failing([
      "serve",
      "--config",
      badTokens,
      "--port",
      "0",
      "--db",
      join(dir, "bad2.db"),
    ]);
    expect(invalid.stderr.trim()).toBe(
      "sessions-gateway: Invalid gateway settings: gateway.tokens[0].token: tokens must be at least 8 characters",
    );
    const badCluster = join(dir, "bad-cluster.json5");
    writeFileSync(badCluster, "{ gateway: { cluster: { leaseTtlMs: 10 } } }");
    const tooShort = await failing([
      "serve",
      "--config",
      badCluster,
      "--port",
      "0",
      "--db",
      join(dir, "bad3.db"),
    ]);
    expect(tooShort.stderr.trim()).toMatch(
      /^sessions-gateway: Invalid gateway settings: gateway\.cluster\.leaseTtlMs: /,
    );
  });

  it("refuses a second serve on the same --db in one line naming the holder, until the holder dies", async () => {
    const db = join(dir, "owned.db");
    const runner = join(dir, "slow-runner.mjs");
    writeFileSync(
      runner,
      'export default { async run(request) { await new Promise((r) => setTimeout(r, 2500)); return { reply: "slow: " + request.input.content }; } };\n',
    );
    const first = await startServer(["--port", "0", "--db", db, "--runner", runner]);
    const started = Date.now();
    const client = createGatewayClient({ url: first.url, token, reconnect: false });
    try {
      const held = await client.agent({ message: "held", idempotencyKey: "owned-1" });

      let refused: { code: number | null; killed: boolean; stderr: string } | undefined;
      try {
        await run(process.execPath, ["--import", "tsx", cli, "serve", "--port", "0", "--db", db], {
          cwd: here,
          env: { ...process.env, SESSIONS_GATEWAY_TOKEN: token },
          // A bound for a serve that starts after all (and so never exits), not a budget for the refusal.
          timeout: 120_000,
        });
      } catch (error) {
        refused = error as { code: number | null; killed: boolean; stderr: string };
      }
      expect(refused, "the second serve must not start").toBeDefined();
      expect(refused?.killed).toBe(false);
      expect(refused?.code).toBe(1);
      const lines = refused?.stderr.trim().split("\n") ?? [];
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(
        new RegExp(
          `^sessions-gateway: SQLite store .*owned\\.db is in use by pid ${first.child.pid} on host ${hostname()} since (\\S+)`,
        ),
      );
      const since = Date.parse(/ since (\S+?)[ ,]/.exec(lines[0] as string)?.[1] ?? "");
      expect(Math.abs(since - started)).toBeLessThan(60_000);

      // The holder never noticed: it still answers, and the run it had in flight ends normally.
      expect(await client.agents.list()).toMatchObject({ defaultId: "main" });
      expect(await client.agentWait({ runId: held.runId, timeoutMs: 60_000 })).toMatchObject({
        status: "ok",
        reply: "slow: held",
      });

      first.child.kill("SIGKILL");
      await new Promise((resolve) => first.child.once("exit", resolve));
      const dead = ownerLease(db);
      expect(dead?.pid).toBe(first.child.pid);
      const restarted = await startServer(["--port", "0", "--db", db]);
      // The new server took the file over at once, from the dead holder's pid, not by waiting out its lease: it
      // took the lease before the dead holder's had expired.
      const taken = ownerLease(db);
      expect(taken?.pid).toBe(restarted.child.pid);
      expect(
        taken?.acquiredAt,
        "the restarted serve took the file only after the dead holder's lease expired",
      ).toBeLessThan(dead?.expiresAt as number);
      const after = createGatewayClient({ url: restarted.url, token, reconnect: false });
      try {
        expect(await after.agentWait({ runId: held.runId, timeoutMs: 0 })).toMatchObject({ status: "ok" });
      } finally {
        await after.close();
      }
    } finally {
      await client.close();
      first.child.kill("SIGKILL");
    }
  });

  it("drains and exits 0 on SIGTERM, telling clients shutdown", async () => {
    const second = await startServer(["--port", "0", "--db", join(dir, "second.db")]);
    const exited = new Promise<number | null>((resolve) => second.child.once("exit", resolve));
    second.child.kill("SIGTERM");
    expect(await exited).toBe(0);
    expect(serverLog).toContain("SIGTERM: draining");
  });

  it("logs each run's steps to stderr at --log-level debug, and refuses a level it does not know", async () => {
    const debug = await startServer(["--port", "0", "--db", join(dir, "debug.db"), "--log-level", "debug"]);
    let stderr = "";
    debug.child.stderr?.on("data", (d) => {
      stderr += String(d);
    });
    const c = createGatewayClient({ url: debug.url, token, reconnect: false });
    try {
      const { runId } = await c.agent({ message: "hi", idempotencyKey: "log-level" });
      expect(await c.agentWait({ runId, timeoutMs: 60_000 })).toMatchObject({ status: "ok" });
      const lines = () => stderr.split("\n").filter((line) => line.includes(runId));
      await eventually(() => lines().some((line) => line.includes("run ended")));
      // In order, one line each: time, level, part, message, fields as JSON.
      expect(lines().map((line) => line.replace(/^\S+ /, ""))).toEqual([
        `debug runs: run recorded {"runId":"${runId}","sessionKey":"agent:main:main","kind":"agent","status":"running"}`,
        `debug runs: run started {"runId":"${runId}","sessionKey":"agent:main:main","kind":"agent"}`,
        `debug runs: run ended {"runId":"${runId}","sessionKey":"agent:main:main","kind":"agent","status":"ok"}`,
      ]);
      expect(lines().every((line) => /^\d{4}-\d\d-\d\dT[\d:.]+Z debug /.test(line))).toBe(true);
    } finally {
      await c.close();
      debug.child.kill("SIGKILL");
    }

    const unknown = await failing(["serve", "--port", "0", "--db", join(dir, "x.db"), "--log-level", "loud"]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr.trim().split("\n")[0]).toBe(
      'sessions-gateway: --log-level must be one of debug, info, warn, error, silent (got "loud")',
    );
    const fromEnv = await failing(["serve", "--port", "0", "--db", join(dir, "x.db")], {
      SESSIONS_LOG_LEVEL: "chatty",
    });
    expect(fromEnv.code).toBe(2);
    expect(fromEnv.stderr).toContain(
      'SESSIONS_LOG_LEVEL must be one of debug, info, warn, error, silent (got "chatty")',
    );
  });
});

describe("formatTable", () => {
  it("aligns columns and renders timestamps and objects", () => {
    const text = formatTable(
      [
        { key: "a", n: 1, at: Date.UTC(2026, 0, 2, 3, 4, 5) },
        { key: "longer-key", n: 22, obj: { x: 1 } },
      ],
      ["key", "n", "at", "obj"],
    );
    expect(text.split("\n")).toEqual([
      "KEY         N   AT                   OBJ",
      "a           1   2026-01-02 03:04:05",
      'longer-key  22                       {"x":1}',
    ]);
  });
});
