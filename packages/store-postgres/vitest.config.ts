import { mergeConfig } from "vitest/config";
import { defineSessionsVitestConfig } from "../../vitest.shared.js";

// One real Postgres per test run, started by the global setup (never skipped: no server means a failed run).
export default mergeConfig(defineSessionsVitestConfig(), {
  test: { globalSetup: ["src/testing/global-setup.ts"] },
});
