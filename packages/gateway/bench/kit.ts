// What every bench of the repo shares, free of any package's source (the wire bench imports it from here too):
// timing and stats, the result row, a seeded PRNG and sanity checks.
import { performance } from "node:perf_hooks";

/**
 * `BENCH_SMOKE=1` (`pnpm bench:smoke`, run in CI): every bench at its smallest sizes, to check that it still runs
 * end to end; its figures are not comparable with the targets.
 */
export const SMOKE = process.env.BENCH_SMOKE === "1";

export const DAY = 24 * 3600_000;
export const MB = 1024 * 1024;

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

export const median = (values: number[]) => stats(values).p50;

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
export const verdict = (ok: boolean) => (ok ? "ok" : "BELOW TARGET");
export const sleep = (t: number) => new Promise<void>((r) => setTimeout(r, t));
export const since = (t: number) => {
  const elapsed = performance.now() - t;
  return elapsed < 1000 ? ms(elapsed) : `${(elapsed / 1000).toFixed(1)} s`;
};

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

/** A row of a bench's result table. */
export interface Row {
  task: string;
  p50: string;
  "p95 / total": string;
  target: string;
  verdict: string;
}
