import { defineConfig } from "tsup";

// The Node helper only; the browser app is built by Vite into dist/ui (see vite.config.ts).
export default defineConfig({
  entry: ["src/index.ts"],
  format: ["esm", "cjs"],
  dts: true,
  sourcemap: true,
  clean: true,
  shims: true,
  target: "es2022",
  platform: "node",
});
