import { readFileSync } from "node:fs";
import { defineConfig } from "tsup";

const { version } = JSON.parse(readFileSync(new URL("./package.json", import.meta.url), "utf8")) as {
  version: string;
};

export default defineConfig({
  entry: ["src/index.ts", "src/ai-sdk.ts", "src/store-contract.ts"],
  format: ["esm", "cjs"],
  dts: true,
  sourcemap: true,
  clean: true,
  target: "node20",
  platform: "node",
  // `import.meta.url` in the CommonJS build (the SQLite checkpointer resolves its driver from it).
  shims: true,
  external: ["better-sqlite3", "ai", "ws", "vitest"],
  define: { __SESSIONS_VERSION__: JSON.stringify(version) },
});
