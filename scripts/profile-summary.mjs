#!/usr/bin/env node
// Summarises a V8 .cpuprofile (from `node --cpu-prof`, or a bench's BENCH_PROFILE_DIR): self time by function and
// by file, and with --inclusive, the time spent under each named function.
//
//   node scripts/profile-summary.mjs CPU.….cpuprofile [--top 30]
//   node scripts/profile-summary.mjs CPU.….cpuprofile --inclusive writev handleRequest fanOut
import { readFileSync } from "node:fs";

const args = process.argv.slice(2);
const file = args.find((a) => !a.startsWith("--"));
if (file === undefined) {
  console.error("usage: node scripts/profile-summary.mjs <file.cpuprofile> [--top N] [--inclusive name …]");
  process.exit(2);
}
const topAt = args.indexOf("--top");
const top = topAt === -1 ? 30 : Number(args[topAt + 1]);
const inclusiveAt = args.indexOf("--inclusive");
const named = inclusiveAt === -1 ? [] : args.slice(inclusiveAt + 1).filter((a) => !a.startsWith("--"));

const profile = JSON.parse(readFileSync(file, "utf8"));
const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
const parent = new Map();
for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
const self = new Map();
profile.samples.forEach((id, i) => {
  self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
});
const total = [...self.values()].reduce((a, b) => a + b, 0);

// A frame's place: its package (pnpm store), its workspace package file, or the URL.
const place = (url) =>
  url
    .replace(/^file:\/\//, "")
    .replace(/.*node_modules\/\.pnpm\/([^/]+)\/.*/, "pkg:$1")
    .replace(/.*\/packages\/([^/]+)\/(src|dist)\//, "$1/");
const byFunction = new Map();
const byFile = new Map();
for (const [id, us] of self) {
  const { functionName, url, lineNumber } = nodes.get(id).callFrame;
  const where = place(url);
  const key = `${functionName || "(anonymous)"} ${where}:${lineNumber + 1}`;
  byFunction.set(key, (byFunction.get(key) ?? 0) + us);
  byFile.set(where || functionName, (byFile.get(where || functionName) ?? 0) + us);
}
const print = (map, n) => {
  for (const [key, us] of [...map].sort((a, b) => b[1] - a[1]).slice(0, n)) {
    console.log(
      `${((us / total) * 100).toFixed(1).padStart(5)} %  ${(us / 1000).toFixed(0).padStart(7)} ms  ${key}`,
    );
  }
};
console.log(`${file}: ${(total / 1000).toFixed(0)} ms sampled`);
console.log("self time by function");
print(byFunction, top);
console.log("self time by file");
print(byFile, Math.min(top, 20));

if (named.length > 0) {
  // Time under each named function, counted once per sample however deep the recursion, idle left out.
  let busy = 0;
  const under = new Map(named.map((name) => [name, 0]));
  for (const [id, us] of self) {
    if (nodes.get(id).callFrame.functionName === "(idle)") continue;
    busy += us;
    const seen = new Set();
    for (let at = id; at !== undefined; at = parent.get(at)) {
      const name = nodes.get(at).callFrame.functionName;
      if (under.has(name) && !seen.has(name)) {
        seen.add(name);
        under.set(name, under.get(name) + us);
      }
    }
  }
  console.log(`inclusive time, share of ${(busy / 1000).toFixed(0)} ms busy`);
  for (const [name, us] of under) {
    console.log(
      `${((us / busy) * 100).toFixed(1).padStart(5)} %  ${(us / 1000).toFixed(0).padStart(7)} ms  ${name}`,
    );
  }
}
