/**
 * What a measured window cost the database: statements (`pg_stat_statements`, top level), transactions
 * (`pg_stat_database`) and the CPU time of the Postgres server's processes, read from `/proc` (the postmaster, its
 * live children — backends, WAL writer, checkpointer… — and the children it has reaped, whose time the kernel adds
 * to the postmaster's `cutime`/`cstime`). The CPU part needs a server on this host that this user can read in
 * `/proc` (the embedded one of the bench is); for another server it is `undefined`.
 */
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import pg from "pg";
import { SMOKE } from "../../gateway/bench/kit.js";

export interface DbSnapshot {
  /** CPU time of the server's processes so far, in ms; undefined when `/proc` does not show the server. */
  cpuMs: number | undefined;
  /** Commits and rollbacks in this database so far. */
  transactions: number;
  /** Top-level statements of this database counted by `pg_stat_statements` (its own queries left out). */
  statements: number;
}

/**
 * A backend sends its statistics to `pg_stat_database` at most once a second, and an idle one only 10 s after its
 * last flush (or at its exit): wait this long, after a warm-up and before the first reading, so that the warm-up is
 * not counted in the window.
 */
export const STATISTICS_SETTLE_MS = 11_000;
/** `BENCH_SMOKE=1` hardly waits: a smoke run's figures are not read, so their window need not be exact. */
export const settle = (ms = STATISTICS_SETTLE_MS) =>
  new Promise((resolve) => setTimeout(resolve, SMOKE ? Math.min(ms, 100) : ms));

export interface DbCost {
  cpuMs: number | undefined;
  transactions: number;
  statements: number;
}

/** Fields after the command name of `/proc/<pid>/stat` (the name may hold spaces and parentheses). */
function statFields(pid: number): string[] | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  } catch {
    return undefined;
  }
}

// In the fields after the name: [1] ppid, [11] utime, [12] stime, [13] cutime, [14] cstime (clock ticks).
const ticks = (fields: string[], from: number, to: number) => {
  let sum = 0;
  for (let i = from; i <= to; i++) sum += Number(fields[i] ?? 0);
  return sum;
};

let clockTicks: number | undefined;
function ticksPerSecond(): number {
  if (clockTicks === undefined) {
    try {
      clockTicks = Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
    } catch {
      clockTicks = 100;
    }
  }
  return clockTicks;
}

// [0] state, [6] flags: a process that is exiting (PF_EXITING) or a zombie may no longer show its times while the
// postmaster has not reaped it yet (and so not added them to its cutime): read again a moment later.
const PF_EXITING = 0x4;
const exiting = (fields: string[]) =>
  fields[0] === "Z" || fields[0] === "X" || (Number(fields[6]) & PF_EXITING) !== 0;

function readServerTicks(postmaster: number): number | "unsettled" | undefined {
  const root = statFields(postmaster);
  if (root === undefined) return undefined;
  let total = ticks(root, 11, 14);
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const fields = statFields(Number(entry));
    if (fields === undefined || Number(fields[1]) !== postmaster) continue;
    if (exiting(fields)) return "unsettled";
    total += ticks(fields, 11, 12);
  }
  // A child reaped during the scan: its time may be in neither place.
  const again = statFields(postmaster);
  if (again === undefined || ticks(again, 13, 14) !== ticks(root, 13, 14)) return "unsettled";
  return total;
}

/**
 * CPU ms of `postmaster` and every process it started, the exited ones included (undefined when `/proc` does not
 * show it). Waits, up to 5 s, for a moment when no child is exiting.
 */
export async function serverCpuMs(postmaster: number): Promise<number | undefined> {
  const deadline = Date.now() + 5000;
  for (;;) {
    const read = readServerTicks(postmaster);
    if (read !== "unsettled") return read === undefined ? undefined : (read * 1000) / ticksPerSecond();
    if (Date.now() > deadline) return undefined;
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

/**
 * Reads the database's counters and its server's CPU. The statistics of a backend reach `pg_stat_database` at most
 * once a second, and an idle one's only after 10 s (or at its exit): wait before reading what a window cost.
 */
export async function openDbProbe(url: string): Promise<{
  cpuMs(): Promise<number | undefined>;
  snapshot(): Promise<DbSnapshot>;
  close(): Promise<void>;
}> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
  // This backend's parent is the postmaster, when the server is on this host (else /proc shows something else).
  const backend = Number(
    (await client.query<{ pid: number }>("SELECT pg_backend_pid() AS pid")).rows[0]?.pid,
  );
  const ppid = Number(statFields(backend)?.[1]);
  let postmaster: number | undefined;
  try {
    if (/postgres|postmaster/.test(readFileSync(`/proc/${ppid}/comm`, "utf8"))) postmaster = ppid;
  } catch {
    postmaster = undefined;
  }
  const cpuMs = async () => (postmaster === undefined ? undefined : await serverCpuMs(postmaster));
  return {
    cpuMs,
    async snapshot() {
      const cpu = await cpuMs();
      await client.query("SELECT pg_stat_clear_snapshot()");
      const { rows } = await client.query<{ transactions: string; statements: string }>(
        `SELECT (SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = current_database())
                  AS transactions,
                (SELECT coalesce(sum(calls), 0) FROM pg_stat_statements
                  WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
                    AND query NOT LIKE '%pg_stat%' AND query NOT LIKE '%pg_database%') AS statements`,
      );
      return {
        cpuMs: cpu,
        transactions: Number(rows[0]?.transactions),
        statements: Number(rows[0]?.statements),
      };
    },
    close: () => client.end(),
  };
}

export function costBetween(before: DbSnapshot, after: DbSnapshot): DbCost {
  return {
    cpuMs: before.cpuMs === undefined || after.cpuMs === undefined ? undefined : after.cpuMs - before.cpuMs,
    transactions: after.transactions - before.transactions,
    statements: after.statements - before.statements,
  };
}

/** "0.42 ms", or "n/a" when the server's CPU could not be read. */
export const perUnit = (total: number | undefined, units: number, digits = 2) =>
  total === undefined ? "n/a" : (total / units).toFixed(digits);
