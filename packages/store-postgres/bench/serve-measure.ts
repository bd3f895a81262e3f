/**
 * One row of serve.bench.ts, measured: a few seconds of the side at rest (what it costs the database while nothing
 * is asked of it: lease renewals, recovery, the change feed, graphile-worker's polls), then the load, and what each
 * window cost Postgres (db-cost.ts: statements, transactions, the server's CPU) and the side's own processes.
 */
import pg from "pg";
import { SMOKE } from "../../gateway/bench/kit.js";
import { costBetween, type DbCost, type DbSnapshot, openDbProbe, serverCpuMs, settle } from "./db-cost.js";
import type { StatementCost } from "./statements.js";

/** What a row measures: a side already started and warmed up. */
export interface LoadSide {
  /** The processes whose CPU is the side's own (the gateways; graphile-worker's process). */
  pids: readonly number[];
  /**
   * Runs the measured load: the units (runs or jobs) done, the wall time it took, and the side's CPU time if it
   * read its own (else it is read from /proc).
   */
  run(): Promise<{ units: number; ms: number; processCpuMs?: number | undefined }>;
  /** Stops the side's processes; their backends send their last statistics as they exit. */
  stop(): Promise<void>;
}

/** A statement and how often it ran in a window. */
export interface StatementCount {
  calls: number;
  query: string;
}

export interface RowResult {
  units: number;
  ms: number;
  /** The load's window: statements and CPU to the end of the load, transactions to the side's exit. */
  db: DbCost;
  /** Transactions that wrote (transaction ids assigned) in the load's window. */
  writeTransactions: number;
  /** CPU ms of the side's processes over the load. */
  processCpuMs: number | undefined;
  /** CPU ms of this process (the wire client, for the gateways) over the load. */
  clientCpuMs: number;
  top: StatementCount[];
  /** The side at rest, before the load: per second. */
  idle: {
    ms: number;
    statements: number;
    cpuMs: number | undefined;
    top: StatementCount[];
  };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function processesCpuMs(pids: readonly number[]): Promise<number | undefined> {
  let sum = 0;
  for (const pid of pids) {
    const ms = await serverCpuMs(pid);
    if (ms === undefined) return undefined;
    sum += ms;
  }
  return sum;
}

/** Statements of this database since the last reset, most frequent first (as db-cost.ts counts them). */
async function statementCounts(admin: pg.Client): Promise<StatementCount[]> {
  const { rows } = await admin.query<{ query: string; calls: string }>(
    `SELECT query, calls FROM pg_stat_statements
      WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
        AND query NOT LIKE '%pg_stat%' AND query NOT LIKE '%pg_database%'
      ORDER BY calls DESC`,
  );
  return rows.map((row) => ({
    calls: Number(row.calls),
    query: row.query.replace(/\s+/g, " ").slice(0, 160),
  }));
}

const xid = async (admin: pg.Client) =>
  Number((await admin.query<{ x: string }>("SELECT pg_current_xact_id()::text AS x")).rows[0]?.x);

/**
 * Waits for the warm-up's statistics to land, watches the side at rest for `idleMs`, then runs the load; stops the
 * side (also when the load fails).
 */
export async function measureRow(url: string, side: LoadSide, idleMs: number): Promise<RowResult> {
  const probe = await openDbProbe(url);
  const admin = new pg.Client({ connectionString: url });
  let stopped = false;
  try {
    await admin.connect();
    // The warm-up's transactions reach pg_stat_database only once its backends flush (idle ones after 10 s).
    await settle();
    await untilAutovacuumIdle(admin);
    await admin.query("SELECT pg_stat_statements_reset()");
    const rest = await probe.snapshot();
    const restStarted = performance.now();
    await sleep(idleMs);
    const rested = await probe.snapshot();
    const restMs = performance.now() - restStarted;
    const idleTop = await statementCounts(admin);

    await admin.query("SELECT pg_stat_statements_reset()");
    const before = await probe.snapshot();
    const xidBefore = await xid(admin);
    const processBefore = await processesCpuMs(side.pids);
    const client = process.cpuUsage();
    const { units, ms, processCpuMs } = await side.run();
    const clientUsed = process.cpuUsage(client);
    const end = await probe.snapshot();
    const processEnd = await processesCpuMs(side.pids);
    const top = await statementCounts(admin);
    stopped = true;
    await side.stop();
    // Backends flush at exit; a second for the last flush to land.
    await settle(1100);
    const after: DbSnapshot = { ...(await probe.snapshot()), cpuMs: end.cpuMs, statements: end.statements };
    // Less the one the reading itself takes.
    const writeTransactions = (await xid(admin)) - xidBefore - 1;
    const idleCost = costBetween(rest, rested);
    return {
      units,
      ms,
      db: costBetween(before, after),
      writeTransactions,
      processCpuMs:
        processCpuMs ??
        (processBefore === undefined || processEnd === undefined ? undefined : processEnd - processBefore),
      clientCpuMs: (clientUsed.user + clientUsed.system) / 1000,
      top,
      idle: {
        ms: restMs,
        statements: (idleCost.statements * 1000) / restMs,
        cpuMs: idleCost.cpuMs === undefined ? undefined : (idleCost.cpuMs * 1000) / restMs,
        top: idleTop,
      },
    };
  } finally {
    if (!stopped) await side.stop();
    await admin.end().catch(() => undefined);
    await probe.close();
  }
}

/**
 * Waits (up to a minute) until no autovacuum worker runs: one cleaning up after an earlier row (its tables dropped,
 * or still being vacuumed) would count in this row's Postgres CPU.
 */
async function untilAutovacuumIdle(admin: pg.Client): Promise<void> {
  // A smoke run's figures are not read (as `settle`): it does not wait.
  if (SMOKE) return;
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    const { rows } = await admin.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM pg_stat_activity WHERE backend_type = 'autovacuum worker'",
    );
    if ((rows[0]?.n ?? 0) === 0) return;
    await sleep(500);
  }
}

/** Drops a row's schema once its processes stopped, so that no later row shares the database with its tables. */
export async function dropSchema(url: string, name: string): Promise<void> {
  const admin = new pg.Client({ connectionString: url });
  try {
    await admin.connect();
    await admin.query(`DROP SCHEMA IF EXISTS ${admin.escapeIdentifier(name)} CASCADE`);
  } finally {
    await admin.end().catch(() => undefined);
  }
}

/** A row in the shape of statements.ts' report, for its printer (`printStatementCost`). */
export function asStatementCost(row: RowResult): StatementCost {
  const per = (n: number | undefined) => (n === undefined ? undefined : n / row.units);
  return {
    runs: row.units,
    runsPerSecond: (row.units / row.ms) * 1000,
    statementsPerRun: row.db.statements / row.units,
    transactionsPerRun: row.db.transactions / row.units,
    writeTransactionsPerRun: row.writeTransactions / row.units,
    databaseCpuMsPerRun: per(row.db.cpuMs),
    gatewayCpuMsPerRun: per(row.processCpuMs) ?? Number.NaN,
    notifiesPerRun:
      row.top.filter((s) => s.query.includes("pg_notify")).reduce((sum, s) => sum + s.calls, 0) / row.units,
    top: row.top.slice(0, 24).map((s) => ({ perRun: s.calls / row.units, query: s.query })),
  };
}
