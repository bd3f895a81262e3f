/**
 * What one run costs the database: statements and transactions per scripted run, from `pg_stat_statements`, and
 * the CPU time of the Postgres server's processes (from `/proc`, see db-cost.ts), on one gateway in process
 * (agent or chat.send, then agent.wait, SESSIONS sessions at a time, after one warm-up run per session). A row of
 * `postgres.bench.ts`; alone: `npx tsx bench/statements.ts` (RUNS, SESSIONS, METHOD=agent|chat).
 */
import { pathToFileURL } from "node:url";
import { createGateway, createScriptedRunner } from "@sessions/gateway";
import pg from "pg";
import { createPostgresStore } from "../src/index.js";
import { startLocalPostgres } from "../src/testing/local-postgres.js";
import { openDbProbe, settle } from "./db-cost.js";

export interface StatementCost {
  runs: number;
  runsPerSecond: number;
  statementsPerRun: number;
  /** Commits and rollbacks per run (a statement outside BEGIN … COMMIT is a transaction of its own). */
  transactionsPerRun: number;
  /** Transactions that wrote per run (transaction ids assigned), background work included. */
  writeTransactionsPerRun: number;
  /** CPU ms of the Postgres server's processes per run (undefined when /proc does not show the server). */
  databaseCpuMsPerRun: number | undefined;
  /** CPU ms of this process (the gateway, its runner and its Postgres client) per run. */
  gatewayCpuMsPerRun: number;
  /** `pg_notify` statements per run: changes to the other gateways and run events streamed to them. */
  notifiesPerRun: number;
  /** The most frequent statements: calls per run and the normalised text. */
  top: { perRun: number; query: string }[];
}

/** Runs the load on a fresh schema of `url` (whose server preloads pg_stat_statements) and counts. */
export async function statementCost(
  url: string,
  options: {
    runs: number;
    sessions: number;
    method: "agent" | "chat";
    schema: string;
    /** Text deltas each run streams (one per turn of the event loop, as a model's tokens arrive). */
    deltas?: number | undefined;
  },
): Promise<StatementCost> {
  const { runs, sessions, method } = options;
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  const probe = await openDbProbe(url);
  const store = await createPostgresStore({ connectionString: url, schema: options.schema });
  const gateway = createGateway({
    store,
    runner: createScriptedRunner({
      agents: {},
      fallback: async (turn) => {
        for (let i = 0; i < (options.deltas ?? 0); i++) {
          turn.say(`${i} `);
          await new Promise((resolve) => setImmediate(resolve));
        }
        return `echo: ${turn.text}`;
      },
    }),
  });
  let closed = false;
  try {
    await admin.query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
    await gateway.ready;
    const one = async (i: number, s: number) => {
      const params = { sessionKey: `s-${s}`, message: `m${i}`, idempotencyKey: `${options.schema}-${i}` };
      const { runId } = method === "chat" ? await gateway.chat.send(params) : await gateway.agent(params);
      const done = await gateway.agentWait({ runId, timeoutMs: 60_000 });
      if (done.status !== "ok") throw new Error(`run ${runId} ended ${done.status}: ${done.error}`);
    };
    // Warm up: every session exists and has run once.
    await Promise.all(Array.from({ length: sessions }, (_, s) => one(-1 - s, s)));
    // Until the warm-up's transactions have reached pg_stat_database (idle backends send them after 10 s).
    await settle();
    const transactions = async () =>
      Number(
        (
          await admin.query<{ n: string }>(
            "SELECT xact_commit + xact_rollback AS n FROM pg_stat_database WHERE datname = current_database()",
          )
        ).rows[0]?.n,
      );
    await admin.query("SELECT pg_stat_statements_reset()");
    await admin.query("SELECT pg_stat_clear_snapshot()");
    const xid = async () =>
      Number((await admin.query<{ x: string }>("SELECT pg_current_xact_id()::text AS x")).rows[0]?.x);
    const before = await transactions();
    const xidBefore = await xid();
    let next = 0;
    const cpuBefore = await probe.cpuMs();
    const started = performance.now();
    const gatewayCpu = process.cpuUsage();
    await Promise.all(
      Array.from({ length: sessions }, async (_, s) => {
        for (let i = next++; i < runs; i = next++) await one(i, s);
      }),
    );
    const ms = performance.now() - started;
    const gatewayCpuUsed = process.cpuUsage(gatewayCpu);
    const cpuAfter = await probe.cpuMs();
    // Its backends send their last statistics as they exit (plus a second for them to land).
    await gateway.close({ drainMs: 1000 });
    closed = true;
    await settle(1100);
    await admin.query("SELECT pg_stat_clear_snapshot()");
    const after = await transactions();
    const xidAfter = await xid();
    const { rows } = await admin.query<{ query: string; calls: string }>(
      `SELECT query, calls FROM pg_stat_statements
        WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
          AND query NOT LIKE '%pg_stat%' AND query NOT LIKE '%pg_database%'
        ORDER BY calls DESC`,
    );
    const total = rows.reduce((sum, row) => sum + Number(row.calls), 0);
    return {
      runs,
      runsPerSecond: (runs / ms) * 1000,
      statementsPerRun: total / runs,
      transactionsPerRun: (after - before) / runs,
      // Less the one this measurement's own call takes.
      writeTransactionsPerRun: (xidAfter - xidBefore - 1) / runs,
      databaseCpuMsPerRun:
        cpuBefore === undefined || cpuAfter === undefined ? undefined : (cpuAfter - cpuBefore) / runs,
      gatewayCpuMsPerRun: (gatewayCpuUsed.user + gatewayCpuUsed.system) / 1000 / runs,
      notifiesPerRun:
        rows
          .filter((row) => row.query.includes("pg_notify"))
          .reduce((sum, row) => sum + Number(row.calls), 0) / runs,
      top: rows.slice(0, 24).map((row) => ({
        perRun: Number(row.calls) / runs,
        query: row.query.replace(/\s+/g, " ").slice(0, 160),
      })),
    };
  } finally {
    if (!closed) await gateway.close({ drainMs: 1000 });
    await admin.end();
    await probe.close();
  }
}

export function printStatementCost(cost: StatementCost, say: (line: string) => void): void {
  say(
    `${cost.runs} runs, ${cost.runsPerSecond.toFixed(0)} runs/s: **${cost.statementsPerRun.toFixed(2)} statements** and ` +
      `**${cost.transactionsPerRun.toFixed(2)} transactions** (${cost.writeTransactionsPerRun.toFixed(2)} that wrote) per run; ` +
      `CPU per run: **${cost.databaseCpuMsPerRun === undefined ? "n/a" : cost.databaseCpuMsPerRun.toFixed(3)} ms in Postgres** ` +
      `(all its processes), ${cost.gatewayCpuMsPerRun.toFixed(3)} ms in the gateway's process; ` +
      `${cost.notifiesPerRun.toFixed(2)} of the statements are NOTIFYs`,
  );
  say("\n| per run | statement |\n| ---: | --- |");
  for (const row of cost.top) say(`| ${row.perRun.toFixed(2)} | \`${row.query.replaceAll("|", "\\|")}\` |`);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const postgres = await startLocalPostgres({ statements: true });
  try {
    const cost = await statementCost(await postgres.createDatabase("statements"), {
      runs: Number(process.env.RUNS ?? 2000),
      sessions: Number(process.env.SESSIONS ?? 64),
      method: process.env.METHOD === "chat" ? "chat" : "agent",
      schema: "bench_statements",
      deltas: Number(process.env.DELTAS ?? 0),
    });
    printStatementCost(cost, (line) => process.stdout.write(`${line}\n`));
  } finally {
    await postgres.stop();
  }
}
