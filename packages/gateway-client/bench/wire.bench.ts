// What the WebSocket wire costs: @sessions/gateway-client talking to @sessions/gateway on loopback, against the
// same calls in process, on a real SQLite file: `pnpm bench` (or `pnpm --filter @sessions/gateway-client bench`).
// `BENCH_SCALE=small` runs a quick version (to check it works; its figures are not comparable with the targets);
// `BENCH_SMOKE=1` (`pnpm bench:smoke`, in CI) an even smaller one of every part, whatever BENCH_ONLY says.
// Imports @sessions/gateway from its dist, so build first:
//   pnpm --filter @sessions/core --filter @sessions/gateway --filter @sessions/gateway-client build
// Targets on a 2-core machine: the wire adds ≤ 0.3 ms p50 to a trivial call; sessions.list (limit 100, 10,000
// sessions) p50 ≤ 3 ms; chat.history (limit 50, 200,000 messages) p50 ≤ 2 ms; a fresh gateway process is
// listening ≤ 300 ms after its first line of user code, with RSS ≤ 120 MB. Runs/s of agent + waitRun are
// reported without a target. Part 6, runs pipelined on one connection to a gateway in its own process (chat.send
// then agent.wait, 500 in flight, 200 sessions): ≥ 60 % of the same calls in process and ≥ 50 % of the floor (the
// SQL of a run on bare better-sqlite3, two transactions per run), server and client CPU per run reported, and
// connect + hello ≤ 1 ms p50. `BENCH_ONLY=pipeline` runs part 6 alone; `BENCH_PROFILE_DIR=<dir>` profiles its server
// (summarise with `node scripts/profile-summary.mjs <file> --inclusive writev handleRequest`).
// One file per part: harness.ts (sizes, timing, the table), seed.ts, overhead.ts (1), reads.ts (2, 3), runs.ts (4),
// cold-start.ts (5), pipeline.ts + wire-server.child.ts (6).
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createGateway, createScriptedRunner, createSqliteStore } from "@sessions/gateway";
import type { GatewayClient } from "../src/index.js";
import { coldStartBench } from "./cold-start.js";
import { connect, rows, SMALL, SMOKE, since, wallStart } from "./harness.js";
import { overheadBench } from "./overhead.js";
import { pipelineBench } from "./pipeline.js";
import { historyBench, listBench } from "./reads.js";
import { runsBench } from "./runs.js";
import { AGENTS, mainEntry } from "./seed.js";

/** `BENCH_ONLY=pipeline` runs part 6 alone (for CPU profiles, and comparing builds back to back). */
const ONLY = SMOKE ? undefined : process.env.BENCH_ONLY;
const dir = mkdtempSync(join(tmpdir(), "sessions-wire-bench-"));
try {
  console.log(
    `wire bench${SMOKE ? " (BENCH_SMOKE=1)" : SMALL ? " (BENCH_SCALE=small)" : ""} (temp dir ${dir})`,
  );
  if (ONLY === "pipeline") {
    console.log("6. pipelined runs: the wire against the store");
    await pipelineBench(dir);
  } else await allParts(dir);
} finally {
  rmSync(dir, { recursive: true, force: true });
}

async function allParts(dir: string): Promise<void> {
  console.log("5. cold start (first, while the machine is quiet)");
  await coldStartBench(dir);

  const dbPath = join(dir, "sessions.db");
  const token = randomBytes(24).toString("hex");
  const gateway = createGateway({
    runner: createScriptedRunner({ agents: {}, fallback: () => "ok" }),
    store: createSqliteStore({ path: dbPath }),
  });
  const server = await gateway.listen({ port: 0, auth: { token } });
  let client: GatewayClient | undefined;
  try {
    client = await connect(server, token);
    const now = Date.now();
    for (const agent of AGENTS) await gateway.store.putEntry(mainEntry(agent[0], now));
    console.log("1. per-call overhead");
    await overheadBench(gateway, client);
    console.log("2. sessions.list");
    await listBench(gateway, client);
    console.log("3. chat.history");
    await historyBench(dbPath, gateway, client);
  } finally {
    await client?.close();
    await gateway.close({ drainMs: 0 });
  }

  console.log("4. runs per second");
  await runsBench(dir);
  console.log("6. pipelined runs: the wire against the store");
  await pipelineBench(dir);
}

console.table(rows);
const below = rows.filter((r) => r.verdict === "BELOW TARGET").length;
console.log(
  below === 0 ? "All targets met." : `${below} result(s) BELOW TARGET (see the verdict column).`,
  `Total wall time ${since(wallStart)}.`,
);
