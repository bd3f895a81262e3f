import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { trace } from "@opentelemetry/api";
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from "@opentelemetry/sdk-trace-base";
import { createGateway, createScriptedRunner, createSqliteStore } from "../src/index.js";
import { median, SMOKE } from "./kit.js";
import type { Rate } from "./rate.js";
import { runMany } from "./run-many.js";

// `BENCH_SMOKE=1`: one round of 300 runs over 16 sessions (checks the bench runs; its figures mean nothing).
const RUNS = SMOKE ? 300 : Number(process.env.BENCH_RUNS ?? 5_000);
const ROUNDS = SMOKE ? 1 : Number(process.env.BENCH_ROUNDS ?? 5);
const SESSIONS = SMOKE ? 16 : 256;
const WARMUP_RUNS = SMOKE ? 100 : 1_000;
/** "No cost": the untraced default within this of no hooks at all (the rounds' noise on this machine is ~2–4 %). */
const NO_COST_RATIO = 0.95;

const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const dir = mkdtempSync(join(tmpdir(), "sessions-tracing-bench-"));
const runner = createScriptedRunner({ agents: {}, fallback: () => "ok" });
const open = async (name: string, tracing: boolean) => {
  const gateway = createGateway({
    runner,
    tracing,
    store: createSqliteStore({ path: join(dir, `${name}.db`) }),
  });
  await gateway.ready;
  return gateway;
};
try {
  const rows = {
    off: {
      label: "tracing off (tracing: false, no hooks)",
      gateway: await open("off", false),
      rounds: [] as Rate[],
    },
    idle: {
      label: "tracing on, no tracer provider registered",
      gateway: await open("idle", true),
      rounds: [] as Rate[],
    },
    memory: {
      label: "tracing on, spans exported to memory",
      gateway: await open("memory", true),
      rounds: [] as Rate[],
    },
  };
  let spansPerRun = 0;
  for (let round = -1; round < ROUNDS; round++) {
    // Round -1 warms every gateway (sessions exist, statements prepared, JIT warm) and is not counted.
    const runs = round < 0 ? WARMUP_RUNS : RUNS;
    for (const [name, row] of Object.entries(rows)) {
      if (name === "memory") trace.setGlobalTracerProvider(provider);
      const measured = await runMany(row.gateway, runs, SESSIONS);
      if (name === "memory") {
        spansPerRun = exporter.getFinishedSpans().length / runs;
        exporter.reset();
        trace.disable();
      }
      if (round >= 0) row.rounds.push(measured);
    }
  }
  const summary = Object.values(rows).map((row) => ({
    label: row.label,
    perSecond: median(row.rounds.map((r) => r.perSecond)),
    mainUs: median(row.rounds.map((r) => r.mainUsPerRun ?? r.cpuUsPerRun)),
  }));
  const [off, idle, memory] = summary as [(typeof summary)[0], (typeof summary)[0], (typeof summary)[0]];
  const table = summary.map((row) => ({
    task: `${row.label}: agent + agent.wait, ${RUNS.toLocaleString("en-US")} runs × ${ROUNDS} alternated rounds`,
    "runs/s (median)": Math.round(row.perSecond).toLocaleString("en-US"),
    "main thread µs/run": row.mainUs.toFixed(1),
    "vs tracing off": `${((row.perSecond / off.perSecond) * 100).toFixed(1)} %`,
  }));
  console.table(table);
  console.log(
    `  no provider: ${idle.perSecond >= off.perSecond * NO_COST_RATIO ? "ok" : "SLOWER"} (≥ ${NO_COST_RATIO * 100} % of tracing off); ` +
      `in-memory export: +${(memory.mainUs - off.mainUs).toFixed(1)} µs of main-thread CPU per run, ${spansPerRun.toFixed(1)} spans per run`,
  );
  for (const row of Object.values(rows)) await row.gateway.close({ drainMs: 0 });
  await provider.shutdown();
} finally {
  rmSync(dir, { recursive: true, force: true });
}
