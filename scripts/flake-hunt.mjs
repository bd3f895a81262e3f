#!/usr/bin/env node
// Runs the test suite (or one package's tests) several times, each in a fresh clone, optionally on a busy machine,
// and prints every test that failed in any run: how many runs it failed in, and its first failure's message.
//
//   node scripts/flake-hunt.mjs                          # 3 runs of the whole suite, quiet machine
//   node scripts/flake-hunt.mjs --runs 10 --busy-runs 5  # 10 runs, every other one beside scripts/busy.mjs
//   node scripts/flake-hunt.mjs --runs 5 --busy --filter @sessions/gateway
//
// Each run clones the committed HEAD (or --ref) into a new folder, installs the locked dependencies
// (scripts/ensure-deps.sh), builds, and runs `pnpm test` (turbo with --force and --continue: no cached result,
// every package runs even when one fails). Uncommitted changes are not in the clones: commit first. Only the
// test step runs beside busy.mjs. The clones go once their run is read, unless --keep; each run's log stays in the
// work folder. Exits 1 when any run had a failing test, 0 when all were green.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { cloneDefaults, cloneOption } from "./lib/clone-options.mjs";

const root = resolve(import.meta.dirname, "..");
const usage =
  "usage: node scripts/flake-hunt.mjs [--runs N] [--busy | --busy-runs K] [--per-core N] [--filter <package>] [--ref <git ref>] [--dir <work folder>] [--json <file>] [--keep]";

function parseArgs(argv) {
  const opts = {
    runs: 3,
    busyRuns: 0,
    perCore: 2,
    filter: undefined,
    ...cloneDefaults(),
  };
  let allBusy = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const value = () => {
      const next = argv[++i];
      if (next === undefined || next.startsWith("--")) fail(`${arg} needs a value`);
      return next;
    };
    const count = (name, min) => {
      const n = Number(value());
      if (!Number.isInteger(n) || n < min) fail(`${name} must be a whole number ≥ ${min}`);
      return n;
    };
    if (arg === "--runs") opts.runs = count("--runs", 1);
    else if (arg === "--busy") allBusy = true;
    else if (arg === "--busy-runs") opts.busyRuns = count("--busy-runs", 0);
    else if (arg === "--per-core") opts.perCore = count("--per-core", 1);
    else if (arg === "--filter") opts.filter = value();
    else if (cloneOption(opts, arg, value)) continue;
    else if (arg === "--help" || arg === "-h") {
      console.log(usage);
      process.exit(0);
    } else fail(`unknown option ${arg}`);
  }
  if (allBusy) opts.busyRuns = opts.runs;
  if (opts.busyRuns > opts.runs) fail(`--busy-runs ${opts.busyRuns} is more than --runs ${opts.runs}`);
  return opts;
}

function fail(message) {
  console.error(`flake-hunt: ${message}\n${usage}`);
  process.exit(2);
}

/** Which runs are busy: `busyRuns` of `runs`, spread evenly (every other one for half). */
export function busySchedule(runs, busyRuns) {
  return Array.from(
    { length: runs },
    (_, i) => Math.floor(((i + 1) * busyRuns) / runs) > Math.floor((i * busyRuns) / runs),
  );
}

/** Runs a command, its output appended to `log`; resolves with its exit code. */
function run(command, args, { cwd, log }) {
  return new Promise((resolveRun) => {
    writeFileSync(log, `\n$ ${[command, ...args].join(" ")}\n`, { flag: "a" });
    const child = spawn("bash", ["-c", `exec "$0" "$@" >> "${log}" 2>&1`, command, ...args], {
      cwd,
      stdio: "ignore",
      env: { ...process.env, CI: "true", TURBO_TELEMETRY_DISABLED: "1", NO_COLOR: "1", FORCE_COLOR: "0" },
    });
    child.on("exit", (code, signal) => resolveRun(code ?? (signal ? 128 : 1)));
  });
}

/** Every test of the clone's vitest reports: failed ones with their first message, and the counts. */
export function readReports(clone) {
  const failures = [];
  const missing = [];
  let passed = 0;
  let failed = 0;
  for (const group of ["packages", "apps"]) {
    const base = join(clone, group);
    if (!existsSync(base)) continue;
    for (const name of readdirSync(base)) {
      const manifest = join(base, name, "package.json");
      if (!existsSync(manifest)) continue;
      const pkg = JSON.parse(readFileSync(manifest, "utf8"));
      const file = join(base, name, ".vitest", "report.json");
      if (!existsSync(file)) {
        if (pkg.scripts?.test !== undefined) missing.push(pkg.name);
        continue;
      }
      const report = JSON.parse(readFileSync(file, "utf8"));
      passed += report.numPassedTests ?? 0;
      failed += report.numFailedTests ?? 0;
      for (const suite of report.testResults ?? []) {
        const path = String(suite.name ?? "").replace(`${clone}/`, "");
        const tests = suite.assertionResults ?? [];
        for (const test of tests) {
          if (test.status !== "failed") continue;
          failures.push({
            test: `${path} › ${test.fullName}`,
            message: firstLine(test.failureMessages?.[0]),
          });
        }
        // A file that failed before any test ran (an import error, a hook that threw).
        if (suite.status === "failed" && !tests.some((t) => t.status === "failed")) {
          failed++;
          failures.push({ test: `${path} (the file)`, message: firstLine(suite.message) });
        }
      }
    }
  }
  return { passed, failed, failures, missing };
}

function firstLine(text) {
  const line =
    String(text ?? "")
      .split("\n")
      .find((l) => l.trim() !== "") ?? "";
  return line.length > 200 ? `${line.slice(0, 197)}…` : line;
}

const minutes = (ms) => `${(ms / 60_000).toFixed(1)} min`;

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const sha = spawnSync("git", ["rev-parse", opts.ref], { cwd: root, encoding: "utf8" }).stdout.trim();
  if (!sha) fail(`${opts.ref} is not a commit of ${root}`);
  const dirty = spawnSync("git", ["status", "--porcelain", "--untracked-files=no"], {
    cwd: root,
    encoding: "utf8",
  }).stdout.trim();
  if (dirty && opts.ref === "HEAD")
    console.error("flake-hunt: the work tree has uncommitted changes; the clones test the commit only");
  const work = opts.dir ?? join(tmpdir(), `flake-hunt-${sha.slice(0, 8)}-${Date.now()}`);
  mkdirSync(work, { recursive: true });
  const busy = busySchedule(opts.runs, opts.busyRuns);
  const scope = opts.filter ?? "the whole suite";
  console.log(
    `flake-hunt: ${opts.runs} run(s) of ${scope} at ${sha.slice(0, 10)}, ${opts.busyRuns} beside busy.mjs (--per-core ${opts.perCore}); logs in ${work}`,
  );

  const results = [];
  for (let i = 0; i < opts.runs; i++) {
    const clone = join(work, `run-${i + 1}`);
    const log = join(work, `run-${i + 1}.log`);
    rmSync(clone, { recursive: true, force: true });
    writeFileSync(log, "");
    const started = Date.now();
    const step = async (what, command, args, cwd = clone) => {
      const code = await run(command, args, { cwd, log });
      if (code !== 0) throw new Error(`${what} exited ${code} (see ${log})`);
    };
    let outcome;
    try {
      await step("git clone", "git", ["clone", "--quiet", root, clone], work);
      await step("git checkout", "git", ["checkout", "--quiet", "--detach", sha]);
      await step("install", "bash", ["scripts/ensure-deps.sh"]);
      await step("build", "pnpm", ["build"]);
      const testArgs = [
        "exec",
        "turbo",
        "run",
        "test",
        "--force",
        "--continue",
        ...(opts.filter ? [`--filter=${opts.filter}`] : []),
      ];
      const testStarted = Date.now();
      const code = busy[i]
        ? await run(
            "node",
            ["scripts/busy.mjs", "--per-core", String(opts.perCore), "--", "pnpm", ...testArgs],
            { cwd: clone, log },
          )
        : await run("pnpm", testArgs, { cwd: clone, log });
      const reports = readReports(clone);
      // With --filter, only the chosen packages leave reports: none at all is what goes wrong.
      if (opts.filter) reports.missing = reports.passed + reports.failed === 0 ? [opts.filter] : [];
      outcome = { ...reports, code, testMs: Date.now() - testStarted };
    } catch (error) {
      outcome = {
        passed: 0,
        failed: 0,
        failures: [{ test: "(the run itself)", message: String(error.message) }],
        missing: [],
        code: 1,
        testMs: 0,
      };
    }
    const green = outcome.code === 0 && outcome.failures.length === 0 && outcome.missing.length === 0;
    const result = { run: i + 1, busy: busy[i], green, ms: Date.now() - started, ...outcome };
    results.push(result);
    console.log(
      `run ${result.run}${result.busy ? " (busy)" : ""}: ${green ? "green" : "RED"}, ${result.passed} passed, ${result.failed} failed, tests ${minutes(result.testMs)}, all ${minutes(result.ms)}${result.missing.length ? `; no report from ${result.missing.join(", ")}` : ""}`,
    );
    for (const f of result.failures) console.log(`  ✗ ${f.test}: ${f.message}`);
    if (!opts.keep) rmSync(clone, { recursive: true, force: true });
  }

  const byTest = new Map();
  for (const result of results) {
    for (const f of result.failures) {
      const seen = byTest.get(f.test) ?? { test: f.test, runs: [], first: f.message };
      seen.runs.push(result.run);
      byTest.set(f.test, seen);
    }
    if (result.missing.length > 0 || (result.code !== 0 && result.failures.length === 0)) {
      const test = result.missing.length
        ? `(no report from ${result.missing.join(", ")})`
        : "(tests exited non-zero, no failed test reported)";
      const seen = byTest.get(test) ?? {
        test,
        runs: [],
        first: `exit code ${result.code}; see run-${result.run}.log`,
      };
      seen.runs.push(result.run);
      byTest.set(test, seen);
    }
  }
  console.log("\n| run | machine | result | passed | failed | tests took |");
  console.log("| --- | --- | --- | --- | --- | --- |");
  for (const r of results) {
    console.log(
      `| ${r.run} | ${r.busy ? `busy (--per-core ${opts.perCore})` : "quiet"} | ${r.green ? "green" : "red"} | ${r.passed} | ${r.failed} | ${minutes(r.testMs)} |`,
    );
  }
  if (byTest.size === 0) console.log(`\nno failing test in ${results.length} run(s)`);
  else {
    console.log("\n| failing test | runs failed | first failure |");
    console.log("| --- | --- | --- |");
    for (const t of [...byTest.values()].sort((a, b) => b.runs.length - a.runs.length)) {
      console.log(
        `| ${t.test} | ${t.runs.length} of ${results.length} (run ${t.runs.join(", ")}) | ${t.first.replaceAll("|", "\\|")} |`,
      );
    }
  }
  if (opts.json)
    writeFileSync(opts.json, `${JSON.stringify({ sha, scope, perCore: opts.perCore, results }, null, 2)}\n`);
  process.exit(results.every((r) => r.green) ? 0 : 1);
}

if (process.argv[1] && resolve(process.argv[1]) === resolve(import.meta.filename)) await main();
