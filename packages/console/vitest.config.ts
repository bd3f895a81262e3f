import { defineSessionsVitestConfig } from "../../vitest.shared.js";

export default defineSessionsVitestConfig();
