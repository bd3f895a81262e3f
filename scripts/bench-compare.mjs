#!/usr/bin/env node
// Compares this checkout's headline figures with a base's, measured side by side on this machine in the same run:
// builds the base in a git worktree (kept under the temp dir for the next comparison), then runs
// scripts/bench-headline.mjs on the base and on this checkout in turn, alternating which goes first, and compares
// the medians. Exits 1 when a figure is more than --threshold % worse than the base's.
//
//   pnpm bench:compare <base-ref> [--rounds 5] [--threshold 10] [--scale small|full] [--no-build]
//
// This checkout is built first (`pnpm build`; turbo makes it quick when nothing changed) unless --no-build.
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    rounds: { type: "string", default: "5" },
    threshold: { type: "string", default: "10" },
    scale: { type: "string", default: "small" },
    "no-build": { type: "boolean", default: false },
  },
});
const [baseRef] = positionals;
const rounds = Number(values.rounds);
const threshold = Number(values.threshold);
if (baseRef === undefined || !Number.isInteger(rounds) || rounds < 1 || !(threshold > 0)) {
  console.error(
    "usage: pnpm bench:compare <base-ref> [--rounds N] [--threshold PERCENT] [--scale small|full]",
  );
  process.exit(2);
}

/** Each figure: what it is, and whether more is better. */
const FIGURES = {
  serveRunsPerSec: { label: "runs/s through serve (chat.send + agent.wait, 200 in flight)", higher: true },
  inProcessRunsPerSec: { label: "runs/s in process (agent + agent.wait, 200 in flight)", higher: true },
  listP50Ms: { label: "sessions.list limit 100, p50 ms (through serve)", higher: false },
  historyP50Ms: { label: "chat.history limit 50, p50 ms (through serve)", higher: false },
  connectP50Ms: { label: "connect + hello, p50 ms (through serve)", higher: false },
  storeMb: { label: "store on disk, MB (once seeded)", higher: false },
};

const git = (...args) => execFileSync("git", args, { cwd: root, encoding: "utf8" }).trim();
const run = (command, args, cwd) => {
  const result = spawnSync(command, args, { cwd, stdio: "inherit" });
  if (result.status !== 0)
    throw new Error(`${command} ${args.join(" ")} failed in ${cwd} (${result.status})`);
};

const baseSha = git("rev-parse", "--verify", `${baseRef}^{commit}`);
const headSha = git("rev-parse", "HEAD");
const dirty = git("status", "--porcelain").length > 0;
const baseDir = join(tmpdir(), "sessions-bench-compare", baseSha);
const built = join(baseDir, ".bench-compare-built");
if (!existsSync(built)) {
  console.log(`building the base ${baseRef} (${baseSha.slice(0, 10)}) in ${baseDir}`);
  mkdirSync(dirname(baseDir), { recursive: true });
  if (!existsSync(baseDir)) git("worktree", "add", "--detach", "--force", baseDir, baseSha);
  run("pnpm", ["install", "--frozen-lockfile", "--prefer-offline"], baseDir);
  run("pnpm", ["build"], baseDir);
  writeFileSync(built, `${new Date().toISOString()}\n`);
}
if (!values["no-build"]) run("pnpm", ["build"], root);

function measure(checkout) {
  const result = spawnSync(
    process.execPath,
    [
      "--import",
      "tsx",
      join(root, "scripts/bench-headline.mjs"),
      "--root",
      checkout,
      "--scale",
      values.scale,
    ],
    { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"], maxBuffer: 1 << 24 },
  );
  const line = result.stdout.trim().split("\n").at(-1);
  if (result.status !== 0 || line === undefined) throw new Error(`bench-headline failed on ${checkout}`);
  return JSON.parse(line);
}

const samples = { base: [], head: [] };
for (let round = 0; round < rounds; round++) {
  // Alternating which side goes first evens out what the machine does between them.
  const order = round % 2 === 0 ? ["base", "head"] : ["head", "base"];
  for (const side of order) samples[side].push(measure(side === "base" ? baseDir : root));
  console.log(`round ${round + 1} of ${rounds} done`);
}

const median = (list) => {
  const sorted = [...list].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};
const format = (value) => (value >= 100 ? value.toFixed(0) : value.toFixed(value >= 10 ? 1 : 3));

console.log(
  `\nbase ${baseRef} (${baseSha.slice(0, 10)}) against this checkout (${headSha.slice(0, 10)}${dirty ? ", with uncommitted changes" : ""}): ` +
    `medians of ${rounds} interleaved rounds, --scale ${values.scale}, regression threshold ${threshold} %\n`,
);
console.log("| figure | base | this checkout | change | |\n| --- | ---: | ---: | ---: | --- |");
const regressions = [];
for (const [name, { label, higher }] of Object.entries(FIGURES)) {
  const base = median(samples.base.map((figures) => figures[name]));
  const head = median(samples.head.map((figures) => figures[name]));
  const change = ((head - base) / base) * 100;
  const worse = higher ? -change : change;
  const verdict = worse > threshold ? "**worse**" : worse < -threshold ? "better" : "same";
  if (worse > threshold) regressions.push(label);
  console.log(
    `| ${label} | ${format(base)} | ${format(head)} | ${change >= 0 ? "+" : ""}${change.toFixed(1)} % | ${verdict} |`,
  );
}
if (regressions.length > 0) {
  console.log(`\n${regressions.length} figure(s) more than ${threshold} % worse: ${regressions.join("; ")}`);
  process.exit(1);
}
console.log(`\nno figure more than ${threshold} % worse than the base`);
