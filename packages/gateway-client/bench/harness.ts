// Shared by the wire bench's parts (see wire.bench.ts): sizes and targets, timing, the result table, seeding PRNG.
// `BENCH_SCALE=small` shrinks every size so the whole bench runs in well under a minute (to check it still works;
// its figures are not comparable with the targets).
import { createRequire } from "node:module";
import { performance } from "node:perf_hooks";
import { pathToFileURL } from "node:url";
import type { GatewayServer } from "@sessions/gateway";
import { createGatewayClient, type GatewayClient } from "../src/index.js";

// ------------------------------------------------------------------ sizes and targets

export const SMALL = process.env.BENCH_SCALE === "small";
const size = (full: number, small: number) => (SMALL ? small : full);

export const SESSIONS = size(10_000, 1_000);
export const LIST_LIMIT = 100;
export const TRANSCRIPT = size(200_000, 5_000);
export const HISTORY_LIMIT = 50;
export const RUNS = size(2_000, 200);
export const CONNECTIONS = 10;
export const IN_FLIGHT_PER_CONNECTION = 8;
export const RUN_REPEATS = size(3, 1);
export const COLD_STARTS = size(5, 1);
export const WARMUP_RUNS = size(300, 50);
export const LATENCY = { warmup: size(100, 10), iterations: size(1_000, 100) };
export const READ_LATENCY = { warmup: size(50, 10), iterations: size(500, 100) };
export const RUN_LATENCY = { warmup: size(50, 5), iterations: size(300, 30) };

export const TARGET = {
  addedP50Ms: 0.3,
  listP50Ms: 3,
  historyP50Ms: 2,
  coldReadyMs: 300,
  coldRssMb: 120,
};

export const DAY = 24 * 3600_000;
export const MB = 1024 * 1024;
export const wallStart = performance.now();

export const localRequire = createRequire(import.meta.url);
/** `node --import <tsx>`: the root devDependency, resolved to a file URL so the child's cwd does not matter. */
export const TSX_LOADER = pathToFileURL(localRequire.resolve("tsx")).href;

// ------------------------------------------------------------------ helpers

export interface Stats {
  n: number;
  p50: number;
  p95: number;
  mean: number;
  max: number;
}

export function stats(samples: number[]): Stats {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number) =>
    sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] ?? 0;
  const sum = sorted.reduce((n, v) => n + v, 0);
  return {
    n: sorted.length,
    p50: at(0.5),
    p95: at(0.95),
    mean: sorted.length === 0 ? 0 : sum / sorted.length,
    max: sorted.at(-1) ?? 0,
  };
}

export type Op = () => unknown;

/**
 * Times each op `iterations` times (after `warmup` untimed rounds), interleaving the ops round by round so drift
 * (page cache, GC, WAL checkpoints) hits them alike. Sync ops are not charged an extra microtask.
 */
export async function measure(ops: Op[], options: { warmup: number; iterations: number }): Promise<Stats[]> {
  const samples = ops.map(() => [] as number[]);
  for (let round = 0; round < options.warmup + options.iterations; round++) {
    for (let k = 0; k < ops.length; k++) {
      const op = ops[k] as Op;
      const start = performance.now();
      const out = op();
      if (out instanceof Promise) await out;
      const elapsed = performance.now() - start;
      if (round >= options.warmup) samples[k]?.push(elapsed);
    }
  }
  return samples.map(stats);
}

export const ms = (v: number) => `${v < 1 ? v.toFixed(3) : v < 100 ? v.toFixed(2) : v.toFixed(0)} ms`;
export const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} KB`;
export const verdict = (ok: boolean) => (ok ? "ok" : "BELOW TARGET");
export const since = (t: number) => {
  const elapsed = performance.now() - t;
  return elapsed < 1000 ? ms(elapsed) : `${(elapsed / 1000).toFixed(1)} s`;
};
export const median = (values: number[]) => stats(values).p50;

export function check(condition: boolean, message: string): void {
  if (!condition) throw new Error(`bench sanity check failed: ${message}`);
}

/** Deterministic PRNG (mulberry32) so every run seeds the same mix. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function weighted<T>(rand: () => number, table: readonly (readonly [T, number])[]): T {
  let r = rand();
  for (const [value, weight] of table) {
    r -= weight;
    if (r < 0) return value;
  }
  return (table[table.length - 1] as readonly [T, number])[0];
}

export interface Row {
  task: string;
  p50: string;
  "p95 / total": string;
  target: string;
  verdict: string;
}

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
