#!/usr/bin/env node
// The headline figures of one checkout, measured the way users run it: its shipped `sessions-gateway serve` (a real
// SQLite file, an echo runner) driven over the wire by this checkout's @sessions/gateway-client, and its
// @sessions/gateway in process. Prints one JSON line of figures (and progress on stderr). `bench-compare.mjs` runs
// it on a base and on this checkout, interleaved.
//
//   node --import tsx scripts/bench-headline.mjs [--root <checkout>] [--scale smoke|small|full]
//
// Figures: runs/s through serve (`chat.send` then `agent.wait`, 200 in flight over 100 sessions) and in process
// (`gateway.call("agent")` then `agent.wait`, the same shape); `sessions.list` limit 100 p50 over the seeded
// sessions (the gateway bench's mix, its seed.ts); `chat.history` limit 50 p50 on the long transcript; connect +
// hello p50 (a new client each time, through serve); the store's size on disk once seeded. The checkout must be
// built (`pnpm build`).
import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";

const here = dirname(fileURLToPath(import.meta.url));
const { values } = parseArgs({
  options: {
    root: { type: "string", default: join(here, "..") },
    scale: { type: "string", default: "small" },
  },
});
const SIZES = {
  smoke: { sessions: 200, messages: 500, runs: 200, warmup: 50, reads: 30, connects: 10 },
  small: { sessions: 2_000, messages: 20_000, runs: 3_000, warmup: 500, reads: 300, connects: 100 },
  full: { sessions: 10_000, messages: 200_000, runs: 10_000, warmup: 1_000, reads: 1_000, connects: 300 },
};
const size = SIZES[values.scale];
if (size === undefined) throw new Error(`--scale must be smoke, small or full (got ${values.scale})`);
const root = resolve(values.root);
const IN_FLIGHT = 200;
const RUN_SESSIONS = 100;
const LIST_LIMIT = 100;
const HISTORY_LIMIT = 50;
const HISTORY_KEY = "agent:main:discord:group:history";

const log = (line) => process.stderr.write(`[headline ${root}] ${line}\n`);
const dist = (pkg) => import(pathToFileURL(join(root, "packages", pkg, "dist/index.js")).href);
// The measuring stick is this checkout's client, whatever the checkout measured.
const { createGatewayClient } = await import(
  pathToFileURL(join(here, "../packages/gateway-client/dist/index.js")).href
);
const gatewayPackage = await dist("gateway");
// The data: the gateway bench's seed (TypeScript: this script runs under `node --import tsx`).
const benchFile = (name) => pathToFileURL(join(here, "../packages/gateway/bench", name)).href;
const { seedEntry, transcriptMessage } = await import(benchFile("seed.ts")).catch((error) => {
  throw new Error(
    `run this script with \`node --import tsx\` (it reads packages/gateway/bench/seed.ts): ${error}`,
  );
});
const { prng } = await import(benchFile("kit.ts"));

const p50 = (samples) => {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
};
async function timed(times, call) {
  const samples = [];
  for (let i = 0; i < times; i++) {
    const at = performance.now();
    await call(i);
    samples.push(performance.now() - at);
  }
  return samples;
}

/** `count` runs, `IN_FLIGHT` at a time over `RUN_SESSIONS` sessions: `start(i)` then `wait(runId)`. */
async function runsPerSecond(count, prefix, start, wait) {
  let next = 0;
  const at = performance.now();
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      for (let i = next++; i < count; i = next++) {
        const runId = await start(`agent:main:bench-${i % RUN_SESSIONS}`, `${prefix}-${i}`);
        const done = await wait(runId);
        if (done.status !== "ok") throw new Error(`run ${runId} ended ${done.status}: ${done.error ?? ""}`);
      }
    }),
  );
  return count / ((performance.now() - at) / 1000);
}

/**
 * The sessions and the long transcript the reads are measured on: the gateway bench's realistic mix (seed.ts:
 * group rooms, direct chats, sub-agents, cron jobs… with what real entries carry), written through the checkout's
 * own store.
 */
async function seed(path) {
  const store = gatewayPackage.createSqliteStore({ path });
  const now = Date.now();
  const rand = prng(42);
  for (let from = 0; from < size.sessions; from += 1_000) {
    await store.transaction(async (tx) => {
      for (let i = from; i < Math.min(size.sessions, from + 1_000); i++)
        await tx.putEntry(seedEntry(i, rand, now));
    });
  }
  await store.putEntry({ ...seedEntry(size.sessions, rand, now), key: HISTORY_KEY, updatedAt: now });
  for (let from = 0; from < size.messages; from += 2_000) {
    await store.transaction(async (tx) => {
      for (let i = from; i < Math.min(size.messages, from + 2_000); i++) {
        await tx.appendMessage(HISTORY_KEY, transcriptMessage(i + 1, now - (size.messages - i) * 1_000));
      }
    });
  }
  await store.close();
}

/** `serve` on `path` with the echo runner in `dir`; resolves once it listens. */
function startServe(dir, path) {
  const child = spawn(
    process.execPath,
    [
      join(root, "apps/gateway/bin.js"),
      "serve",
      "--port",
      "0",
      "--db",
      path,
      "--runner",
      join(dir, "echo.mjs"),
    ],
    { env: { ...process.env, SESSIONS_GATEWAY_TOKEN: "" }, stdio: ["ignore", "pipe", "pipe"] },
  );
  let out = "";
  const url = new Promise((resolveUrl, reject) => {
    const read = (chunk) => {
      out += chunk;
      const match = /listening (ws:\/\/\S+)/.exec(out);
      if (match) resolveUrl(match[1]);
    };
    child.stdout.on("data", read);
    child.stderr.on("data", read);
    child.once("exit", (code) => reject(new Error(`serve exited (${code}) before listening:\n${out}`)));
  });
  const stop = () =>
    new Promise((done) => {
      if (child.exitCode !== null) return done();
      child.once("exit", () => done());
      child.kill("SIGTERM");
    });
  return { url, stop };
}

const sizeOnDisk = (dir) =>
  readdirSync(dir)
    .filter((name) => name.startsWith("sessions.db"))
    .reduce((sum, name) => sum + statSync(join(dir, name)).size, 0);

const dir = mkdtempSync(join(tmpdir(), "sessions-headline-"));
const figures = {};
try {
  writeFileSync(join(dir, "echo.mjs"), 'export default { async run() { return { reply: "ok" }; } };\n');
  const path = join(dir, "sessions.db");
  const seeding = performance.now();
  await seed(path);
  log(
    `seeded ${size.sessions} sessions and ${size.messages} messages in ${(performance.now() - seeding).toFixed(0)} ms`,
  );
  figures.storeMb = sizeOnDisk(dir) / 1024 / 1024;

  const serve = startServe(dir, path);
  let client;
  try {
    const url = await serve.url;
    client = createGatewayClient({ url, reconnect: false });
    await client.ready();
    const list = await client.sessions.list({ limit: LIST_LIMIT });
    if (list.sessions.length !== LIST_LIMIT)
      throw new Error(`sessions.list gave ${list.sessions.length} rows`);
    figures.listP50Ms = p50(await timed(size.reads, () => client.sessions.list({ limit: LIST_LIMIT })));
    const history = { sessionKey: HISTORY_KEY, limit: HISTORY_LIMIT };
    if ((await client.chat.history(history)).messages.length !== HISTORY_LIMIT)
      throw new Error("chat.history did not return a full page");
    figures.historyP50Ms = p50(await timed(size.reads, () => client.chat.history(history)));
    figures.connectP50Ms = p50(
      await timed(size.connects, async () => {
        const fresh = createGatewayClient({ url, reconnect: false });
        await fresh.ready();
        await fresh.close();
      }),
    );
    const start = async (sessionKey, key) =>
      (await client.chat.send({ sessionKey, message: "hi", idempotencyKey: key })).runId;
    const wait = (runId) => client.agentWait({ runId, timeoutMs: 120_000 });
    await runsPerSecond(size.warmup, "warm", start, wait);
    figures.serveRunsPerSec = await runsPerSecond(size.runs, "run", start, wait);
  } finally {
    await client?.close();
    await serve.stop();
  }

  // In process: the same runs on the checkout's gateway and its SQLite store, in this process.
  const gateway = gatewayPackage.createGateway({
    runner: gatewayPackage.createScriptedRunner({ agents: {}, fallback: () => "ok" }),
    store: gatewayPackage.createSqliteStore({ path: join(dir, "in-process.db") }),
  });
  try {
    const start = async (sessionKey, key) =>
      (await gateway.call("agent", { sessionKey, message: "hi", idempotencyKey: key })).runId;
    const wait = (runId) => gateway.call("agent.wait", { runId, timeoutMs: 120_000 });
    await runsPerSecond(size.warmup, "warm", start, wait);
    figures.inProcessRunsPerSec = await runsPerSecond(size.runs, "run", start, wait);
  } finally {
    await gateway.close();
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
process.stdout.write(`${JSON.stringify(figures)}\n`);
