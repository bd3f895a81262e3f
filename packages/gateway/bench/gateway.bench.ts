// Latency of the gateway's hot paths on a real SQLite file: `pnpm bench` (or `pnpm --filter @sessions/gateway bench`).
// Targets on a 2-core machine: sessions.list over 100,000 sessions p50 ≤ 20 ms; chat.history (limit 50) p50 ≤ 5 ms
// and flat in transcript length (1,000,000 messages within 2x of 1,000); appendMessage p50 ≤ 0.5 ms; 1,000
// concurrent sub-agent spawns all announced within 10 s with peak RSS < 400 MB.
// One file per feature: list.ts, transcripts.ts, spawns.ts; runs/s are in runs.bench.ts. `BENCH_SMOKE=1`: 20 spawns,
// 1,000 sessions, a 5,000-message transcript, a few samples of each (checks the bench runs, not the targets).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { createGateway, createSqliteStore } from "../src/index.js";
import { ms, note, rows, runner, SMOKE, since, TARGET, verdict } from "./harness.js";
import { listBench } from "./list.js";
import { SPAWNS, spawnBench } from "./spawns.js";
import { appendBench, historyBench } from "./transcripts.js";

const wallStart = performance.now();

const dir = mkdtempSync(join(tmpdir(), "sessions-gw-bench-"));
try {
  console.log(`gateway bench (temp dir ${dir})`);
  console.log("4. sub-agent spawns");
  const spawn = await spawnBench(dir);
  note(
    `${spawn.accepted}/${SPAWNS} spawns accepted in ${ms(spawn.acceptedMs)}; ${spawn.announced} announces delivered` +
      ` (${spawn.notDelivered} not delivered) at ${ms(spawn.announcedMs)}; ${spawn.done} sub-agents done at ${ms(spawn.doneMs)}`,
  );
  note(
    `RSS ${spawn.rssStartMb.toFixed(0)} MB before the spawns, peak ${spawn.peakRssMb.toFixed(0)} MB (${spawn.rssSamples} samples);` +
      ` longest event-loop stall ${ms(spawn.maxLoopStallMs)}`,
  );
  if (spawn.rejected.length > 0) note(`rejected spawns (first 3): ${spawn.rejected.slice(0, 3).join(" | ")}`);
  const allAnnounced = spawn.announced === SPAWNS;

  const dbPath = join(dir, "sessions.db");
  const gateway = createGateway({ runner, store: createSqliteStore({ path: dbPath }) });
  await gateway.ready;
  try {
    console.log("1. sessions.list");
    await listBench(gateway);
    console.log("2. chat.history");
    await historyBench(dbPath, gateway);
    console.log("3. appendMessage");
    await appendBench(dbPath, gateway.store);
  } finally {
    await gateway.close({ drainMs: 0 });
  }

  rows.push({
    task: `${SPAWNS.toLocaleString("en-US")} concurrent sub-agent spawns → all announced`,
    p50: "",
    "p95 / total": allAnnounced
      ? ms(spawn.announcedMs)
      : `${spawn.announced}/${SPAWNS} in ${ms(spawn.announcedMs)}`,
    target: `≤ ${TARGET.spawnTotalMs / 1000} s`,
    verdict: verdict(allAnnounced && spawn.announcedMs <= TARGET.spawnTotalMs),
  });
  rows.push({
    task: "  peak RSS during the spawns",
    p50: "",
    "p95 / total": `${spawn.peakRssMb.toFixed(0)} MB`,
    target: `< ${TARGET.spawnRssMb} MB`,
    verdict: verdict(spawn.peakRssMb < TARGET.spawnRssMb),
  });
} finally {
  rmSync(dir, { recursive: true, force: true });
}

console.table(rows);
const below = rows.filter((r) => r.verdict === "BELOW TARGET").length;
console.log(
  below === 0 ? "All targets met." : `${below} result(s) BELOW TARGET (see the verdict column).`,
  `Total wall time ${since(wallStart)}.`,
);
if (SMOKE) console.log("BENCH_SMOKE=1: smoke run, the figures are not comparable with the targets.");
