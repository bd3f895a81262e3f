#!/usr/bin/env node
// The console's bundle budget: everything a browser downloads from dist/ui, gzipped, must stay within 150 KB.
// Runs after every build and before the tests (so CI enforces it). `node check-budget.mjs [folder]`.
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { gzipSync } from "node:zlib";

const BUDGET = 150 * 1024;
// The built pages, or another folder (the budget's own test).
const root = resolve(process.argv[2] ?? resolve(import.meta.dirname, "..", "dist", "ui"));
if (!existsSync(join(root, "index.html"))) {
  console.error(`bundle budget: ${relative(process.cwd(), root)} has no index.html — run the build first`);
  process.exit(1);
}

function files(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? files(path) : [path];
  });
}

let total = 0;
const rows = [];
for (const file of files(root)) {
  if (file.endsWith(".map")) continue;
  const size = gzipSync(readFileSync(file), { level: 9 }).length;
  total += size;
  rows.push(`  ${(size / 1024).toFixed(1).padStart(7)} KB  ${relative(root, file)}`);
}
const verdict = total <= BUDGET ? "within" : "OVER";
console.log(
  `bundle budget: ${(total / 1024).toFixed(1)} KB gzipped, ${verdict} ${BUDGET / 1024} KB\n${rows.join("\n")}`,
);
if (total > BUDGET) process.exit(1);
