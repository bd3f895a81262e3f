import { defineConfig } from "vitest/config";

/**
 * The one vitest setup every package uses: tests next to the code, type tests as `*.test-d.ts`, and a JSON
 * report per package (`.vitest/report.json`) that `scripts/test-summary.mjs` folds into one "N passed, N failed" line.
 */
/** Far above the slowest test's time on a machine busy with two CPU-bound processes per core (scripts/busy.mjs). */
export const TEST_TIMEOUT_MS = 300_000;

export function defineSessionsVitestConfig(overrides: { include?: string[] } = {}) {
  return defineConfig({
    test: {
      include: overrides.include ?? ["src/**/*.test.ts"],
      // A backstop against a hang, never a budget: a test waits for conditions (`eventually` in @sessions/testing,
      // with its own far bound and a message naming what was missing), so on a loaded machine it is slow, not red.
      testTimeout: TEST_TIMEOUT_MS,
      hookTimeout: TEST_TIMEOUT_MS,
      // `expect.poll` waits for its condition as `eventually` does: 60 s, not vitest's 1 s (a budget a busy machine
      // misses); it returns as soon as the condition holds.
      expect: { poll: { timeout: 60_000, interval: 20 } },
      typecheck: { enabled: true, include: ["src/**/*.test-d.ts"] },
      // Always written (not only in CI): it is turbo's declared output of `test`, so a cached run restores it and
      // turbo has an output to find (no "no output files found" warning).
      reporters: ["default", ["json", { outputFile: ".vitest/report.json" }]],
    },
  });
}
