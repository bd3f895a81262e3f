// Shared by the wire bench's parts (see wire.bench.ts): sizes and targets, timing, the result table, seeding PRNG.
// `BENCH_SCALE=small` shrinks every size so the whole bench runs in well under a minute (to check it still works;
// its figures are not comparable with the targets). `BENCH_SMOKE=1` (`pnpm bench:smoke`, in CI) shrinks them further:
// one pass of every part, to check the bench still runs end to end.
import { createRequire } from "node:module";
import { performance } from "node:perf_hooks";
import { pathToFileURL } from "node:url";
import type { GatewayServer } from "@sessions/gateway";
import { ms, type Row, SMOKE, type Stats, verdict } from "../../gateway/bench/kit.js";
import { createGatewayClient, type GatewayClient } from "../src/index.js";

// ------------------------------------------------------------------ sizes and targets

export const SMALL = SMOKE || process.env.BENCH_SCALE === "small";
const size = (full: number, small: number, smoke = small) => (SMOKE ? smoke : SMALL ? small : full);

export const SESSIONS = size(10_000, 1_000, 300);
export const LIST_LIMIT = 100;
export const TRANSCRIPT = size(200_000, 5_000, 1_000);
export const HISTORY_LIMIT = 50;
export const RUNS = size(2_000, 200, 100);
export const CONNECTIONS = size(10, 10, 3);
export const IN_FLIGHT_PER_CONNECTION = 8;
export const RUN_REPEATS = size(3, 1);
export const COLD_STARTS = size(5, 1);
export const WARMUP_RUNS = size(300, 50, 20);
export const LATENCY = { warmup: size(100, 10, 2), iterations: size(1_000, 100, 20) };
export const READ_LATENCY = { warmup: size(50, 10, 2), iterations: size(500, 100, 20) };
export const RUN_LATENCY = { warmup: size(50, 5, 2), iterations: size(300, 30, 10) };

export const TARGET = {
  addedP50Ms: 0.3,
  listP50Ms: 3,
  historyP50Ms: 2,
  coldReadyMs: 300,
  coldRssMb: 120,
};

export const wallStart = performance.now();

export const localRequire = createRequire(import.meta.url);
/** `node --import <tsx>`: the root devDependency, resolved to a file URL so the child's cwd does not matter. */
export const TSX_LOADER = pathToFileURL(localRequire.resolve("tsx")).href;

// ------------------------------------------------------------------ helpers (shared with the gateway bench)

export * from "../../gateway/bench/kit.js";

export const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} KB`;

export const rows: Row[] = [];
export const note = (line: string) => console.log(`  ${line}`);

export function latencyRow(task: string, s: Stats, target?: { p50Ms: number; label?: string }): void {
  rows.push({
    task,
    p50: ms(s.p50),
    "p95 / total": ms(s.p95),
    target: target === undefined ? "" : `p50 ≤ ${target.p50Ms} ms${target.label ? ` (${target.label})` : ""}`,
    verdict: target === undefined ? "" : verdict(s.p50 <= target.p50Ms),
  });
}

export const connect = async (server: GatewayServer, token: string): Promise<GatewayClient> => {
  const client = createGatewayClient({ url: server.url, token });
  await client.ready();
  return client;
};
