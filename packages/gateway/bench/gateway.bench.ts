// Latency of the gateway's hot paths on a real SQLite file: `pnpm bench` (or `pnpm --filter @sessions/gateway bench`).
// Targets on a 2-core machine: sessions.list over 100,000 sessions p50 ≤ 20 ms; chat.history (limit 50) p50 ≤ 5 ms
// and flat in transcript length (1,000,000 messages within 2x of 1,000); appendMessage p50 ≤ 0.5 ms; 1,000
// concurrent sub-agent spawns all announced within 10 s with peak RSS < 400 MB.
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { type SessionKind, sessionKindOf, type TranscriptMessage } from "@sessions/core";
import Database from "better-sqlite3";
import {
  type ChannelAdapterV1,
  createGateway,
  createScriptedRunner,
  createSqliteStore,
  type Gateway,
  type ScriptedAgent,
  type SessionStore,
  type StoredEntry,
} from "../src/index.js";

// ------------------------------------------------------------------ sizes and targets

const SESSIONS = 100_000;
const LIST_LIMIT = 200;
const LIST_KINDS: SessionKind[] = ["group", "main"];
const ACTIVE_MINUTES = 24 * 60;
const SMALL_TRANSCRIPT = 1_000;
const LARGE_TRANSCRIPT = 1_000_000;
const HISTORY_LIMIT = 50;
const SPAWNS = 1_000;
/** `agents.defaults.subagents.maxChildrenPerAgent` stays at its default (5), so the spawns fan out over requesters. */
const CHILDREN_PER_REQUESTER = 5;
const REQUESTERS = SPAWNS / CHILDREN_PER_REQUESTER;
const SPAWN_DEADLINE_MS = 120_000;

const TARGET = {
  listP50Ms: 20,
  historyP50Ms: 5,
  historyRatio: 2,
  appendP50Ms: 0.5,
  spawnTotalMs: 10_000,
  spawnRssMb: 400,
};

const DAY = 24 * 3600_000;
const MB = 1024 * 1024;
const wallStart = performance.now();

// ------------------------------------------------------------------ helpers

interface Stats {
  n: number;
  p50: number;
  p95: number;
  mean: number;
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
const verdict = (ok: boolean) => (ok ? "ok" : "BELOW TARGET");
const sleep = (t: number) => new Promise<void>((r) => setTimeout(r, t));
const since = (t: number) => {
  const elapsed = performance.now() - t;
  return elapsed < 1000 ? ms(elapsed) : `${(elapsed / 1000).toFixed(1)} s`;
};

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
const notes: string[] = [];
const note = (line: string) => {
  notes.push(line);
  console.log(`  ${line}`);
};

// ------------------------------------------------------------------ seed data

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
  // Skewed towards recent activity: about 10% of sessions were updated in the last day, the rest over 90 days.
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
      const thread = rand() < 0.2 ? `:thread:${i * 7}` : "";
      const to = `channel:${i}`;
      entry = {
        ...base,
        key: `agent:${agentId}:${channel}:group:${i}${thread}`,
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
        // Sub-agents kept after their announce are archived an hour later.
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

const runner = createScriptedRunner({ agents: {}, fallback: () => "ok" });

// ------------------------------------------------------------------ 4. sub-agent spawns (first: cleanest RSS)

interface SpawnOutcome {
  accepted: number;
  rejected: string[];
  announced: number;
  notDelivered: number;
  acceptedMs: number;
  announcedMs: number;
  doneMs: number;
  done: number;
  rssStartMb: number;
  peakRssMb: number;
  rssSamples: number;
  maxLoopStallMs: number;
}

async function spawnBench(dir: string): Promise<SpawnOutcome> {
  const seen = new Set<string>();
  let platformIds = 0;
  // A fake in-memory chat platform (the shape of test-kit's createFakeChannel, with O(1) idempotency).
  const adapter: ChannelAdapterV1 = {
    specVersion: 1,
    channel: "chat",
    capabilities: { threads: true },
    async deliver(_target, _message, { idempotencyKey }) {
      if (seen.has(idempotencyKey)) return { messageIds: [`dup-${idempotencyKey}`] };
      seen.add(idempotencyKey);
      return { messageIds: [`m${++platformIds}`] };
    },
  };
  const script: ScriptedAgent = (turn) => {
    if (turn.kind === "subagent") return `Result: summarised ${turn.text.length} characters of the thread.`;
    if (turn.kind === "subagent_announce")
      return "Result: the thread is summarised.\nNotes: nothing unusual.";
    return "On it.";
  };
  const gateway = createGateway({
    runner: createScriptedRunner({ agents: { main: script } }),
    store: createSqliteStore({ path: join(dir, "spawn.db") }),
    adapters: [adapter],
  });
  await gateway.ready;

  // The requesters: group chats with a delivery context, so announces are enqueued and delivered.
  const requesters: string[] = [];
  const chatRuns: string[] = [];
  for (let i = 0; i < REQUESTERS; i++) {
    const received = await gateway.receive({
      channel: "chat",
      chatType: "group",
      peerId: `room-${i}`,
      senderId: `user-${i}`,
      to: `room-${i}`,
      text: "Please fan this out to a few helpers.",
      messageId: `in-${i}`,
    });
    requesters.push(received.sessionKey);
    if (received.runId !== undefined) chatRuns.push(received.runId);
  }
  await Promise.all(chatRuns.map((runId) => gateway.agentWait({ runId, timeoutMs: 30_000 })));
  check(new Set(requesters).size === REQUESTERS, "each requester has its own session");

  // RSS every 20 ms. The scripted runner and the fake platform never wait on I/O, so the whole burst runs on
  // microtasks and a plain interval barely fires: gateway events also take a sample when 20 ms have passed.
  const rssStart = process.memoryUsage().rss;
  let peakRss = rssStart;
  let rssSamples = 0;
  let lastSample = performance.now();
  const sample = () => {
    lastSample = performance.now();
    const rss = process.memoryUsage().rss;
    rssSamples++;
    if (rss > peakRss) peakRss = rss;
  };
  // The same interval doubles as a heartbeat: the longest gap between its ticks is the longest event-loop stall.
  let lastBeat = performance.now();
  let maxGap = 0;
  const beat = () => {
    const t = performance.now();
    maxGap = Math.max(maxGap, t - lastBeat);
    lastBeat = t;
  };
  const sampler = setInterval(() => {
    beat();
    sample();
  }, 20);

  let announced = 0;
  let notDelivered = 0;
  let expected = SPAWNS;
  let allAnnounced: () => void = () => {};
  const announcedPromise = new Promise<void>((resolve) => {
    allAnnounced = resolve;
  });
  const unsubscribe = gateway.subscribe((event) => {
    if (performance.now() - lastSample >= 20) sample();
    if (event.type !== "delivery" || event.record.kind !== "subagent_announce") return;
    if (event.record.status === "delivered") announced++;
    else notDelivered++;
    if (announced + notDelivered >= expected) allAnnounced();
  });

  const t0 = performance.now();
  const results = await Promise.all(
    Array.from({ length: SPAWNS }, (_, j) =>
      gateway.callTool(requesters[j % REQUESTERS] as string, "sessions_spawn", {
        task: `Summarise thread ${j}: ${LOREM.slice(0, 60 + (j % 100))}`,
      }),
    ),
  );
  const acceptedMs = performance.now() - t0;
  sample();
  const rejected = results
    .map((r) => r as { status?: string; code?: string; error?: string })
    .filter((r) => r.status !== "accepted")
    .map((r) => `${r.status}/${r.code}: ${r.error}`);
  const accepted = SPAWNS - rejected.length;
  expected = accepted;
  if (announced + notDelivered >= expected) allAnnounced();

  let deadline: NodeJS.Timeout | undefined;
  await Promise.race([
    announcedPromise,
    new Promise<void>((resolve) => {
      deadline = setTimeout(resolve, SPAWN_DEADLINE_MS);
    }),
  ]);
  clearTimeout(deadline);
  const announcedMs = performance.now() - t0;
  sample();
  let done = 0;
  for (;;) {
    done = (await gateway.store.listSubagents({ statuses: ["done"] })).length;
    if (done >= accepted || performance.now() - t0 > SPAWN_DEADLINE_MS) break;
    await sleep(10);
  }
  const doneMs = performance.now() - t0;
  sample();
  await new Promise<void>((resolve) => setImmediate(resolve));
  beat();
  clearInterval(sampler);
  unsubscribe();
  await gateway.close({ drainMs: 5000 });
  return {
    accepted,
    rejected,
    announced,
    notDelivered,
    acceptedMs,
    announcedMs,
    doneMs,
    done,
    rssStartMb: rssStart / MB,
    peakRssMb: peakRss / MB,
    rssSamples,
    maxLoopStallMs: Math.max(0, maxGap - 20),
  };
}

// ------------------------------------------------------------------ 1. sessions.list over 100,000 sessions

async function listBench(operator: Gateway): Promise<void> {
  const store = operator.store;
  const now = Date.now();
  const rand = prng(42);
  let t = performance.now();
  const batch = 1_000;
  for (const agent of AGENTS) await store.putEntry(mainEntry(agent[0], now));
  for (let i = 0; i < SESSIONS - AGENTS.length; i += batch) {
    const writes: Promise<void>[] = [];
    for (let j = i; j < Math.min(i + batch, SESSIONS - AGENTS.length); j++)
      writes.push(store.putEntry(seedEntry(j, rand, now)));
    await Promise.all(writes);
  }
  check((await store.countEntries()) === SESSIONS, `${SESSIONS} entries seeded`);
  note(`seeded ${SESSIONS.toLocaleString("en-US")} entries through store.putEntry in ${since(t)}`);

  // The operator method (no visibility) and the model-facing tool under visibility "all", with agent-to-agent
  // on (every row visible) and off (the default: other agents' rows are filtered out after the query).
  // One process owns a SQLite file, so these gateways borrow the operator's store (closing them keeps it open).
  const borrowed: SessionStore = { ...store, close: async () => {} };
  const allVisible = createGateway({
    runner,
    store: borrowed,
    config: { tools: { sessions: { visibility: "all" }, agentToAgent: { enabled: true } } },
  });
  const allNoA2a = createGateway({
    runner,
    store: borrowed,
    config: { tools: { sessions: { visibility: "all" } } },
  });
  await Promise.all([allVisible.ready, allNoA2a.ready]);

  const params = { kinds: LIST_KINDS, activeMinutes: ACTIVE_MINUTES, limit: LIST_LIMIT };
  const listed = await operator.sessions.list(params);
  note(
    `sessions.list ${JSON.stringify(params)} → ${listed.count} rows, hasMore ${listed.hasMore}` +
      ` (newest ${new Date(listed.sessions[0]?.updatedAt ?? 0).toISOString()})`,
  );
  check(listed.count === LIST_LIMIT, `the filter matches more than ${LIST_LIMIT} sessions`);
  const tool =
    (gateway: Gateway, requesterKey = "agent:main:main") =>
    () =>
      gateway.callTool(requesterKey, "sessions_list", params);
  const viaTool = (await tool(allVisible)()) as { count: number };
  const viaToolNoA2a = (await tool(allNoA2a)()) as { count: number };
  note(`sessions_list tool → ${viaTool.count} rows (agent-to-agent on), ${viaToolNoA2a.count} (off)`);
  check(viaTool.count === LIST_LIMIT && viaToolNoA2a.count === LIST_LIMIT, "the tool fills its limit");

  t = performance.now();
  const [method, toolAll, toolNoA2a] = (await measure(
    [() => operator.sessions.list(params), tool(allVisible), tool(allNoA2a)],
    { warmup: 20, iterations: 200 },
  )) as [Stats, Stats, Stats];
  note(`sessions.list timing: ${since(t)}`);
  const listRow = (task: string, s: Stats, target: boolean) =>
    rows.push({
      task,
      p50: ms(s.p50),
      "p95 / total": ms(s.p95),
      target: target ? `p50 ≤ ${TARGET.listP50Ms} ms` : "",
      verdict: target ? verdict(s.p50 <= TARGET.listP50Ms) : "",
    });
  listRow("sessions.list (100k sessions, kinds + activeMinutes, limit 200)", method, true);
  listRow('sessions_list tool (visibility "all", agentToAgent on)', toolAll, false);
  listRow('sessions_list tool (visibility "all", agentToAgent off)', toolNoA2a, false);

  // Worst case of the same call: a requester whose agent owns almost none of the matching sessions, so every
  // matching row of the other agents is read (page by page) and filtered out after the query.
  const lonely = tool(allNoA2a, "agent:triage:main");
  const lonelyCount = ((await lonely()) as { count: number }).count;
  const [toolLonely] = (await measure([lonely], { warmup: 3, iterations: 30 })) as [Stats];
  note(`sessions_list tool as agent:triage:main (agentToAgent off) → ${lonelyCount} row(s)`);
  listRow('sessions_list tool ("all", agentToAgent off, agent with ~no sessions)', toolLonely, false);

  // The upsert behind every touch of a session (run start and end, routes, patches), into 100k entries.
  const pick = prng(7);
  const existing = (await store.listEntries({ limit: 5_000, offset: 20_000 })).map((e) => e.key);
  const [upsert] = (await measure(
    [
      async () => {
        const entry = await store.getEntry(existing[Math.floor(pick() * existing.length)] as string);
        if (entry !== undefined) await store.putEntry({ ...entry, updatedAt: Date.now() });
      },
    ],
    { warmup: 200, iterations: 2_000 },
  )) as [Stats];
  rows.push({
    task: "store.getEntry + putEntry (touch one of 100k entries)",
    p50: ms(upsert.p50),
    "p95 / total": ms(upsert.p95),
    target: "",
    verdict: "",
  });
  await Promise.all([allVisible.close({ drainMs: 0 }), allNoA2a.close({ drainMs: 0 })]);
}

// ------------------------------------------------------------------ 2. chat.history on 1,000 vs 1,000,000 messages

async function historyBench(dbPath: string, gateway: Gateway): Promise<void> {
  const store = gateway.store;
  const now = Date.now();
  const smallKey = "agent:main:discord:group:history-1k";
  const largeKey = "agent:main:discord:group:history-1m";
  for (const key of [smallKey, largeKey]) {
    await store.putEntry({
      key,
      sessionId: randomUUID(),
      agentId: "main",
      createdAt: now - DAY,
      updatedAt: now,
      channel: "discord",
      chatType: "group",
      kind: sessionKindOf(key, { chatType: "group" }),
    });
  }

  let t = performance.now();
  for (let seq = 1; seq <= SMALL_TRANSCRIPT; seq++)
    await store.appendMessage(smallKey, transcriptMessage(seq, now - DAY + seq));
  note(
    `seeded ${SMALL_TRANSCRIPT.toLocaleString("en-US")} messages through store.appendMessage in ${since(t)}`,
  );

  // A million appends one by one take minutes; write the store's exact row format in one transaction instead.
  t = performance.now();
  const db = new Database(dbPath);
  db.pragma("synchronous = NORMAL");
  db.pragma("busy_timeout = 5000");
  const insert = db.prepare("INSERT INTO messages (session_key, seq, data) VALUES (?, ?, ?)");
  db.transaction(() => {
    for (let seq = 1; seq <= LARGE_TRANSCRIPT; seq++) {
      const stored = { ...transcriptMessage(seq, now - DAY + seq), seq };
      insert.run(largeKey, seq, JSON.stringify(stored));
    }
  })();
  db.pragma("wal_checkpoint(TRUNCATE)");
  db.close();
  note(
    `seeded ${LARGE_TRANSCRIPT.toLocaleString("en-US")} messages with better-sqlite3 (one transaction) in ${since(t)}`,
  );
  check(
    (await store.countMessages(largeKey)) === LARGE_TRANSCRIPT,
    "the large transcript is readable by the store",
  );

  for (const [key, total] of [
    [smallKey, SMALL_TRANSCRIPT],
    [largeKey, LARGE_TRANSCRIPT],
  ] as const) {
    const page = await gateway.chat.history({ sessionKey: key, limit: HISTORY_LIMIT });
    check(
      page.messages.length === HISTORY_LIMIT &&
        page.totalMessages === total &&
        page.messages.at(-1)?.seq === total,
      `chat.history returns the newest ${HISTORY_LIMIT} of ${total}`,
    );
  }

  const [small, large] = (await measure(
    [
      () => gateway.chat.history({ sessionKey: smallKey, limit: HISTORY_LIMIT }),
      () => gateway.chat.history({ sessionKey: largeKey, limit: HISTORY_LIMIT }),
    ],
    { warmup: 50, iterations: 1_000 },
  )) as [Stats, Stats];
  const ratio = large.p50 / small.p50;
  const historyRow = (task: string, s: Stats) =>
    rows.push({
      task,
      p50: ms(s.p50),
      "p95 / total": ms(s.p95),
      target: `p50 ≤ ${TARGET.historyP50Ms} ms`,
      verdict: verdict(s.p50 <= TARGET.historyP50Ms),
    });
  historyRow("chat.history limit 50 (1,000 messages)", small);
  historyRow("chat.history limit 50 (1,000,000 messages)", large);
  rows.push({
    task: "chat.history p50 ratio 1,000,000 / 1,000",
    p50: `${ratio.toFixed(2)}x`,
    "p95 / total": `${(large.p95 / small.p95).toFixed(2)}x`,
    target: `≤ ${TARGET.historyRatio}x`,
    verdict: verdict(ratio <= TARGET.historyRatio),
  });
}

// ------------------------------------------------------------------ 3. appending one message

async function appendBench(dbPath: string, store: SessionStore): Promise<void> {
  const storeKey = "agent:main:discord:group:append-store";
  const bareKey = "agent:main:discord:group:append-baseline";
  const now = Date.now();
  await store.putEntry({
    key: storeKey,
    sessionId: randomUUID(),
    agentId: "main",
    createdAt: now,
    updatedAt: now,
    channel: "discord",
    chatType: "group",
    kind: sessionKindOf(storeKey, { chatType: "group" }),
  });
  // Baseline: a second connection with the store's pragmas doing only the INSERT of the same row.
  const db = new Database(dbPath);
  db.pragma("synchronous = NORMAL");
  db.pragma("busy_timeout = 5000");
  const insert = db.prepare("INSERT INTO messages (session_key, seq, data) VALUES (?, ?, ?)");
  let storeSeq = 0;
  let bareSeq = 0;
  const [viaStore, bare] = (await measure(
    [
      () => store.appendMessage(storeKey, transcriptMessage(++storeSeq, now + storeSeq)),
      () => {
        const seq = ++bareSeq;
        insert.run(bareKey, seq, JSON.stringify({ ...transcriptMessage(seq, now + seq), seq }));
      },
    ],
    { warmup: 500, iterations: 5_000 },
  )) as [Stats, Stats];
  db.close();
  check((await store.countMessages(storeKey)) === storeSeq, "every append landed");
  rows.push({
    task: "store.appendMessage (one message)",
    p50: ms(viaStore.p50),
    "p95 / total": ms(viaStore.p95),
    target: `p50 ≤ ${TARGET.appendP50Ms} ms`,
    verdict: verdict(viaStore.p50 <= TARGET.appendP50Ms),
  });
  rows.push({
    task: "baseline: bare better-sqlite3 INSERT (same row)",
    p50: ms(bare.p50),
    "p95 / total": ms(bare.p95),
    target: "",
    verdict: "",
  });
}

// ------------------------------------------------------------------ run

const dir = mkdtempSync(join(tmpdir(), "sessions-gw-bench-"));
try {
  console.log(`gateway bench (temp dir ${dir})`);
  console.log("4. sub-agent spawns");
  const spawn = await spawnBench(dir);
  note(
    `${spawn.accepted}/${SPAWNS} spawns accepted in ${ms(spawn.acceptedMs)}; ${spawn.announced} announces delivered` +
      ` (${spawn.notDelivered} not delivered) at ${ms(spawn.announcedMs)}; ${spawn.done} sub-agents done at ${ms(spawn.doneMs)}`,
  );
  note(
    `RSS ${spawn.rssStartMb.toFixed(0)} MB before the spawns, peak ${spawn.peakRssMb.toFixed(0)} MB (${spawn.rssSamples} samples);` +
      ` longest event-loop stall ${ms(spawn.maxLoopStallMs)}`,
  );
  if (spawn.rejected.length > 0) note(`rejected spawns (first 3): ${spawn.rejected.slice(0, 3).join(" | ")}`);
  const allAnnounced = spawn.announced === SPAWNS;

  const dbPath = join(dir, "sessions.db");
  const gateway = createGateway({ runner, store: createSqliteStore({ path: dbPath }) });
  await gateway.ready;
  try {
    console.log("1. sessions.list");
    await listBench(gateway);
    console.log("2. chat.history");
    await historyBench(dbPath, gateway);
    console.log("3. appendMessage");
    await appendBench(dbPath, gateway.store);
  } finally {
    await gateway.close({ drainMs: 0 });
  }

  rows.push({
    task: `${SPAWNS.toLocaleString("en-US")} concurrent sub-agent spawns → all announced`,
    p50: "",
    "p95 / total": allAnnounced
      ? ms(spawn.announcedMs)
      : `${spawn.announced}/${SPAWNS} in ${ms(spawn.announcedMs)}`,
    target: `≤ ${TARGET.spawnTotalMs / 1000} s`,
    verdict: verdict(allAnnounced && spawn.announcedMs <= TARGET.spawnTotalMs),
  });
  rows.push({
    task: "  peak RSS during the spawns",
    p50: "",
    "p95 / total": `${spawn.peakRssMb.toFixed(0)} MB`,
    target: `< ${TARGET.spawnRssMb} MB`,
    verdict: verdict(spawn.peakRssMb < TARGET.spawnRssMb),
  });
} finally {
  rmSync(dir, { recursive: true, force: true });
}

console.table(rows);
const below = rows.filter((r) => r.verdict === "BELOW TARGET").length;
console.log(
  below === 0 ? "All targets met." : `${below} result(s) BELOW TARGET (see the verdict column).`,
  `Total wall time ${since(wallStart)}.`,
);
