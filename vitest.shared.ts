import { defineConfig } from "vitest/config";

/**
 * The one vitest setup every package uses: tests next to the code, type tests as `*.test-d.ts`, and a JSON
 * report per package (`.vitest/report.json`) that `scripts/test-summary.mjs` folds into one "N passed, N failed" line.
 */
export function defineSessionsVitestConfig(overrides: { testTimeout?: number; include?: string[] } = {}) {
  return defineConfig({
    test: {
      include: overrides.include ?? ["src/**/*.test.ts"],
      testTimeout: overrides.testTimeout ?? 15_000,
      typecheck: { enabled: true, include: ["src/**/*.test-d.ts"] },
      // Always written (not only in CI): it is turbo's declared output of `test`, so a cached run restores it and
      // turbo has an output to find (no "no output files found" warning).
      reporters: ["default", ["json", { outputFile: ".vitest/report.json" }]],
    },
  });
}
