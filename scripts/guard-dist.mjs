#!/usr/bin/env node
// The `prepack` guard of every public package (pnpm/npm run it before `pack` and `publish`): refuses to pack a
// package whose build output is missing or older than its sources, naming the command that fixes it. Without it,
// packing an unbuilt package silently ships a tarball whose entry points do not exist.
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";

const dir = process.cwd();
const manifest = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
const name = manifest.name ?? dir;
const fix = `run \`pnpm --filter ${name}... build\` (or \`pnpm build\`) before packing or publishing`;

/** Every file the manifest points users at: main, module, types, bin and each exports target. */
function targets(value, out = new Set()) {
  if (typeof value === "string") {
    if (value.startsWith("./") && !value.endsWith("/package.json") && !value.includes("*")) out.add(value);
  } else if (value !== null && typeof value === "object") {
    for (const inner of Object.values(value)) targets(inner, out);
  }
  return out;
}
const entries = targets([
  manifest.main,
  manifest.module,
  manifest.types,
  manifest.typings,
  manifest.bin,
  manifest.exports,
]);
for (const field of ["main", "module", "types"]) {
  if (typeof manifest[field] === "string" && !manifest[field].startsWith("./"))
    entries.add(`./${manifest[field]}`);
}

const missing = [...entries].filter((file) => !existsSync(join(dir, file)));
if (missing.length > 0) {
  console.error(`${name}: not built — ${missing.join(", ")} missing; ${fix}`);
  process.exit(1);
}

const SOURCE = /\.(c|m)?(t|j)sx?$/;
const NOT_SHIPPED = /\.(test|test-d|fixture|bench)\.(c|m)?(t|j)sx?$/;
function newestSource(path) {
  if (!existsSync(path)) return { time: 0, file: "" };
  const stat = statSync(path);
  if (!stat.isDirectory()) return { time: stat.mtimeMs, file: path };
  let newest = { time: 0, file: "" };
  for (const entry of readdirSync(path, { withFileTypes: true })) {
    if (entry.isFile() && (!SOURCE.test(entry.name) || NOT_SHIPPED.test(entry.name))) continue;
    const found = newestSource(join(path, entry.name));
    if (found.time > newest.time) newest = found;
  }
  return newest;
}
const source = [join(dir, "src"), join(dir, "tsup.config.ts")]
  .map(newestSource)
  .reduce((a, b) => (b.time > a.time ? b : a));
const built = Math.min(...[...entries].map((file) => statSync(join(dir, file)).mtimeMs));
if (entries.size > 0 && source.time > built) {
  console.error(`${name}: the build is older than ${relative(dir, source.file)}; ${fix}`);
  process.exit(1);
}
