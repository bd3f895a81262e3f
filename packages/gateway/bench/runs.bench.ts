/**
 * Scripted runs per second on one process with the SQLite file on disk (issue target: ≥ 10,000 runs/s), next to
 * a baseline measured in the same run: the bare store doing the same two write transactions a run makes.
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

const RUNS = 20_000;
const SESSIONS = 256;
const TARGET_RUNS_PER_S = 10_000;

async function runMany(gateway: Gateway, runs: number, sessions: number): Promise<number> {
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: sessions }, async (_, s) => {
      for (;;) {
        const i = next++;
        if (i >= runs) return;
        const { runId } = await gateway.agent({
          sessionKey: `bench-${s}`,
          message: `m${i}`,
          idempotencyKey: randomUUID(),
        });
        const waited = await gateway.agentWait({ runId, timeoutMs: 60_000 });
        if (waited.status !== "ok") throw new Error(`run ${runId} ended ${waited.status}: ${waited.error}`);
      }
    }),
  );
  return runs / ((performance.now() - started) / 1000);
}

/** The floor under a run: its two transactions (input + run + touch; reply + touch + final) on the bare store. */
async function bareTransactions(store: SessionStore, runs: number, sessions: number): Promise<number> {
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
  const started = performance.now();
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
  return runs / ((performance.now() - started) / 1000);
}

const dir = mkdtempSync(join(tmpdir(), "sessions-runs-bench-"));
try {
  const runner = createScriptedRunner({ agents: {}, fallback: () => "ok" });
  const gateway = createGateway({ runner, store: createSqliteStore({ path: join(dir, "runs.db") }) });
  await gateway.ready;
  await runMany(gateway, 2_000, SESSIONS); // warm-up: sessions exist, statements prepared, JIT warm
  const concurrent = await runMany(gateway, RUNS, SESSIONS);
  const sequential = await runMany(gateway, 2_000, 1);
  const bare = await bareTransactions(gateway.store, RUNS, SESSIONS);
  await gateway.close({ drainMs: 0 });
  const rate = (v: number) => `${Math.round(v).toLocaleString("en-US")} runs/s`;
  console.table([
    {
      task: `agent + agent.wait, ${RUNS.toLocaleString("en-US")} runs over ${SESSIONS} sessions (SQLite on disk)`,
      result: rate(concurrent),
      target: `≥ ${TARGET_RUNS_PER_S.toLocaleString("en-US")} runs/s`,
      verdict: concurrent >= TARGET_RUNS_PER_S ? "ok" : "BELOW TARGET",
    },
    {
      task: "agent + agent.wait, one at a time (latency-bound)",
      result: rate(sequential),
      target: "",
      verdict: "",
    },
    {
      task: "baseline: the same two transactions on the bare store",
      result: rate(bare),
      target: "",
      verdict: "",
    },
  ]);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
