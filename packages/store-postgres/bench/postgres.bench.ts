/**
 * Several gateways on one Postgres, measured on this machine: `pnpm bench` (or `pnpm --filter
 * @sessions/store-postgres bench`). `BENCH_SCALE=small` runs a quick version (the full one seeds 100,000 sessions
 * and a 1,000,000-message transcript, and takes minutes). Everything — Postgres, the gateways, the load — shares
 * the machine's cores, so the 2- and 3-gateway rows show what the database and the CPUs allow, not more boxes.
 * The Postgres here keeps its crash safety (fsync on), as the SQLite store does.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import {
  createGateway,
  createScriptedRunner,
  createSqliteStore,
  type Gateway,
  type SessionStore,
} from "@sessions/gateway";
import { createGatewayClient, type GatewayClient } from "@sessions/gateway-client";
import { createPostgresStore } from "../src/index.js";
import { startFakePlatform } from "../src/testing/fake-platform.js";
import { startLocalPostgres } from "../src/testing/local-postgres.js";
import { BIG_KEY, type SeedShape, SMALL_KEY, seedPostgres, seedThroughStore } from "./seed.js";
import { printStatementCost, statementCost } from "./statements.js";

const here = dirname(fileURLToPath(import.meta.url));
const small = process.env.BENCH_SCALE === "small";
const SIZE = small
  ? { sessions: 2_000, big: 20_000, small: 1_000, runs: 300, iterations: 50 }
  : { sessions: 100_000, big: 1_000_000, small: 1_000, runs: 3_000, iterations: 300 };
const say = (line: string) => process.stdout.write(`${line}\n`);
let schemas = 0;
const schema = (name: string) => `bench_${name}_${process.pid}_${++schemas}`;

function p50(samples: number[]): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

async function timeEach(iterations: number, op: () => Promise<unknown>): Promise<number> {
  for (let i = 0; i < Math.min(10, iterations); i++) await op();
  const samples: number[] = [];
  for (let i = 0; i < iterations; i++) {
    const start = performance.now();
    await op();
    samples.push(performance.now() - start);
  }
  return p50(samples);
}

function child(
  script: string,
  env: Record<string, string>,
  ready: RegExp,
): Promise<{ proc: ChildProcess; out: string[] }> {
  return new Promise((resolve, reject) => {
    const out: string[] = [];
    const proc = spawn(process.execPath, ["--import", "tsx", script], {
      env: { ...process.env, ...env },
      stdio: ["pipe", "pipe", "pipe"],
    });
    proc.stdout?.on("data", (chunk) => {
      out.push(String(chunk));
      if (ready.test(out.join(""))) resolve({ proc, out });
    });
    proc.stderr?.on("data", (chunk) => out.push(String(chunk)));
    proc.on("exit", (code) => reject(new Error(`${script} exited ${code}: ${out.join("")}`)));
  });
}

// ------------------------------------------------------------------ runs/s with 1, 2, 3 gateways

async function runsPerSecond(url: string, gateways: number): Promise<number> {
  const name = schema("runs");
  await (await createPostgresStore({ connectionString: url, schema: name })).close();
  const children = await Promise.all(
    Array.from({ length: gateways }, (_, i) =>
      child(
        join(here, "load-child.ts"),
        { DATABASE_URL: url, SCHEMA: name, RUNS: String(SIZE.runs), SESSIONS: "64", PREFIX: `g${i}` },
        /ready/,
      ),
    ),
  );
  const results = children.map(
    ({ proc, out }) =>
      new Promise<{ runs: number; ms: number }>((resolve) => {
        proc.stdout?.on("data", () => {
          const match = /(\{"runs".*\})/.exec(out.join(""));
          if (match) resolve(JSON.parse(match[1] as string));
        });
      }),
  );
  for (const { proc } of children) proc.stdin?.write("go\n");
  const done = await Promise.all(results);
  for (const { proc } of children) proc.removeAllListeners("exit");
  const total = done.reduce((sum, r) => sum + r.runs, 0);
  return total / (Math.max(...done.map((r) => r.ms)) / 1000);
}

// ------------------------------------------------------------------ failover

async function failover(
  url: string,
  signal: "SIGKILL" | "SIGSTOP",
): Promise<{ deliveries: number; connection: number }> {
  const name = schema("failover");
  const platform = await startFakePlatform();
  const nodes = await Promise.all(
    ["g1", "g2", "g3"].map((gw) =>
      child(
        join(here, "..", "src", "testing", "gateway-process.ts"),
        {
          DATABASE_URL: url,
          SCHEMA: name,
          NAME: gw,
          PLATFORM_URL: platform.url,
          LEASE_TTL_MS: "3000",
          RECOVERY_MS: "1000",
        },
        /listening ws:\/\/\S+\n/,
      ).then((c) => ({ name: gw, ...c, url: /listening (ws:\/\/\S+)/.exec(c.out.join(""))?.[1] as string })),
    ),
  );
  try {
    while (platform.connections.length === 0) await new Promise((r) => setTimeout(r, 20));
    const victim = nodes.find((n) => n.name === platform.connections[0]?.gateway) as (typeof nodes)[number];
    platform.holdSendsFrom(victim.name);
    const client: GatewayClient = createGatewayClient({ url: victim.url, reconnect: false });
    await client.ready();
    const runIds: string[] = [];
    for (let i = 0; i < 5; i++) {
      const { runId } = (await client.request("agent", {
        message: `m${i}`,
        idempotencyKey: `f${i}`,
        sessionKey: `s${i}`,
        deliver: true,
        channel: "chat",
        to: `room:${i}`,
      })) as { runId: string };
      runIds.push(runId);
    }
    while (platform.heldCount() < 5) await new Promise((r) => setTimeout(r, 10));
    victim.proc.removeAllListeners("exit");
    victim.proc.kill(signal);
    const at = Date.now();
    let deliveries = Number.NaN;
    let connection = Number.NaN;
    while (Date.now() - at < 30_000 && (Number.isNaN(deliveries) || Number.isNaN(connection))) {
      if (Number.isNaN(deliveries) && runIds.every((id) => platform.messages.has(`reply:${id}`))) {
        deliveries = Date.now() - at;
      }
      if (Number.isNaN(connection) && platform.connections.some((c) => c.event === "start" && c.at >= at)) {
        connection = Date.now() - at;
      }
      await new Promise((r) => setTimeout(r, 10));
    }
    await client.close();
    return { deliveries, connection };
  } finally {
    for (const node of nodes) {
      node.proc.removeAllListeners("exit");
      node.proc.kill("SIGKILL");
      node.proc.kill("SIGCONT");
    }
    await platform.close();
  }
}

// ------------------------------------------------------------------ list and history at size

async function readLatency(
  gateway: Gateway,
): Promise<{ list: number; listGroups: number; history: number; historySmall: number }> {
  return {
    list: await timeEach(SIZE.iterations, () => gateway.sessions.list({ limit: 200 })),
    listGroups: await timeEach(SIZE.iterations, () =>
      gateway.sessions.list({ limit: 200, kinds: ["group"] }),
    ),
    history: await timeEach(SIZE.iterations, () => gateway.chat.history({ sessionKey: BIG_KEY, limit: 50 })),
    historySmall: await timeEach(SIZE.iterations, () =>
      gateway.chat.history({ sessionKey: SMALL_KEY, limit: 50 }),
    ),
  };
}

async function onGateway<T>(store: SessionStore, work: (gateway: Gateway) => Promise<T>): Promise<T> {
  const gateway = createGateway({
    store,
    runner: createScriptedRunner({ agents: {}, fallback: () => "ok" }),
    cluster: false,
  });
  await gateway.ready;
  try {
    return await work(gateway);
  } finally {
    await gateway.close({ drainMs: 100 });
  }
}

// ------------------------------------------------------------------ main

const shape: SeedShape = { sessions: SIZE.sessions, big: SIZE.big, small: SIZE.small };
say(
  `# @sessions/store-postgres bench (${small ? "BENCH_SCALE=small" : "full size"}), ${new Date().toISOString()}`,
);
const pg = await startLocalPostgres({ durable: true, statements: true });
const dir = mkdtempSync(join(tmpdir(), "sessions-pg-bench-"));
try {
  const url = await pg.createDatabase("sessions_bench");
  for (const method of ["agent", "chat"] as const) {
    say(
      `\n## What a run costs the database (${method === "agent" ? "agent" : "chat.send"} + agent.wait, one gateway, 64 sessions)`,
    );
    printStatementCost(
      await statementCost(url, { runs: SIZE.runs, sessions: 64, method, schema: schema("statements") }),
      say,
    );
  }
  say(`\n## Scripted runs/s (agent + agent.wait, 64 sessions per gateway, ${SIZE.runs} runs per gateway)`);
  for (const n of [1, 2, 3])
    say(`- ${n} gateway${n > 1 ? "s" : ""}: ${(await runsPerSecond(url, n)).toFixed(0)} runs/s`);

  say("\n## Failover (3 gateways, lease 3,000 ms, recovery every 1,000 ms; 5 replies claimed by the victim)");
  for (const signal of ["SIGKILL", "SIGSTOP"] as const) {
    const result = await failover(url, signal);
    say(
      `- ${signal === "SIGKILL" ? "kill -9 (pid seen dead on this host)" : "SIGSTOP (frozen: only its lease tells, as for another host)"}: ` +
        `replies re-sent after ${result.deliveries} ms, bot connection taken over after ${result.connection} ms`,
    );
  }

  say(
    `\n## Reads at ${shape.sessions.toLocaleString("en")} sessions, a ${shape.big.toLocaleString("en")}-message transcript (p50, ms)`,
  );
  const pgSchema = schema("reads");
  const pgStore = await createPostgresStore({ connectionString: url, schema: pgSchema });
  let started = performance.now();
  await seedPostgres(url, pgSchema, shape, Date.now());
  say(`(Postgres seeded in ${((performance.now() - started) / 1000).toFixed(1)} s)`);
  const onPostgres = await onGateway(pgStore, readLatency);
  const sqliteStore = createSqliteStore({ path: join(dir, "reads.db") });
  started = performance.now();
  await seedThroughStore(sqliteStore, shape, Date.now());
  say(`(SQLite seeded in ${((performance.now() - started) / 1000).toFixed(1)} s)`);
  const onSqlite = await onGateway(sqliteStore, readLatency);
  say("| read | Postgres | SQLite |");
  say("| --- | --- | --- |");
  const row = (label: string, key: keyof typeof onPostgres) =>
    say(`| ${label} | ${onPostgres[key].toFixed(2)} | ${onSqlite[key].toFixed(2)} |`);
  row("sessions.list limit 200", "list");
  row("sessions.list limit 200, kinds [group]", "listGroups");
  row(`chat.history limit 50, ${shape.big.toLocaleString("en")} messages`, "history");
  row(`chat.history limit 50, ${shape.small.toLocaleString("en")} messages`, "historySmall");
} finally {
  await pg.stop();
  rmSync(dir, { recursive: true, force: true });
}
