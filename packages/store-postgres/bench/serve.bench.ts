/**
 * Postgres through the shipped path (issue #31): real `sessions-gateway serve --store postgres://…` processes (1, 2
 * and 3 of them on one database) driven over the wire by `@sessions/gateway-client`, beside graphile-worker on the
 * same Postgres in the same run, in two shapes:
 * - serial: 500 sessions, one run in flight in each (`chat.send`, then `agent.wait` on its run id, then the next);
 *   graphile-worker: 500 producers each adding a job and waiting for its task before adding the next.
 * - backlog: 4,000 runs sent at once over 200 sessions (20 queued in each), then all waited for; graphile-worker:
 *   4,000 jobs added at once over 200 named queues (one job at a time per queue), until all ran.
 * graphile-worker with its local queue and one gateway are measured in turns, three rounds each (`BENCH_ROUNDS`), and
 * their rows are each one's median round (every round's runs/s in brackets): the VM's speed drifts too much between
 * minutes for one row each to compare them.
 * Per row: runs (jobs) per second and, per run, statements, transactions and Postgres CPU; and what the side costs
 * the database at rest, per second (see serve-measure.ts). Each row has a schema of its own, dropped when the row
 * ends, and is measured once no autovacuum worker runs: no row pays for cleaning up after an earlier one.
 *
 * `pnpm --filter @sessions/store-postgres bench` runs this, then the in-process bench (postgres.bench.ts).
 * `BENCH_SCALE=small`: a quick version. `BENCH_GATEWAYS=1` and `BENCH_ONLY=ours`: fewer rows (to profile one gateway:
 * `SERVE_NODE_OPTIONS="--cpu-prof --cpu-prof-dir=<dir>"`). `BENCH_SMOKE=1` (in `bench:smoke`): a few hundred runs, 20 in flight, to
 * check that it runs. graphile-worker runs on the Node 22 that graphile-node.ts finds; without one its rows say "not
 * measured" and the rest runs. The Postgres here runs with fsync off (unlike the in-process bench's).
 */
import type { ChildProcess } from "node:child_process";
import { availableParallelism } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { SMOKE } from "../../gateway/bench/kit.js";
import { startLocalPostgres } from "../src/testing/local-postgres.js";
import { perUnit } from "./db-cost.js";
import { graphileNode, nodeVersion } from "./graphile-node.js";
import { connectDriver, driveBacklog, driveSerial, type LoadSpec } from "./serve-drive.js";
import {
  asStatementCost,
  dropSchema,
  measureRow,
  type RowResult,
  type StatementCount,
} from "./serve-measure.js";
import {
  type BenchChild,
  killAll,
  logSummary,
  type ServeProcess,
  startChild,
  startServe,
  stopChild,
} from "./serve-processes.js";
import { printStatementCost } from "./statements.js";

const here = dirname(fileURLToPath(import.meta.url));
const small = process.env.BENCH_SCALE === "small";
type Shape = "serial" | "backlog";
// warmup: runs (jobs) of the shape measured, before it, for both sides: the processes' code compiled and their heaps
// grown to the load (a 4,000-run backlog arriving at once; the first cost a gateway half as much CPU again as the next,
// seen in rounds of one loop). idleMs: the side watched at rest; long enough to see lease renewals (every 5 s: a third
// of the default 15 s lease).
const SIZE = SMOKE
  ? {
      serial: { sessions: 20, runs: 300, warmup: 40 },
      backlog: { sessions: 20, runs: 200, warmup: 40 },
      idleMs: 500,
    }
  : small
    ? {
        serial: { sessions: 500, runs: 2_000, warmup: 1_000 },
        backlog: { sessions: 100, runs: 2_000, warmup: 2_000 },
        idleMs: 5_000,
      }
    : {
        serial: { sessions: 500, runs: 10_000, warmup: 2_000 },
        backlog: { sessions: 200, runs: 4_000, warmup: 4_000 },
        idleMs: 10_000,
      };
/** `BENCH_GATEWAYS=1` (a comma list): the gateway rows to measure; `BENCH_ONLY=ours`: no graphile-worker rows. */
const GATEWAY_COUNTS = (process.env.BENCH_GATEWAYS ?? "1,2,3").split(",").map(Number);
const ONLY_OURS = process.env.BENCH_ONLY === "ours";
/** `BENCH_ROUNDS`: how many times graphile-worker with its local queue and one gateway are measured, in turns. */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? (SMOKE ? 1 : 3));
/** graphile-worker's settings of the issue: 24 jobs at once, completions not delayed, a local queue of 500. */
const CONCURRENCY = 24;
const LOCAL_QUEUE = 500;
const POLL_MS = 100;

const say = (line: string) => process.stdout.write(`${line}\n`);
const children = new Set<ChildProcess>();
/** Every child this run started, for each row's log summary. */
const started: BenchChild[] = [];
let schemas = 0;
const schema = (name: string) => `serve_${name}_${process.pid}_${++schemas}`;

interface Row {
  label: string;
  /** Ours (runs) or graphile-worker's (jobs). */
  ours: boolean;
  result: RowResult | { error: string };
  /** Ours: calls the gateways refused as retryable during the load (and the client made again), by message. */
  retries?: Map<string, number> | undefined;
  /** ERROR lines Postgres logged while the row ran (warm-up included). */
  serverErrors: string[];
  /** What the row's processes logged (serve: warnings and errors). */
  logged: { count: number; line: string }[];
  /** Measured in rounds: each round's runs (jobs) per second; the row is the median round. */
  rounds?: number[] | undefined;
}

/** The round with the median throughput (its other figures with it), knowing every round's; a failed one first. */
function medianRound(rounds: readonly Row[]): Row {
  const failed = rounds.find((row) => "error" in row.result);
  if (failed !== undefined || rounds.length === 1) return failed ?? (rounds[0] as Row);
  const rate = (row: Row) => perSecond(row.result as RowResult);
  const sorted = [...rounds].sort((a, b) => rate(a) - rate(b));
  return { ...(sorted[Math.floor((sorted.length - 1) / 2)] as Row), rounds: sorted.map(rate) };
}

/** `n` gateways on a fresh schema, warmed up (every session created), then measured. */
async function gatewaysRow(
  url: string,
  shape: Shape,
  n: number,
): Promise<{ result: RowResult; retries: Map<string, number> }> {
  const name = schema(`${shape}_${n}`);
  const gateways: ServeProcess[] = [];
  const stopGateways = () => Promise.all(gateways.map((gateway) => stopChild(gateway)));
  try {
    // One after the other: the first creates the schema (with the store code serve ships, its dist).
    for (let i = 0; i < n; i++) {
      const gateway = await startServe(children, `gateway ${i + 1}`, url, name);
      gateways.push(gateway);
      started.push(gateway);
    }
    const driver = await connectDriver(gateways.map((gateway) => gateway.url));
    let closed = false;
    const closeDriver = async () => {
      if (!closed) await driver.close();
      closed = true;
    };
    try {
      const { sessions, runs, warmup } = SIZE[shape];
      // The warm-up takes the shape measured, as graphile-worker's does: every session created, its code paths warm.
      await (shape === "serial" ? driveSerial : driveBacklog)(driver, {
        sessions,
        runs: Math.max(warmup, sessions),
        sessionPrefix: "s",
        keyPrefix: "w",
      });
      const load: LoadSpec = { sessions, runs, sessionPrefix: "s", keyPrefix: "r" };
      driver.retries.clear();
      const result = await measureRow(
        url,
        {
          pids: gateways.map((gateway) => gateway.proc.pid as number),
          async run() {
            const at = performance.now();
            await (shape === "serial" ? driveSerial : driveBacklog)(driver, load);
            return { units: runs, ms: performance.now() - at };
          },
          async stop() {
            await closeDriver();
            await stopGateways();
          },
        },
        SIZE.idleMs,
      );
      return { result, retries: driver.retries };
    } finally {
      await closeDriver();
    }
  } finally {
    await stopGateways();
    await dropSchema(url, name);
  }
}

/** graphile-worker (bench/graphile.mjs) on a fresh schema, in the same shape, measured the same way. */
async function graphileRow(url: string, node: string, shape: Shape, localQueue: boolean): Promise<RowResult> {
  const { sessions, runs, warmup } = SIZE[shape];
  const name = schema(`graphile_${shape}`);
  const child = await startChild(
    children,
    "graphile-worker",
    [node, join(here, "graphile.mjs")],
    {
      DATABASE_URL: url,
      SCHEMA: name,
      SHAPE: shape,
      JOBS: String(runs),
      WARMUP: String(warmup),
      IN_FLIGHT: String(sessions),
      QUEUES: String(sessions),
      CONCURRENCY: String(CONCURRENCY),
      POLL_MS: String(POLL_MS),
      NO_LOG_SUCCESS: "1",
      ...(localQueue ? { LOCAL_QUEUE: String(LOCAL_QUEUE) } : {}),
    },
    /ready/,
  );
  started.push(child);
  try {
    return await measureRow(
      url,
      {
        pids: [child.proc.pid as number],
        async run() {
          const result = new Promise<{ jobs: number; ms: number; cpuMs: number }>((resolve, reject) => {
            const read = () => {
              const match = /(\{"jobs".*\})/.exec(child.stdout.join(""));
              if (match)
                resolve(JSON.parse(match[1] as string) as { jobs: number; ms: number; cpuMs: number });
            };
            child.proc.stdout?.on("data", read);
            child.proc.once("exit", (code) =>
              reject(
                new Error(`graphile-worker exited (${code}) before its result: ${child.stderr.join("\n")}`),
              ),
            );
          });
          child.proc.stdin?.write("go\n");
          const { jobs, ms, cpuMs } = await result;
          // Its own reading: it exits right after printing it, before /proc could be read.
          return { units: jobs, ms, processCpuMs: cpuMs };
        },
        // It stops its worker and exits once it printed its result (stopChild is for one that hangs).
        stop: () =>
          Promise.race([child.exited, new Promise((r) => setTimeout(r, 15_000).unref())]).then(() =>
            stopChild(child),
          ),
      },
      SIZE.idleMs,
    );
  } finally {
    await stopChild(child);
    await dropSchema(url, name);
  }
}

const fixed = (n: number | undefined, digits: number) => (n === undefined ? "n/a" : n.toFixed(digits));
const perSecond = (row: RowResult) => (row.units / row.ms) * 1000;

function printTable(rows: Row[]): void {
  const measured = rows
    .filter((row) => !row.ours && !("error" in row.result))
    .map((row) => row.result as RowResult);
  const best = measured.length === 0 ? undefined : Math.max(...measured.map(perSecond));
  say(
    "| | runs (jobs)/s | × graphile-worker's best | statements/run | … less idle background | transactions/run | " +
      "Postgres CPU ms/run | gateways' (graphile-worker's) CPU ms/run | client CPU ms/run | " +
      "at rest: statements/s | at rest: Postgres CPU ms/s |",
  );
  say("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
  for (const row of rows) {
    if ("error" in row.result) {
      say(`| ${row.label} | not measured (${row.result.error.replaceAll("|", "\\|").slice(0, 300)}) |`);
      continue;
    }
    const r = row.result;
    const background = (r.idle.statements * r.ms) / 1000;
    const rounds =
      row.rounds === undefined ? "" : ` (${row.rounds.map((rate) => rate.toFixed(0)).join(", ")})`;
    say(
      `| ${row.label} | ${perSecond(r).toFixed(0)}${rounds} | ${best === undefined ? "—" : (perSecond(r) / best).toFixed(2)} | ` +
        `${perUnit(r.db.statements, r.units)} | ${perUnit(r.db.statements - background, r.units)} | ` +
        `${perUnit(r.db.transactions, r.units)} | ${perUnit(r.db.cpuMs, r.units, 3)} | ` +
        `${perUnit(r.processCpuMs, r.units, 3)} | ${row.ours ? perUnit(r.clientCpuMs, r.units, 3) : "—"} | ` +
        `${r.idle.statements.toFixed(1)} | ${fixed(r.idle.cpuMs, 1)} |`,
    );
  }
}

function printTop(title: string, statements: StatementCount[], per: number, unit: string): void {
  say(`\n${title}\n\n| per ${unit} | statement |\n| ---: | --- |`);
  for (const row of statements.slice(0, 15)) {
    say(`| ${(row.calls / per).toFixed(2)} | \`${row.query.replaceAll("|", "\\|")}\` |`);
  }
}

/** Postgres' ERROR messages logged since line `from` of its log (numbers in them as N). */
const errorsSince = (from: number): string[] =>
  serverLog
    .slice(from)
    .map((line) => /ERROR:\s+(.*)$/.exec(line)?.[1]?.replace(/\d+/g, "N"))
    .filter((error): error is string => error !== undefined);

/** Postgres' ERROR lines, counted by message, each with the first statement it named. */
function printServerErrors(lines: readonly string[]): void {
  const errors = new Map<string, { count: number; statement?: string | undefined }>();
  let last: string | undefined;
  for (const line of lines) {
    const error = /ERROR:\s+(.*)$/.exec(line);
    const statement = /STATEMENT:\s+(.*)$/.exec(line);
    if (error) {
      last = (error[1] as string).replace(/\d+/g, "N");
      const seen = errors.get(last) ?? { count: 0 };
      errors.set(last, { ...seen, count: seen.count + 1 });
    } else if (statement && last !== undefined) {
      const seen = errors.get(last);
      if (seen !== undefined && seen.statement === undefined)
        seen.statement = (statement[1] as string).slice(0, 200);
      last = undefined;
    }
  }
  say(`\n## Postgres' errors${errors.size === 0 ? ": none" : ""}`);
  for (const [message, { count, statement }] of errors) {
    say(`- ${count}× \`${message}\`${statement === undefined ? "" : ` in \`${statement}\``}`);
  }
}

// ------------------------------------------------------------------ main

say(
  `# @sessions/store-postgres: Postgres through \`sessions-gateway serve\`, over the wire (${SMOKE ? "BENCH_SMOKE=1: a smoke run, its figures mean nothing" : small ? "BENCH_SCALE=small" : "full size"}), ${new Date().toISOString()}`,
);
const external = process.env.SESSIONS_TEST_DATABASE_URL || process.env.DATABASE_URL;
say(
  (external
    ? "\nPostgres: the server named by SESSIONS_TEST_DATABASE_URL / DATABASE_URL, with its own settings (this bench " +
      "wants fsync off; its CPU is read only if it runs on this host). "
    : "\nPostgres (embedded, this machine) runs with **fsync off** (and synchronous_commit off, full_page_writes " +
      "off) for this bench: what is measured is the work, not the disk. ") +
    "Everything — Postgres, the gateways, graphile-worker, the client — shares this machine's CPUs " +
    `(${availableParallelism()}), so the 2- and 3-gateway rows show what the database and the CPUs allow, not more ` +
    "boxes.",
);
say(
  `\nOurs: \`sessions-gateway serve --store postgres://…?schema=…\` processes (Node ${process.versions.node}, cluster ` +
    "mode, a pool of 10 connections each, a runner that answers `ok` at once); a run is `chat.send` then `agent.wait` " +
    "on its run id over `@sessions/gateway-client` (4 WebSocket connections per gateway, in this process), sends " +
    "round-robin over the gateways' connections so each session's runs are spread over every gateway; every session " +
    `is created by a warm-up in the shape measured first (${SIZE.serial.warmup.toLocaleString("en")} runs serial, ` +
    `${SIZE.backlog.warmup.toLocaleString("en")} backlog). graphile-worker 0.18: concurrency ${CONCURRENCY}, ` +
    `completeJobBatchDelay 0, poll ${POLL_MS} ms, LISTEN/NOTIFY, a no-op task, each \`addJob()\` its own call, ` +
    `as many jobs in the same shape to warm up; "localQueue" rows: localQueue size ${LOCAL_QUEUE}. ` +
    `graphile-worker with localQueue and one gateway are measured in turns, ${ROUNDS} round${ROUNDS > 1 ? "s" : ""} each: ` +
    "their rows are each one's median round, every round's runs/s in brackets.",
);
say(
  "\nPer run: statements are top-level pg_stat_statements calls, transactions pg_stat_database commits and " +
    "rollbacks, Postgres CPU the time of all the server's processes (/proc), over the load's window: background work " +
    'included. "Less idle background" takes off the at-rest rate times the window. At rest: the side started and ' +
    `warmed up, nothing asked of it, ${SIZE.idleMs / 1000} s (lease renewals, recovery, change feed; graphile-worker's ` +
    "polls); transactions at rest are not shown (pg_stat_database gets them up to 10 s late). Client CPU: this process " +
    "(the gateway client) over the load.",
);

let node22: string | undefined;
let noGraphile: string | undefined;
try {
  node22 = graphileNode();
  say(`\ngraphile-worker runs on Node ${nodeVersion(node22)} (${node22}).`);
} catch (error) {
  noGraphile = error instanceof Error ? error.message : String(error);
}

/** The server's log: its errors (deadlocks…) are reported at the end. */
const serverLog: string[] = [];
const pg = await startLocalPostgres({
  durable: false,
  statements: true,
  log: (chunk) => serverLog.push(...chunk.split("\n")),
});
try {
  const url = await pg.createDatabase("serve_bench");
  for (const shape of ["serial", "backlog"] as const) {
    const { sessions, runs } = SIZE[shape];
    say(
      shape === "serial"
        ? `\n## serial: ${sessions} sessions, one run in flight in each, ${runs.toLocaleString("en")} runs (jobs: ${sessions} producers, one job each in flight)`
        : `\n## backlog: ${runs.toLocaleString("en")} runs sent at once over ${sessions} sessions (${runs / sessions} each), then all waited for (jobs: over ${sessions} named queues)`,
    );
    const graphile = async (localQueue: boolean): Promise<Row> => {
      const label = localQueue ? `graphile-worker, localQueue ${LOCAL_QUEUE}` : "graphile-worker";
      const from = serverLog.length;
      const first = started.length;
      let result: RowResult | { error: string };
      try {
        if (node22 === undefined) throw new Error(noGraphile);
        result = await graphileRow(url, node22, shape, localQueue);
      } catch (error) {
        result = { error: error instanceof Error ? error.message : String(error) };
      }
      const logged = logSummary(started.slice(first));
      return { label, ours: false, result, serverErrors: errorsSince(from), logged };
    };
    const ours = async (n: number): Promise<Row> => {
      const from = serverLog.length;
      const first = started.length;
      const { result, retries } = await gatewaysRow(url, shape, n);
      const label = `ours, ${n} gateway${n > 1 ? "s" : ""}`;
      const logged = logSummary(started.slice(first));
      return { label, ours: true, result, retries, serverErrors: errorsSince(from), logged };
    };
    // The head-to-head rows (graphile-worker with its local queue, one gateway) in turns, ROUNDS times each: this
    // VM's speed drifts by half from one minute to the next, and rows measured in turn drift together.
    const turns: { graphile: Row[]; ours: Row[] } = { graphile: [], ours: [] };
    for (let round = 0; round < ROUNDS; round++) {
      if (!ONLY_OURS) turns.graphile.push(await graphile(true));
      if (GATEWAY_COUNTS.includes(1)) turns.ours.push(await ours(1));
    }
    const rows: Row[] = [];
    if (!ONLY_OURS) rows.push(await graphile(false), medianRound(turns.graphile));
    const one = turns.ours.length === 0 ? undefined : medianRound(turns.ours);
    for (const n of GATEWAY_COUNTS) rows.push(n === 1 && one !== undefined ? one : await ours(n));
    const oneGateway = one === undefined || "error" in one.result ? undefined : one.result;
    printTable(rows);
    for (const row of rows) {
      const errors = new Map<string, number>();
      for (const error of row.serverErrors) errors.set(error, (errors.get(error) ?? 0) + 1);
      for (const [error, count] of errors) say(`- ${row.label}: Postgres logged ${count}× \`${error}\``);
      for (const [reason, count] of row.retries ?? []) {
        say(`- ${row.label}: ${count} calls refused as retryable and made again: \`${reason}\``);
      }
      for (const { count, line } of row.logged.slice(0, 6))
        say(`- ${row.label}: logged ${count}× \`${line}\``);
    }
    if (shape === "backlog" && oneGateway !== undefined) {
      say("\n### What a run costs, backlog, 1 gateway (the load's window, background included)\n");
      printStatementCost(asStatementCost(oneGateway), say);
      printTop(
        `### At rest, 1 gateway: the background statements (${(oneGateway.idle.ms / 1000).toFixed(1)} s)`,
        oneGateway.idle.top,
        oneGateway.idle.ms / 1000,
        "second",
      );
    }
  }
  printServerErrors(serverLog);
} finally {
  await killAll(children);
  await pg.stop();
}
