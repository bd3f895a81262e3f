import { defineSessionsVitestConfig } from "../../vitest.shared.js";

export default defineSessionsVitestConfig({ testTimeout: 30_000 });
