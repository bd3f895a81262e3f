#!/usr/bin/env node
// Reads side by side: the OpenClaw gateway and `sessions-gateway serve` on the same data, measured by the same
// plain `ws` client, runs interleaved; a bare `ws` server answering with captured bytes beside them (the floor).
// See README.md here for installing OpenClaw (it needs Node 24; this script runs on the repo's Node).
//
//   node scripts/bench-openclaw/side-by-side.mjs --openclaw <dir> [--work <dir>] [--runs 3]
//     [--sessions 10001] [--messages 200000] [--calls 200] [--connects 100] [--warmup 300]
//   node scripts/bench-openclaw/side-by-side.mjs --smoke   (in `pnpm bench:smoke`: no OpenClaw, tiny data, ours
//     and the floor once, in a temporary folder: it fails when the script, the import or the client breaks)
//
// <dir> holds `node_modules/openclaw` and `node_modules/node` (npm i node@24 openclaw@2026.9.6). The first run
// seeds --work: OpenClaw's state (written in its legacy layout, imported by its own doctor, started once, then
// kept as a pristine copy) and our SQLite store (`sessions-gateway import-openclaw` of that copy). Each run resets
// OpenClaw's state from the copy (it writes to it at start), starts each gateway alone, measures it, stops it.
import { execFileSync, spawn } from "node:child_process";
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { LONG_KEY, seedOpenClawState } from "./seed-openclaw.mjs";
import { captureAnswers, measure } from "./wire-client.mjs";

const here = fileURLToPath(new URL(".", import.meta.url));
const { values } = parseArgs({
  options: {
    openclaw: { type: "string" },
    smoke: { type: "boolean", default: false },
    work: { type: "string", default: join(here, "../../.bench-openclaw") },
    runs: { type: "string", default: "3" },
    sessions: { type: "string", default: "10001" },
    messages: { type: "string", default: "200000" },
    calls: { type: "string", default: "200" },
    connects: { type: "string", default: "100" },
    warmup: { type: "string", default: "300" },
  },
});
const smoke = values.smoke;
if (smoke)
  Object.assign(values, {
    runs: "1",
    sessions: "101",
    messages: "60",
    calls: "5",
    connects: "5",
    warmup: "5",
  });
if (values.openclaw === undefined && !smoke) throw new Error("--openclaw <dir> is required (see README.md)");
const install = resolve(values.openclaw ?? ".");
const node24 = join(install, "node_modules/node/bin/node");
const openclaw = join(install, "node_modules/openclaw/openclaw.mjs");
if (!smoke)
  for (const file of [node24, openclaw])
    if (!existsSync(file)) throw new Error(`missing ${file} (see README.md)`);
const work = smoke ? mkdtempSync(join(tmpdir(), "bench-openclaw-smoke-")) : resolve(values.work);
const pristine = join(work, "openclaw.pristine");
const state = join(work, "openclaw");
const ours = join(work, "ours.db");
const cli = join(here, "../../packages/cli/dist/cli.js");
const TOKEN = "bench-token-0123456789abcdef";
const OC_PORT = 18901;
const OUR_PORT = 18902;
const FLOOR_PORT = 18903;
const log = (line) => process.stderr.write(`[side-by-side] ${line}\n`);

/** OpenClaw's environment: quiet and offline (no channels, cron, bonjour, update check or model prewarm). */
const ocEnv = (stateDir) => ({
  ...process.env,
  PATH: `${join(install, "node_modules/node/bin")}:${process.env.PATH}`,
  HOME: join(work, "home"),
  OPENCLAW_STATE_DIR: stateDir,
  OPENCLAW_CONFIG_PATH: join(stateDir, "openclaw.json"),
  OPENCLAW_GATEWAY_TOKEN: TOKEN,
  OPENCLAW_SKIP_CHANNELS: "1",
  OPENCLAW_SKIP_CRON: "1",
  OPENCLAW_DISABLE_BONJOUR: "1",
  OPENCLAW_NO_AUTO_UPDATE: "1",
  OPENCLAW_SKIP_STARTUP_MODEL_PREWARM: "1",
});

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Starts a process and resolves once `ready()` says so; rejects if it exits first. */
async function start(command, args, env, ready, label) {
  const child = spawn(command, args, { env, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  child.stdout.on("data", (d) => (output += d));
  child.stderr.on("data", (d) => (output += d));
  const exited = new Promise((r) => child.once("exit", r));
  for (let i = 0; i < 1200; i++) {
    if (child.exitCode !== null) throw new Error(`${label} exited: ${output.slice(-2000)}`);
    if (await ready(output).catch(() => false)) return { child, exited };
    await sleep(250);
  }
  child.kill("SIGKILL");
  throw new Error(`${label} not ready after 300 s: ${output.slice(-2000)}`);
}

async function stop({ child, exited }) {
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
  await exited;
  clearTimeout(timer);
}

/** OpenClaw is ready when /readyz answers 200 and no longer reports a degraded event loop (start-up work done). */
async function openclawSettled() {
  const res = await fetch(`http://127.0.0.1:${OC_PORT}/readyz`);
  return res.status === 200 && (await res.text()).includes('"eventLoop":{"degraded":false');
}

const startOpenClaw = (stateDir) =>
  start(
    node24,
    [
      openclaw,
      "gateway",
      "run",
      "--port",
      String(OC_PORT),
      "--bind",
      "loopback",
      "--auth",
      "token",
      "--token",
      TOKEN,
    ],
    ocEnv(stateDir),
    openclawSettled,
    "openclaw",
  );
const startOurs = () =>
  start(
    process.execPath,
    [cli, "serve", "--db", ours, "--port", String(OUR_PORT), "--no-console", "--log-level", "warn"],
    { ...process.env, SESSIONS_GATEWAY_TOKEN: TOKEN },
    async (out) => out.includes("listening ws://"),
    "sessions-gateway serve",
  );

async function seed() {
  if (existsSync(pristine) && existsSync(ours)) return;
  rmSync(work, { recursive: true, force: true });
  mkdirSync(join(work, "home"), { recursive: true });
  mkdirSync(state, { recursive: true });
  writeFileSync(
    join(state, "openclaw.json"),
    JSON.stringify({
      gateway: { mode: "local", port: OC_PORT, bind: "loopback", auth: { mode: "token", token: TOKEN } },
      agents: { defaults: { heartbeat: { every: "0m" } } },
      cron: { enabled: false },
      update: { checkOnStart: false },
    }),
  );
  log(`seeding ${values.sessions} sessions, ${values.messages} messages in ${LONG_KEY}`);
  seedOpenClawState(state, Number(values.sessions), Number(values.messages));
  if (smoke) {
    // No OpenClaw: ours imports the legacy layout itself.
    execFileSync(process.execPath, [cli, "import-openclaw", state, "--db", ours], { stdio: "ignore" });
    return;
  }
  log("OpenClaw's doctor imports them into its SQLite layout");
  execFileSync(
    node24,
    [
      openclaw,
      "doctor",
      "--session-sqlite",
      "import",
      "--session-sqlite-agent",
      "main",
      "--non-interactive",
      "--yes",
    ],
    { env: ocEnv(state), stdio: "ignore" },
  );
  // The first start fills in missing session titles; do it once here so every measured start is alike.
  log("OpenClaw warm-up start");
  await stop(await startOpenClaw(state));
  rmSync(join(state, "tmp"), { recursive: true, force: true });
  cpSync(state, pristine, { recursive: true });
  log("sessions-gateway import-openclaw");
  execFileSync(process.execPath, [cli, "import-openclaw", pristine, "--db", ours], { stdio: "ignore" });
}

const duMb = (path) => {
  const walk = (p) => {
    const st = statSync(p);
    return st.isDirectory() ? readdirSync(p).reduce((n, f) => n + walk(join(p, f)), 0) : st.size;
  };
  return walk(path) / 1e6;
};
const oursMb = () =>
  readdirSync(work)
    .filter((f) => f.startsWith("ours.db"))
    .reduce((n, f) => n + statSync(join(work, f)).size, 0) / 1e6;

await seed();
const opts = {
  key: LONG_KEY,
  calls: Number(values.calls),
  connects: Number(values.connects),
  warmup: Number(values.warmup),
};
const answers = join(work, "floor-answers.json");
const rows = [];
for (let run = 1; run <= Number(values.runs); run++) {
  let openclawFigures;
  if (!smoke) {
    rmSync(state, { recursive: true, force: true });
    cpSync(pristine, state, { recursive: true });
    log(`run ${run}: OpenClaw`);
    const oc = await startOpenClaw(state);
    openclawFigures = await measure(`ws://127.0.0.1:${OC_PORT}`, TOKEN, opts).finally(() => stop(oc));
  }
  log(`run ${run}: sessions-gateway serve`);
  const served = await startOurs();
  const oursFigures = await measure(`ws://127.0.0.1:${OUR_PORT}`, TOKEN, opts);
  if (!existsSync(answers))
    writeFileSync(
      answers,
      JSON.stringify(await captureAnswers(`ws://127.0.0.1:${OUR_PORT}`, TOKEN, LONG_KEY)),
    );
  await stop(served);
  log(`run ${run}: floor (bare ws server, captured answers)`);
  const floor = await start(
    process.execPath,
    [join(here, "floor-server.mjs"), answers, String(FLOOR_PORT)],
    process.env,
    async (out) => out.includes("listening"),
    "floor",
  );
  const floorFigures = await measure(`ws://127.0.0.1:${FLOOR_PORT}`, TOKEN, opts).finally(() => stop(floor));
  rows.push({ run, openclaw: openclawFigures, ours: oursFigures, floor: floorFigures });
}

const ms = (x) => (x === undefined ? "—" : `${x.toFixed(2)} ms`);
const FIGURES = [
  ["list", "`sessions.list` limit 100"],
  ["history", "`chat.history` limit 50"],
  ["connectBackToBack", "connect + hello, back to back"],
  ["connectPaced", "connect + hello, one per 50 ms"],
];
console.log("| run | measure (p50) | OpenClaw | ours | OpenClaw ÷ ours | floor (bare ws) |");
console.log("| --- | --- | --- | --- | --- | --- |");
for (const { run, openclaw: o, ours: s, floor: f } of rows)
  for (const [name, label] of FIGURES) {
    const ratio = o === undefined ? "—" : `${(o[name] / s[name]).toFixed(1)}×`;
    console.log(`| ${run} | ${label} | ${ms(o?.[name])} | ${ms(s[name])} | ${ratio} | ${ms(f[name])} |`);
  }
const openclawMb = smoke ? "—" : `${duMb(join(pristine, "agents")).toFixed(0)} MB`;
console.log(`\nstore on disk: OpenClaw ${openclawMb}, ours ${oursMb().toFixed(0)} MB`);
if (smoke) rmSync(work, { recursive: true, force: true });
