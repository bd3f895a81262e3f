/**
 * Scripted runs per second on one process with the SQLite file on disk (issue target: ≥ 10,000 runs/s), next to
 * baselines measured in the same run: the bare store doing the same two write transactions a run makes, and the
 * floor under both, the same SQL statements on bare better-sqlite3. `BENCH_SMOKE=1`: a few hundred runs, every row.
 */
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  createGateway,
  createScriptedRunner,
  createSqliteStore,
  type Gateway,
  type SessionStore,
} from "../src/index.js";
import { SMOKE } from "./kit.js";
import { type Rate, rate, start } from "./rate.js";
import { type RunTemplates, rawSqliteRuns, recordedTemplates } from "./raw-sqlite.js";
import { runMany } from "./run-many.js";

const RUNS = SMOKE ? 300 : Number(process.env.BENCH_RUNS ?? 20_000);
const SESSIONS = SMOKE ? 16 : 256;
// Warm-up runs, runs one at a time, read samples.
const WARMUP = SMOKE ? 100 : 2_000;
const SEQUENTIAL = SMOKE ? 50 : 2_000;
const READS = SMOKE ? 20 : 500;
/**
 * `BENCH_ONLY=concurrent` (or `sequential`, `reads`, `bare`, `raw`) measures that row alone: for CPU profiles, and for
 * comparing two builds back to back on a busy machine.
 */
const ONLY = SMOKE ? undefined : process.env.BENCH_ONLY;
const TARGET_RUNS_PER_S = 10_000;

/** The floor under a run: its two transactions (input + run + touch; reply + touch + final) on the bare store. */
async function bareTransactions(store: SessionStore, runs: number, sessions: number): Promise<Rate> {
  const now = Date.now();
  for (let s = 0; s < sessions; s++) {
    const key = `agent:main:bare-${s}`;
    await store.putEntry({
      key,
      sessionId: randomUUID(),
      agentId: "main",
      createdAt: now,
      updatedAt: now,
      kind: "other",
    });
  }
  let next = 0;
  const started = start();
  await Promise.all(
    Array.from({ length: sessions }, async (_, s) => {
      const key = `agent:main:bare-${s}`;
      for (;;) {
        const i = next++;
        if (i >= runs) return;
        const runId = randomUUID();
        const run = {
          runId,
          sessionKey: key,
          agentId: "main",
          kind: "agent" as const,
          createdAt: Date.now(),
        };
        await store.transaction(async (tx) => {
          const entry = await tx.getEntry(key);
          if (entry) await tx.putEntry({ ...entry, updatedAt: Date.now() });
          const input = await tx.appendMessage(key, { role: "user", content: `m${i}`, ts: Date.now() });
          await tx.putRun({ ...run, status: "running", inputSeq: input.seq });
        });
        await store.transaction(async (tx) => {
          await tx.appendMessage(key, { role: "assistant", content: "ok", ts: Date.now(), runId });
          const entry = await tx.getEntry(key);
          if (entry) await tx.putEntry({ ...entry, updatedAt: Date.now() });
          await tx.putRun({ ...run, status: "ok", reply: "ok" });
        });
      }
    }),
  );
  return rate(runs, started);
}

/** p50 of `op` over `iterations` calls, one after another. */
async function p50(op: () => Promise<unknown>, iterations: number): Promise<number> {
  const samples: number[] = [];
  for (let i = 0; i < iterations; i++) {
    const start = performance.now();
    await op();
    samples.push(performance.now() - start);
  }
  samples.sort((a, b) => a - b);
  return samples[Math.floor(samples.length / 2)] ?? 0;
}

/** `sessions.list` and `chat.history` p50 on an idle gateway, then while scripted runs keep it busy. */
async function readLatency(gateway: Gateway) {
  const list = () => gateway.sessions.list({ limit: 50 });
  const history = () => gateway.chat.history({ sessionKey: "bench-0", limit: 50 });
  const idle = { list: await p50(list, READS), history: await p50(history, READS) };
  let busy = true;
  const load = runMany(gateway, RUNS / 4, SESSIONS).finally(() => {
    busy = false;
  });
  const loaded = { list: [] as number[], history: [] as number[] };
  while (busy) {
    // A client's next request arrives on a later turn of the event loop.
    await new Promise((resolve) => setImmediate(resolve));
    for (const [name, op] of [
      ["list", list],
      ["history", history],
    ] as const) {
      const start = performance.now();
      await op();
      loaded[name].push(performance.now() - start);
    }
  }
  await load;
  const median = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
  return { idle, loaded: { list: median(loaded.list), history: median(loaded.history) } };
}

/** A run as the gateway records it (entry, run, input and reply), for the raw row's rows. */
async function templates(gateway: Gateway): Promise<RunTemplates> {
  const { runId } = await gateway.agent({
    sessionKey: "bench-0",
    message: "m",
    idempotencyKey: randomUUID(),
  });
  return recordedTemplates(gateway, runId);
}

const dir = mkdtempSync(join(tmpdir(), "sessions-runs-bench-"));
try {
  const runner = createScriptedRunner({ agents: {}, fallback: () => "ok" });
  const gateway = createGateway({ runner, store: createSqliteStore({ path: join(dir, "runs.db") }) });
  await gateway.ready;
  await runMany(gateway, WARMUP, SESSIONS); // warm-up: sessions exist, statements prepared, JIT warm
  const only = (row: string) => ONLY === undefined || ONLY === row;
  report({
    ...(only("concurrent") ? { concurrent: await runMany(gateway, RUNS, SESSIONS) } : {}),
    ...(only("sequential") ? { sequential: await runMany(gateway, SEQUENTIAL, 1) } : {}),
    ...(only("reads") ? { reads: await readLatency(gateway) } : {}),
    ...(only("bare") ? { bare: await bareTransactions(gateway.store, RUNS, SESSIONS) } : {}),
    ...(only("raw") ? { raw: await rawSqliteRuns(dir, await templates(gateway), RUNS, SESSIONS) } : {}),
  });
  await gateway.close({ drainMs: 0 });
} finally {
  rmSync(dir, { recursive: true, force: true });
}

function report(results: {
  concurrent?: Rate;
  sequential?: Rate;
  bare?: Rate;
  raw?: Rate;
  reads?: Awaited<ReturnType<typeof readLatency>>;
}): void {
  const runsPerS = (r: Rate) => `${Math.round(r.perSecond).toLocaleString("en-US")} runs/s`;
  const cpu = (r: Rate) =>
    `${Math.round(r.cpuUsPerRun)} µs${r.mainUsPerRun === undefined ? "" : ` (main thread ${Math.round(r.mainUsPerRun)} µs)`}`;
  const ms = (v: number) => `${v.toFixed(3)} ms`;
  const { concurrent, sequential, bare, raw, reads } = results;
  const rows: Record<string, string>[] = [];
  if (concurrent !== undefined) {
    rows.push({
      task: `agent + agent.wait, ${RUNS.toLocaleString("en-US")} runs over ${SESSIONS} sessions (SQLite on disk)`,
      result: runsPerS(concurrent),
      "CPU / run": cpu(concurrent),
      target: `≥ ${TARGET_RUNS_PER_S.toLocaleString("en-US")} runs/s`,
      verdict: concurrent.perSecond >= TARGET_RUNS_PER_S ? "ok" : "BELOW TARGET",
    });
  }
  if (sequential !== undefined) {
    rows.push({
      task: "agent + agent.wait, one at a time (latency-bound)",
      result: runsPerS(sequential),
      "CPU / run": cpu(sequential),
    });
  }
  if (bare !== undefined) {
    rows.push({
      task: "baseline: the same two transactions on the bare store",
      result: runsPerS(bare),
      "CPU / run": cpu(bare),
    });
  }
  if (raw !== undefined) {
    rows.push({
      task: "floor: the same SQL statements on bare better-sqlite3 (no gateway, no store)",
      result: runsPerS(raw),
      "CPU / run": cpu(raw),
    });
  }
  if (reads !== undefined) {
    rows.push(
      {
        task: "sessions.list limit 50, p50 (idle / during runs)",
        result: `${ms(reads.idle.list)} / ${ms(reads.loaded.list)}`,
      },
      {
        task: "chat.history limit 50, p50 (idle / during runs)",
        result: `${ms(reads.idle.history)} / ${ms(reads.loaded.history)}`,
      },
    );
  }
  console.table(rows);
  if (SMOKE) console.log("BENCH_SMOKE=1: smoke run, the figures are not comparable with the target.");
}
