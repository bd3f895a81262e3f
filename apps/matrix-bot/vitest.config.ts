import { defineSessionsVitestConfig } from "../../vitest.shared.js";

export default defineSessionsVitestConfig({ testTimeout: 60_000 });
