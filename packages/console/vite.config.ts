import { fileURLToPath } from "node:url";
import { defineConfig } from "vite";

// The console and web chat: one static page, built into dist/ui and served by the gateway at `/`.
// `pnpm dev` serves it with hot reload; point its login form at a running gateway (ws://127.0.0.1:18789).
export default defineConfig({
  root: fileURLToPath(new URL("./ui", import.meta.url)),
  base: "/",
  esbuild: { jsx: "automatic", jsxImportSource: "preact" },
  build: {
    outDir: fileURLToPath(new URL("./dist/ui", import.meta.url)),
    emptyOutDir: true,
    target: "es2022",
    modulePreload: { polyfill: false },
    sourcemap: false,
    reportCompressedSize: false,
  },
});
