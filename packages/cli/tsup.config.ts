import { defineConfig } from "tsup";

export default defineConfig({
  entry: ["src/index.ts", "src/cli.ts"],
  format: ["esm", "cjs"],
  dts: { entry: ["src/index.ts"] },
  sourcemap: true,
  clean: true,
  target: "node20",
  platform: "node",
});
