import { defineConfig } from "vitest/config";

/**
 * The one vitest setup every package uses: tests next to the code, type tests as `*.test-d.ts`, and a JSON
 * report per package that `scripts/test-summary.mjs` folds into one "N passed, N failed" line for CI.
 */
export function defineSessionsVitestConfig(overrides: { testTimeout?: number; include?: string[] } = {}) {
  return defineConfig({
    test: {
      include: overrides.include ?? ["src/**/*.test.ts"],
      testTimeout: overrides.testTimeout ?? 15_000,
      typecheck: { enabled: true, include: ["src/**/*.test-d.ts"] },
      reporters: process.env.CI ? ["default", ["json", { outputFile: ".vitest/report.json" }]] : ["default"],
    },
  });
}
