/**
 * The in-process bench: several gateways on one Postgres, each driven by calls in its own process (no WebSocket),
 * measured on this machine. `pnpm --filter @sessions/store-postgres bench` runs it after serve.bench.ts (real
 * `sessions-gateway serve` processes driven over the wire); alone: `npx tsx bench/postgres.bench.ts`.
 * `BENCH_SCALE=small` runs a quick version (the full one seeds 100,000 sessions and a 1,000,000-message
 * transcript, and takes minutes). Everything — Postgres, the gateways, the load — shares
 * the machine's cores, so the 2- and 3-gateway rows show what the database and the CPUs allow, not more boxes.
 * The Postgres here keeps its crash safety (fsync on), as the SQLite store does.
 *
 * Beside the gateways, graphile-worker (a devDependency, 0.18, Node >= 22.18) on the same Postgres in the same run,
 * end to end (bench/graphile.mjs), run with the Node 22 that bench/graphile-node.ts finds (GRAPHILE_NODE, else the
 * `node` npm package of apps/interop-openclaw). Without a Node 22 the graphile-worker rows say "not measured" and
 * the rest runs.
 *
 * `BENCH_SMOKE=1` (`pnpm bench:smoke`, in CI): every section at its smallest (a few hundred runs and jobs, 20 in
 * flight, 200 sessions, a 2,000-message transcript, no wait for Postgres' statistics), to check the bench runs.
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
import { SMOKE } from "../../gateway/bench/kit.js";
import { createPostgresStore } from "../src/index.js";
import { startFakePlatform } from "../src/testing/fake-platform.js";
import { startLocalPostgres } from "../src/testing/local-postgres.js";
import { costBetween, type DbCost, openDbProbe, perUnit, settle } from "./db-cost.js";
import { graphileNode, nodeVersion } from "./graphile-node.js";
import { BIG_KEY, type SeedShape, SMALL_KEY, seedPostgres, seedThroughStore } from "./seed.js";
import { printStatementCost, statementCost } from "./statements.js";

const here = dirname(fileURLToPath(import.meta.url));
const small = process.env.BENCH_SCALE === "small";
const SIZE = SMOKE
  ? { sessions: 200, big: 2_000, small: 200, runs: 50, iterations: 10, jobs: 200, warmup: 20 }
  : small
    ? { sessions: 2_000, big: 20_000, small: 1_000, runs: 300, iterations: 50, jobs: 3_000, warmup: 500 }
    : {
        sessions: 100_000,
        big: 1_000_000,
        small: 1_000,
        runs: 3_000,
        iterations: 300,
        jobs: 10_000,
        warmup: 500,
      };
/** Runs (or jobs) in flight at once, on both sides of the comparison. */
const IN_FLIGHT = SMOKE ? 20 : 500;
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
  command: string[] = [process.execPath, "--import", "tsx"],
): Promise<{ proc: ChildProcess; out: string[] }> {
  return new Promise((resolve, reject) => {
    const out: string[] = [];
    const [exec, ...args] = command as [string, ...string[]];
    const proc = spawn(exec, [...args, script], {
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

// ------------------------------------------------------------------ runs/s with 1, 2, 3 gateways, and graphile-worker

/** What a throughput row measured: units (runs or jobs) done, wall time, and what they cost. */
interface Throughput {
  units: number;
  ms: number;
  /** CPU ms of the load's own processes (gateways, or graphile-worker's process). */
  processCpuMs: number;
  /** What the window cost the database (its CPU, statements, transactions). */
  db: DbCost;
}

/**
 * Starts the load in children that printed `ready` (a line on stdin), reads their `{"<unit>":…,"ms":…,"cpuMs":…}`
 * lines, and what the window cost the database: CPU read when the last child is done, counters once they exited.
 */
async function measureChildren(
  url: string,
  children: { proc: ChildProcess; out: string[] }[],
  unit: "runs" | "jobs",
): Promise<Throughput> {
  const probe = await openDbProbe(url);
  try {
    const pattern = new RegExp(`(\\{"${unit}".*\\})`);
    const results = children.map(
      ({ proc, out }) =>
        new Promise<{ units: number; ms: number; cpuMs: number }>((resolve, reject) => {
          proc.once("exit", (code) =>
            reject(new Error(`a child exited (${code}) before its result: ${out.join("")}`)),
          );
          proc.stdout?.on("data", () => {
            const match = pattern.exec(out.join(""));
            if (match) {
              const parsed = JSON.parse(match[1] as string) as Record<string, number>;
              resolve({ units: Number(parsed[unit]), ms: Number(parsed.ms), cpuMs: Number(parsed.cpuMs) });
            }
          });
        }),
    );
    const exited = children.map(({ proc }) => {
      return new Promise<void>((resolve) => {
        if (proc.exitCode !== null) resolve();
        else proc.once("exit", () => resolve());
      });
    });
    // What the children did while starting and warming up is not counted in the window.
    await settle();
    const before = await probe.snapshot();
    for (const { proc } of children) proc.stdin?.write("go\n");
    const done = await Promise.all(results);
    const cpuAfter = await probe.cpuMs();
    // Their backends flush at exit (plus a second for the last flush to land).
    await Promise.race([Promise.all(exited), new Promise((resolve) => setTimeout(resolve, 15_000))]);
    await settle(1100);
    const after = { ...(await probe.snapshot()), cpuMs: cpuAfter };
    return {
      units: done.reduce((sum, r) => sum + r.units, 0),
      ms: Math.max(...done.map((r) => r.ms)),
      processCpuMs: done.reduce((sum, r) => sum + r.cpuMs, 0),
      db: costBetween(before, after),
    };
  } finally {
    for (const { proc } of children) if (proc.exitCode === null) proc.kill("SIGKILL");
    await probe.close();
  }
}

async function runsPerSecond(url: string, gateways: number, node = process.execPath): Promise<Throughput> {
  const name = schema("runs");
  await (await createPostgresStore({ connectionString: url, schema: name })).close();
  const children = await Promise.all(
    Array.from({ length: gateways }, (_, i) =>
      child(
        join(here, "load-child.ts"),
        {
          DATABASE_URL: url,
          SCHEMA: name,
          // As many runs and as many in flight as graphile-worker's jobs and producers, shared by the gateways.
          RUNS: String(Math.ceil(SIZE.jobs / gateways)),
          SESSIONS: String(Math.round(IN_FLIGHT / gateways)),
          PREFIX: `g${i}`,
        },
        /ready/,
        [node, "--import", "tsx"],
      ),
    ),
  );
  return measureChildren(url, children, "runs");
}

/** graphile-worker end to end on a fresh schema of the same database: see bench/graphile.mjs. */
async function graphileJobsPerSecond(url: string, node: string): Promise<Throughput> {
  const proc = await child(
    join(here, "graphile.mjs"),
    {
      DATABASE_URL: url,
      SCHEMA: schema("graphile"),
      JOBS: String(SIZE.jobs),
      WARMUP: String(SIZE.warmup),
      IN_FLIGHT: String(IN_FLIGHT),
      CONCURRENCY: "24",
      POLL_MS: "100",
      NO_LOG_SUCCESS: "1",
    },
    /ready/,
    [node],
  );
  return measureChildren(url, [proc], "jobs");
}

const perSecond = (row: Throughput) => (row.units / row.ms) * 1000;
const costLine = (row: Throughput, unit: string, who: string) =>
  `per ${unit}: Postgres CPU ${perUnit(row.db.cpuMs, row.units, 3)} ms, ` +
  `${perUnit(row.db.statements, row.units)} statements, ${perUnit(row.db.transactions, row.units)} transactions; ` +
  `${who} CPU ${perUnit(row.processCpuMs, row.units, 3)} ms`;

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
  `# @sessions/store-postgres in-process bench (gateways called in their own process, no WebSocket; ${SMOKE ? "BENCH_SMOKE=1: a smoke run, its figures mean nothing" : small ? "BENCH_SCALE=small" : "full size"}), ${new Date().toISOString()}`,
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
  say(
    "\n## Streamed run events: the NOTIFYs that carry them to the other gateways (agent + agent.wait, one " +
      "gateway, 64 sessions; the runner streams 50 text deltas per run, one per turn of the event loop)",
  );
  printStatementCost(
    await statementCost(url, {
      runs: SIZE.runs,
      sessions: 64,
      method: "agent",
      schema: schema("stream"),
      deltas: 50,
    }),
    say,
  );
  say(
    `\n## In-process scripted runs/s (agent + agent.wait, ${IN_FLIGHT} sessions and ${SIZE.jobs} runs shared by the gateways)`,
  );
  say(
    "A run: in a gateway's own process (no WebSocket, no model), `gateway.agent()` (the message and the run " +
      "recorded, `run_start`), the scripted runner reading the transcript and echoing, its reply and the run's end " +
      "recorded (`run_end`), then `gateway.agentWait()` until it ended ok. Each gateway is a child process (a pool " +
      `of 10 connections) with ${IN_FLIGHT} / N sessions, each warmed up (created) by one run first, then one run at a ` +
      `time each: ${IN_FLIGHT} runs in flight in all, as graphile-worker's producers below. The clock runs from the ` +
      "first `agent()` to the last `agentWait()`.",
  );
  say(
    `A graphile-worker job (${SIZE.jobs} jobs, after ${SIZE.warmup} to warm up): one \`addJob()\` (a call of its ` +
      "`add_job` function, a transaction of its own, through a pool of 10), then the worker (concurrency 24, a pool " +
      "of 26, new jobs by LISTEN/NOTIFY, poll 100 ms, completions batched with completeJobBatchDelay 0, no local " +
      `queue) runs its no-op task and deletes the job. ${IN_FLIGHT} producers, each adding its next job once its last ` +
      `one's task ran: ${IN_FLIGHT} in flight. The clock stops when the last completion is committed. graphile-worker runs on ` +
      `Node 22, the gateways on Node ${process.versions.node} (and on Node 22 in the last row).`,
  );
  say(
    "Per run or job: Postgres CPU is the time of all the server's processes (backends and background ones) over " +
      "the window; statements are top level (pg_stat_statements), transactions are commits and rollbacks " +
      "(pg_stat_database); the process CPU is the gateways' own, or graphile-worker's (producers and worker).",
  );
  let graphile: Throughput | undefined;
  let node22: string | undefined;
  try {
    node22 = graphileNode();
    graphile = await graphileJobsPerSecond(url, node22);
    say(
      `- graphile-worker end to end: ${perSecond(graphile).toFixed(0)} jobs/s; ${costLine(graphile, "job", "graphile-worker's process")}`,
    );
  } catch (error) {
    say(
      `- graphile-worker end to end: not measured (${error instanceof Error ? error.message : String(error)})`,
    );
  }
  const versus = (row: Throughput) =>
    graphile === undefined
      ? ""
      : ` (**${(perSecond(row) / perSecond(graphile)).toFixed(2)}×** graphile-worker's jobs/s)`;
  for (const n of [1, 2, 3]) {
    const row = await runsPerSecond(url, n);
    say(
      `- ${n} gateway${n > 1 ? "s" : ""}: ${perSecond(row).toFixed(0)} runs/s${n === 1 ? versus(row) : ""}; ` +
        costLine(row, "run", n > 1 ? "gateways'" : "gateway's"),
    );
  }
  if (node22 !== undefined) {
    // The same row on graphile-worker's Node, to tell the runtime from the rest.
    const version = nodeVersion(node22);
    try {
      const row = await runsPerSecond(url, 1, node22);
      say(
        `- 1 gateway on Node ${version}: ${perSecond(row).toFixed(0)} runs/s${versus(row)}; ` +
          costLine(row, "run", "gateway's"),
      );
    } catch (error) {
      say(
        `- 1 gateway on Node ${version}: not measured (${error instanceof Error ? error.message : String(error)})`,
      );
    }
  }

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
