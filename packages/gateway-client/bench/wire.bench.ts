// What the WebSocket wire costs: @sessions/gateway-client talking to @sessions/gateway on loopback, against the
// same calls in process, on a real SQLite file: `pnpm bench` (or `pnpm --filter @sessions/gateway-client bench`).
// Imports @sessions/gateway from its dist, so build first:
//   pnpm --filter @sessions/core --filter @sessions/gateway --filter @sessions/gateway-client build
// Targets on a 2-core machine: the wire adds ≤ 0.3 ms p50 to a trivial call; sessions.list (limit 100, 10,000
// sessions) p50 ≤ 3 ms; chat.history (limit 50, 200,000 messages) p50 ≤ 2 ms; a fresh gateway process is
// listening ≤ 300 ms after its first line of user code, with RSS ≤ 120 MB. Runs/s of agent + waitRun are
// reported without a target.
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { randomBytes, randomUUID } from "node:crypto";
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { createInterface } from "node:readline";
import { fileURLToPath, pathToFileURL } from "node:url";
import { sessionKindOf, type TranscriptMessage } from "@sessions/core";
import {
  createGateway,
  createScriptedRunner,
  createSqliteStore,
  type Gateway,
  type GatewayServer,
  type StoredEntry,
} from "@sessions/gateway";
import { WebSocket, WebSocketServer } from "ws";
import { createGatewayClient, type GatewayClient } from "../src/index.js";

// ------------------------------------------------------------------ sizes and targets

const SESSIONS = 10_000;
const LIST_LIMIT = 100;
const TRANSCRIPT = 200_000;
const HISTORY_LIMIT = 50;
const RUNS = 2_000;
const CONNECTIONS = 10;
const IN_FLIGHT_PER_CONNECTION = 8;
const RUN_REPEATS = 3;
const COLD_STARTS = 5;
const LATENCY = { warmup: 100, iterations: 1_000 };
const RUN_LATENCY = { warmup: 50, iterations: 300 };

const TARGET = {
  addedP50Ms: 0.3,
  listP50Ms: 3,
  historyP50Ms: 2,
  coldReadyMs: 300,
  coldRssMb: 120,
};

const DAY = 24 * 3600_000;
const MB = 1024 * 1024;
const wallStart = performance.now();

const CHILD_SCRIPT = fileURLToPath(new URL("./cold-start.child.ts", import.meta.url));
const localRequire = createRequire(import.meta.url);
/** `node --import <tsx>`: the root devDependency, resolved to a file URL so the child's cwd does not matter. */
const TSX_LOADER = pathToFileURL(localRequire.resolve("tsx")).href;

// ------------------------------------------------------------------ helpers

interface Stats {
  n: number;
  p50: number;
  p95: number;
  mean: number;
  max: number;
}

function stats(samples: number[]): Stats {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number) =>
    sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] ?? 0;
  const sum = sorted.reduce((n, v) => n + v, 0);
  return {
    n: sorted.length,
    p50: at(0.5),
    p95: at(0.95),
    mean: sorted.length === 0 ? 0 : sum / sorted.length,
    max: sorted.at(-1) ?? 0,
  };
}

type Op = () => unknown;

/**
 * Times each op `iterations` times (after `warmup` untimed rounds), interleaving the ops round by round so drift
 * (page cache, GC, WAL checkpoints) hits them alike. Sync ops are not charged an extra microtask.
 */
async function measure(ops: Op[], options: { warmup: number; iterations: number }): Promise<Stats[]> {
  const samples = ops.map(() => [] as number[]);
  for (let round = 0; round < options.warmup + options.iterations; round++) {
    for (let k = 0; k < ops.length; k++) {
      const op = ops[k] as Op;
      const start = performance.now();
      const out = op();
      if (out instanceof Promise) await out;
      const elapsed = performance.now() - start;
      if (round >= options.warmup) samples[k]?.push(elapsed);
    }
  }
  return samples.map(stats);
}

const ms = (v: number) => `${v < 1 ? v.toFixed(3) : v < 100 ? v.toFixed(2) : v.toFixed(0)} ms`;
const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} KB`;
const verdict = (ok: boolean) => (ok ? "ok" : "BELOW TARGET");
const since = (t: number) => {
  const elapsed = performance.now() - t;
  return elapsed < 1000 ? ms(elapsed) : `${(elapsed / 1000).toFixed(1)} s`;
};
const median = (values: number[]) => stats(values).p50;

function check(condition: boolean, message: string): void {
  if (!condition) throw new Error(`bench sanity check failed: ${message}`);
}

/** Deterministic PRNG (mulberry32) so every run seeds the same mix. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function weighted<T>(rand: () => number, table: readonly (readonly [T, number])[]): T {
  let r = rand();
  for (const [value, weight] of table) {
    r -= weight;
    if (r < 0) return value;
  }
  return (table[table.length - 1] as readonly [T, number])[0];
}

interface Row {
  task: string;
  p50: string;
  "p95 / total": string;
  target: string;
  verdict: string;
}
const rows: Row[] = [];
const note = (line: string) => console.log(`  ${line}`);

function latencyRow(task: string, s: Stats, target?: { p50Ms: number; label?: string }): void {
  rows.push({
    task,
    p50: ms(s.p50),
    "p95 / total": ms(s.p95),
    target: target === undefined ? "" : `p50 ≤ ${target.p50Ms} ms${target.label ? ` (${target.label})` : ""}`,
    verdict: target === undefined ? "" : verdict(s.p50 <= target.p50Ms),
  });
}

/** better-sqlite3 as far as the seeding uses it (its types belong to @sessions/gateway's devDependencies). */
interface BareStatement {
  run(...params: unknown[]): unknown;
}
interface BareDatabase {
  pragma(source: string): unknown;
  prepare(sql: string): BareStatement;
  transaction<A extends unknown[]>(fn: (...args: A) => void): (...args: A) => void;
  close(): void;
}
type BareDatabaseConstructor = new (path: string) => BareDatabase;

/** better-sqlite3 is a dependency of @sessions/gateway, not of this package: load it from the gateway's folder. */
function loadBetterSqlite(): BareDatabaseConstructor {
  const gatewayEntry = localRequire.resolve("@sessions/gateway");
  return createRequire(gatewayEntry)("better-sqlite3") as BareDatabaseConstructor;
}

const connect = async (server: GatewayServer, token: string): Promise<GatewayClient> => {
  const client = createGatewayClient({ url: server.url, token });
  await client.ready();
  return client;
};

// ------------------------------------------------------------------ seed data (the gateway bench's mix)

const AGENTS = [
  ["main", 0.5],
  ["ops", 0.2],
  ["research", 0.15],
  ["support", 0.1],
  ["billing", 0.05],
] as const;
const CHANNELS = ["discord", "telegram", "slack", "whatsapp", "signal"] as const;
const SHAPES = [
  ["group", 0.45],
  ["direct", 0.2],
  ["subagent", 0.2],
  ["cron", 0.08],
  ["hook", 0.04],
  ["node", 0.03],
] as const;
const LOREM =
  "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore " +
  "magna aliqua. Ut enim ad minim veniam, quis nostrud exercitation ullamco laboris nisi ut aliquip ex ea commodo " +
  "consequat. Duis aute irure dolor in reprehenderit in voluptate velit esse cillum dolore eu fugiat nulla pariatur.";

function seedEntry(i: number, rand: () => number, now: number): StoredEntry {
  const agentId = weighted(rand, AGENTS);
  const shape = weighted(rand, SHAPES);
  const channel = CHANNELS[i % CHANNELS.length] as string;
  const updatedAt = now - Math.floor(rand() ** 2 * 90 * DAY);
  const base = {
    sessionId: randomUUID(),
    agentId,
    createdAt: updatedAt - Math.floor(rand() * 7 * DAY),
    updatedAt,
    model: rand() < 0.5 ? "gpt-5-mini" : "claude-sonnet",
    inputTokens: Math.floor(rand() * 50_000),
    outputTokens: Math.floor(rand() * 10_000),
    systemSent: true,
  };
  let entry: Omit<StoredEntry, "kind">;
  switch (shape) {
    case "group": {
      const to = `channel:${i}`;
      entry = {
        ...base,
        key: `agent:${agentId}:${channel}:group:${i}`,
        channel,
        chatType: "group",
        displayName: `#room-${i}`,
        deliveryContext: { channel, to, accountId: "default" },
        lastChannel: channel,
        lastTo: to,
        lastAccountId: "default",
      };
      break;
    }
    case "direct":
      entry = {
        ...base,
        key: `agent:${agentId}:${channel}:direct:user${i}`,
        channel,
        chatType: "direct",
        displayName: `User ${i}`,
        deliveryContext: { channel, to: `user${i}`, accountId: "default" },
        lastChannel: channel,
        lastTo: `user${i}`,
      };
      break;
    case "subagent":
      entry = {
        ...base,
        key: `agent:${agentId}:subagent:${randomUUID()}`,
        spawnedBy: `agent:${agentId}:main`,
        spawnDepth: 1,
        label: `task ${i}`,
        ...(updatedAt < now - DAY ? { archivedAt: updatedAt + 3600_000 } : {}),
      };
      break;
    case "cron":
      entry = { ...base, key: `agent:${agentId}:cron:job-${i}`, label: `nightly ${i}` };
      break;
    case "hook":
      entry = { ...base, key: `agent:${agentId}:hook:webhook-${i}` };
      break;
    case "node":
      entry = { ...base, key: `agent:${agentId}:node:node-${i}` };
      break;
  }
  return {
    ...entry,
    kind: sessionKindOf(entry.key, entry.chatType === undefined ? {} : { chatType: entry.chatType }),
  };
}

function mainEntry(agentId: string, now: number): StoredEntry {
  const key = `agent:${agentId}:main`;
  return {
    key,
    sessionId: randomUUID(),
    agentId,
    createdAt: now - 30 * DAY,
    updatedAt: now - 60_000,
    kind: sessionKindOf(key),
  };
}

function transcriptMessage(i: number, ts: number): TranscriptMessage {
  return i % 2 === 1
    ? {
        role: "user",
        content: `Question ${i}: ${LOREM.slice(0, 40 + (i % 120))}`,
        ts,
        sender: { id: "u42", name: "Ada", channel: "discord" },
      }
    : {
        role: "assistant",
        content: `Answer ${i}: ${LOREM.slice(0, 80 + (i % 200))}`,
        ts,
        runId: `run-${i >> 1}`,
      };
}

// ------------------------------------------------------------------ 1. per-call overhead of the wire

/** Transport floor: a bare `ws` server echoing a frame of the same size, no protocol, JSON or validation. */
async function echoServer(response: string) {
  const wss = new WebSocketServer({ host: "127.0.0.1", port: 0 });
  await once(wss, "listening");
  wss.on("connection", (socket) => socket.on("message", () => socket.send(response)));
  const ws = new WebSocket(`ws://127.0.0.1:${(wss.address() as AddressInfo).port}`);
  await once(ws, "open");
  let answered: (() => void) | undefined;
  ws.on("message", () => answered?.());
  return {
    roundTrip: (request: string) =>
      new Promise<void>((resolve) => {
        answered = resolve;
        ws.send(request);
      }),
    async close() {
      ws.close();
      await once(ws, "close");
      await new Promise<void>((resolve) => wss.close(() => resolve()));
    },
  };
}

async function overheadBench(gateway: Gateway, client: GatewayClient): Promise<void> {
  const local = await gateway.call("agents.list", {});
  const remote = await client.agents.list();
  check(
    JSON.stringify(local) === JSON.stringify(remote),
    "agents.list is the same in process and over the wire",
  );
  const listLocal = await gateway.sessions.list({ limit: 1 });
  const listRemote = await client.sessions.list({ limit: 1 });
  check(listLocal.count === 1 && listRemote.count === 1, "sessions.list limit 1 returns one row");

  const request = JSON.stringify({ type: "req", id: "1000", method: "agents.list", params: {} });
  const response = JSON.stringify({ type: "res", id: "1000", ok: true, payload: remote });
  const echo = await echoServer(response);
  const t = performance.now();
  const [inProcess, wire, bare, listIn, listWire] = (await measure(
    [
      () => gateway.call("agents.list", {}),
      () => client.agents.list(),
      () => echo.roundTrip(request),
      () => gateway.sessions.list({ limit: 1 }),
      () => client.sessions.list({ limit: 1 }),
    ],
    LATENCY,
  )) as [Stats, Stats, Stats, Stats, Stats];
  await echo.close();
  note(
    `timed ${LATENCY.iterations} rounds in ${since(t)}; agents.list frames: request ${request.length} B, response ${response.length} B`,
  );

  const added = wire.p50 - inProcess.p50;
  latencyRow("agents.list in process (gateway.call)", inProcess);
  latencyRow("agents.list over the wire (client.agents.list)", wire);
  rows.push({
    task: "  added by the wire (p50 wire − p50 in process)",
    p50: ms(added),
    "p95 / total": ms(wire.p95 - inProcess.p95),
    target: `≤ ${TARGET.addedP50Ms} ms`,
    verdict: verdict(added <= TARGET.addedP50Ms),
  });
  latencyRow("  baseline: bare ws echo round trip (same frame sizes)", bare);
  latencyRow("sessions.list limit 1 in process (5 sessions)", listIn);
  latencyRow("sessions.list limit 1 over the wire (5 sessions)", listWire);
  rows.push({
    task: "  added by the wire",
    p50: ms(listWire.p50 - listIn.p50),
    "p95 / total": ms(listWire.p95 - listIn.p95),
    target: "",
    verdict: "",
  });
}

// ------------------------------------------------------------------ 2. sessions.list over 10,000 sessions

async function listBench(gateway: Gateway, client: GatewayClient): Promise<void> {
  const store = gateway.store;
  const now = Date.now();
  const rand = prng(42);
  const t = performance.now();
  const batch = 1_000;
  const existing = await store.countEntries();
  for (let i = 0; i < SESSIONS - existing; i += batch) {
    const writes: Promise<void>[] = [];
    for (let j = i; j < Math.min(i + batch, SESSIONS - existing); j++)
      writes.push(store.putEntry(seedEntry(j, rand, now)));
    await Promise.all(writes);
  }
  check((await store.countEntries()) === SESSIONS, `${SESSIONS} entries seeded`);
  note(`seeded ${SESSIONS.toLocaleString("en-US")} entries through store.putEntry in ${since(t)}`);

  const params = { limit: LIST_LIMIT };
  const local = await gateway.sessions.list(params);
  const remote = await client.sessions.list(params);
  check(remote.count === LIST_LIMIT && remote.hasMore, `sessions.list returns a full page of ${LIST_LIMIT}`);
  check(
    remote.sessions[0]?.key === local.sessions[0]?.key &&
      remote.sessions.at(-1)?.key === local.sessions.at(-1)?.key,
    "the wire returns the same page",
  );
  note(`sessions.list limit ${LIST_LIMIT} response: ${kb(JSON.stringify(remote).length)} of JSON`);

  const [inProcess, wire] = (await measure(
    [() => gateway.sessions.list(params), () => client.sessions.list(params)],
    { warmup: 50, iterations: 500 },
  )) as [Stats, Stats];
  latencyRow(`sessions.list limit ${LIST_LIMIT} in process (10k sessions)`, inProcess);
  latencyRow(`sessions.list limit ${LIST_LIMIT} over the wire (10k sessions)`, wire, {
    p50Ms: TARGET.listP50Ms,
    label: "OpenClaw 2026.9: 25–30 ms",
  });
}

// ------------------------------------------------------------------ 3. chat.history on 200,000 messages

async function historyBench(dbPath: string, gateway: Gateway, client: GatewayClient): Promise<void> {
  const now = Date.now();
  const key = "agent:main:discord:group:history-200k";
  await gateway.store.putEntry({
    key,
    sessionId: randomUUID(),
    agentId: "main",
    createdAt: now - DAY,
    updatedAt: now,
    channel: "discord",
    chatType: "group",
    kind: sessionKindOf(key, { chatType: "group" }),
  });

  // Appends one by one take a while; write the store's exact row format in one transaction instead.
  const t = performance.now();
  const Database = loadBetterSqlite();
  const db = new Database(dbPath);
  db.pragma("synchronous = NORMAL");
  db.pragma("busy_timeout = 5000");
  const insert = db.prepare("INSERT INTO messages (session_key, seq, data) VALUES (?, ?, ?)");
  db.transaction(() => {
    for (let seq = 1; seq <= TRANSCRIPT; seq++) {
      const stored = { ...transcriptMessage(seq, now - DAY + seq), seq };
      insert.run(key, seq, JSON.stringify(stored));
    }
  })();
  db.pragma("wal_checkpoint(TRUNCATE)");
  db.close();
  note(
    `seeded ${TRANSCRIPT.toLocaleString("en-US")} messages with better-sqlite3 (one transaction) in ${since(t)}`,
  );
  check((await gateway.store.countMessages(key)) === TRANSCRIPT, "the transcript is readable by the store");

  const params = { sessionKey: key, limit: HISTORY_LIMIT };
  const page = await client.chat.history(params);
  check(
    page.messages.length === HISTORY_LIMIT &&
      page.totalMessages === TRANSCRIPT &&
      page.messages.at(-1)?.seq === TRANSCRIPT,
    `chat.history returns the newest ${HISTORY_LIMIT} of ${TRANSCRIPT}`,
  );
  note(`chat.history limit ${HISTORY_LIMIT} response: ${kb(JSON.stringify(page).length)} of JSON`);

  const [inProcess, wire] = (await measure(
    [() => gateway.chat.history(params), () => client.chat.history(params)],
    { warmup: 50, iterations: 500 },
  )) as [Stats, Stats];
  latencyRow(`chat.history limit ${HISTORY_LIMIT} in process (200k messages)`, inProcess);
  latencyRow(`chat.history limit ${HISTORY_LIMIT} over the wire (200k messages)`, wire, {
    p50Ms: TARGET.historyP50Ms,
    label: "OpenClaw: 16.5 ms",
  });
}

// ------------------------------------------------------------------ 4. runs per second (agent + waitRun)

interface RunApi {
  start(sessionKey: string, idempotencyKey: string): Promise<string>;
  wait(runId: string): Promise<string>;
}

const viaClient = (client: GatewayClient): RunApi => ({
  start: async (sessionKey, idempotencyKey) =>
    (await client.agent({ message: "ping", sessionKey, idempotencyKey })).runId,
  wait: async (runId) => (await client.waitRun(runId, { timeoutMs: 30_000 })).status,
});

const inProcessApi = (gateway: Gateway): RunApi => ({
  start: async (sessionKey, idempotencyKey) =>
    (await gateway.agent({ message: "ping", sessionKey, idempotencyKey })).runId,
  wait: async (runId) => (await gateway.agentWait({ runId, timeoutMs: 30_000 })).status,
});

/**
 * `total` runs spread over the connections, `inFlight` at a time per connection. Every in-flight slot has its own
 * session key (runs of one session queue on its lane), reused run after run.
 */
async function runBatch(apis: RunApi[], total: number, inFlight: number, tag: string) {
  const perApi = Math.ceil(total / apis.length);
  let failed = 0;
  let done = 0;
  const t0 = performance.now();
  await Promise.all(
    apis.flatMap((api, c) =>
      Array.from({ length: inFlight }, async (_, w) => {
        const sessionKey = `bench:${tag}:c${c}:w${w}`;
        for (let i = w; i < perApi; i += inFlight) {
          const runId = await api.start(sessionKey, `${tag}-${c}-${i}`);
          const status = await api.wait(runId);
          if (status === "ok") done++;
          else failed++;
        }
      }),
    ),
  );
  const elapsed = performance.now() - t0;
  check(failed === 0, `${tag}: ${failed} run(s) did not end ok`);
  return { runs: done, elapsed, perSecond: (done / elapsed) * 1000 } satisfies Throughput;
}

interface Throughput {
  runs: number;
  elapsed: number;
  perSecond: number;
}

async function runsBench(dir: string): Promise<void> {
  const token = randomBytes(24).toString("hex");
  const gateway = createGateway({
    runner: createScriptedRunner({ agents: {}, fallback: () => "ok" }),
    store: createSqliteStore({ path: join(dir, "runs.db") }),
  });
  const server = await gateway.listen({ port: 0, auth: { token } });
  const open = new Set<GatewayClient>();
  const connectRun = async () => {
    const client = await connect(server, token);
    open.add(client);
    return client;
  };
  const closeAll = async () => {
    await Promise.all([...open].map((client) => client.close()));
    open.clear();
  };
  const local = inProcessApi(gateway);
  try {
    // Warm-up, then the latency of one run at a time (in process and over one connection, interleaved).
    await runBatch([local], 300, IN_FLIGHT_PER_CONNECTION, "warm-local");
    const first = viaClient(await connectRun());
    await runBatch([first], 300, IN_FLIGHT_PER_CONNECTION, "warm-wire");
    let seq = 0;
    const serial = (api: RunApi, tag: string) => async () => {
      seq++;
      const runId = await api.start(`bench:serial-${tag}`, `serial-${tag}-${seq}`);
      check((await api.wait(runId)) === "ok", "serial run ended ok");
    };
    const [oneLocal, oneWire] = (await measure(
      [serial(local, "local"), serial(first, "wire")],
      RUN_LATENCY,
    )) as [Stats, Stats];
    await closeAll();
    latencyRow("agent + agentWait in process, one at a time (latency)", oneLocal);
    latencyRow("agent + waitRun over the wire, one at a time (latency)", oneWire);

    // Throughput: each configuration RUN_REPEATS times, interleaved, so disk and checkpoint noise hits all alike.
    const results = { local: [] as Throughput[], single: [] as Throughput[], wide: [] as Throughput[] };
    const multi: Throughput[] = [];
    let eventsPerRunSingle = 0;
    let eventsPerRunMulti = 0;
    for (let rep = 0; rep < RUN_REPEATS; rep++) {
      // In process while no connection is open.
      results.local.push(await runBatch([local], RUNS, IN_FLIGHT_PER_CONNECTION, `local-${rep}`));

      const one = await connectRun();
      let events = 0;
      const off = one.on("*", () => events++);
      const api = viaClient(one);
      results.single.push(await runBatch([api], RUNS, IN_FLIGHT_PER_CONNECTION, `single-${rep}`));
      eventsPerRunSingle = events / RUNS;
      off();
      results.wide.push(
        await runBatch([api], RUNS, IN_FLIGHT_PER_CONNECTION * CONNECTIONS, `single-wide-${rep}`),
      );
      await closeAll();

      const clients: GatewayClient[] = [];
      for (let c = 0; c < CONNECTIONS; c++) clients.push(await connectRun());
      let received = 0;
      const offs = clients.map((client) => client.on("*", () => received++));
      multi.push(await runBatch(clients.map(viaClient), RUNS, IN_FLIGHT_PER_CONNECTION, `multi-${rep}`));
      eventsPerRunMulti = received / RUNS;
      for (const unsubscribe of offs) unsubscribe();
      await closeAll();
    }

    const throughputRow = (task: string, reps: Throughput[]) => {
      const perSecond = stats(reps.map((r) => r.perSecond));
      const low = Math.min(...reps.map((r) => r.perSecond));
      rows.push({
        task,
        p50: "",
        "p95 / total": `${perSecond.p50.toFixed(0)} runs/s (${low.toFixed(0)}–${perSecond.max.toFixed(0)})`,
        target: "",
        verdict: "",
      });
    };
    throughputRow(`in process: agent + agentWait, ${IN_FLIGHT_PER_CONNECTION} in flight`, results.local);
    throughputRow(`1 connection: agent + waitRun, ${IN_FLIGHT_PER_CONNECTION} in flight`, results.single);
    throughputRow(
      `1 connection: agent + waitRun, ${IN_FLIGHT_PER_CONNECTION * CONNECTIONS} in flight`,
      results.wide,
    );
    throughputRow(
      `${CONNECTIONS} connections: agent + waitRun, ${IN_FLIGHT_PER_CONNECTION} in flight each`,
      multi,
    );
    note(
      `runs/s: median of ${RUN_REPEATS} batches of ${RUNS.toLocaleString("en-US")} runs (min–max in brackets)`,
    );
    note(
      `events received per run: ${eventsPerRunSingle.toFixed(1)} with 1 connection;` +
        ` ${eventsPerRunMulti.toFixed(1)} in total with ${CONNECTIONS} connections` +
        ` (a connection gets the chat/agent events of the runs it started, unless it subscribes to more)`,
    );
  } finally {
    await closeAll();
    await gateway.close({ drainMs: 1000 });
  }
}

// ------------------------------------------------------------------ 5. cold start in a child process

interface ChildListening {
  type: "listening";
  url: string;
  firstLineMs: number;
  importMs: number;
  gatewayReadyMs: number;
  listenMs: number;
  readyMs: number;
  sinceProcessStartMs: number;
  rss: number;
}

interface ColdStart {
  child: ChildListening;
  spawnToReadyMs: number;
  rssAfterClientMb: number;
}

async function coldStart(dir: string, i: number): Promise<ColdStart> {
  const token = randomBytes(24).toString("hex");
  const dbPath = join(dir, `cold-${i}.db`);
  const t0 = performance.now();
  const child: ChildProcessWithoutNullStreams = spawn(
    process.execPath,
    ["--import", TSX_LOADER, CHILD_SCRIPT, dbPath, token],
    { stdio: ["pipe", "pipe", "pipe"] },
  );
  let stderr = "";
  child.stderr.setEncoding("utf8");
  child.stderr.on("data", (chunk: string) => {
    stderr += chunk;
  });
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const nextLine = async (what: string): Promise<Record<string, unknown>> => {
    let timer: NodeJS.Timeout | undefined;
    const result = await Promise.race([
      lines.next(),
      exited.then((code) => ({ exited: code })),
      new Promise<{ timedOut: true }>((resolve) => {
        timer = setTimeout(() => resolve({ timedOut: true }), 30_000);
      }),
    ]);
    clearTimeout(timer);
    if ("value" in result && typeof result.value === "string")
      return JSON.parse(result.value) as Record<string, unknown>;
    throw new Error(`cold-start child: no ${what} line (${JSON.stringify(result)}): ${stderr.trim()}`);
  };
  try {
    const listening = (await nextLine("listening")) as unknown as ChildListening;
    const client = createGatewayClient({ url: listening.url, token, reconnect: false });
    await client.ready();
    const spawnToReadyMs = performance.now() - t0;
    check((await client.agents.list()).defaultId === "main", "the cold gateway answers");
    await client.close();
    child.stdin.write("stop\n");
    const stopping = await nextLine("stopping");
    const code = await exited;
    check(code === 0, `cold-start child exited ${code}: ${stderr.trim()}`);
    return { child: listening, spawnToReadyMs, rssAfterClientMb: Number(stopping.rss) / MB };
  } finally {
    if (child.exitCode === null) child.kill();
  }
}

async function coldStartBench(dir: string): Promise<void> {
  const t = performance.now();
  await coldStart(dir, 0); // warm-up: the page cache and tsx's transform cache
  const runs: ColdStart[] = [];
  for (let i = 1; i <= COLD_STARTS; i++) runs.push(await coldStart(dir, i));
  note(`${COLD_STARTS} cold starts (+1 warm-up) in ${since(t)}`);
  const pick = (f: (r: ColdStart) => number) => stats(runs.map(f));
  const ready = pick((r) => r.child.readyMs);
  const rssListening = pick((r) => r.child.rss / MB);
  const rssAfter = pick((r) => r.rssAfterClientMb);
  const maxRss = Math.max(rssListening.max, rssAfter.max);
  rows.push({
    task: `cold start: child's first line → listening (max of ${COLD_STARTS} in p95 column)`,
    p50: ms(ready.p50),
    "p95 / total": ms(ready.max),
    target: `≤ ${TARGET.coldReadyMs} ms`,
    verdict: verdict(ready.p50 <= TARGET.coldReadyMs),
  });
  for (const [task, s] of [
    ["  import @sessions/gateway (core, zod, ws, better-sqlite3)", pick((r) => r.child.importMs)],
    ["  createGateway + ready on a fresh SQLite file", pick((r) => r.child.gatewayReadyMs)],
    ["  gateway.listen", pick((r) => r.child.listenMs)],
    ["  process start → first line (Node + tsx; informational)", pick((r) => r.child.firstLineMs)],
    ["cold start: parent spawn → client ready() (informational)", pick((r) => r.spawnToReadyMs)],
  ] as const) {
    rows.push({ task, p50: ms(s.p50), "p95 / total": ms(s.max), target: "", verdict: "" });
  }
  rows.push({
    task: "cold start: RSS at listening / after serving a client",
    p50: `${rssListening.p50.toFixed(0)} / ${rssAfter.p50.toFixed(0)} MB`,
    "p95 / total": `max ${maxRss.toFixed(0)} MB`,
    target: `≤ ${TARGET.coldRssMb} MB`,
    verdict: verdict(maxRss <= TARGET.coldRssMb),
  });
  note(
    `child process start → listening p50 ${ms(median(runs.map((r) => r.child.sinceProcessStartMs)))}` +
      " (includes Node and tsx startup); the child's RSS includes tsx's loader",
  );
}

// ------------------------------------------------------------------ run

const dir = mkdtempSync(join(tmpdir(), "sessions-wire-bench-"));
try {
  console.log(`wire bench (temp dir ${dir})`);
  console.log("5. cold start (first, while the machine is quiet)");
  await coldStartBench(dir);

  const dbPath = join(dir, "sessions.db");
  const token = randomBytes(24).toString("hex");
  const gateway = createGateway({
    runner: createScriptedRunner({ agents: {}, fallback: () => "ok" }),
    store: createSqliteStore({ path: dbPath }),
  });
  const server = await gateway.listen({ port: 0, auth: { token } });
  let client: GatewayClient | undefined;
  try {
    client = await connect(server, token);
    const now = Date.now();
    for (const agent of AGENTS) await gateway.store.putEntry(mainEntry(agent[0], now));
    console.log("1. per-call overhead");
    await overheadBench(gateway, client);
    console.log("2. sessions.list");
    await listBench(gateway, client);
    console.log("3. chat.history");
    await historyBench(dbPath, gateway, client);
  } finally {
    await client?.close();
    await gateway.close({ drainMs: 0 });
  }

  console.log("4. runs per second");
  await runsBench(dir);
} finally {
  rmSync(dir, { recursive: true, force: true });
}

console.table(rows);
const below = rows.filter((r) => r.verdict === "BELOW TARGET").length;
console.log(
  below === 0 ? "All targets met." : `${below} result(s) BELOW TARGET (see the verdict column).`,
  `Total wall time ${since(wallStart)}.`,
);
