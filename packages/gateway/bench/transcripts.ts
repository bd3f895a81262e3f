// chat.history on 1,000 vs 1,000,000 messages (flat in transcript length), and appending one message.
import { randomUUID } from "node:crypto";
import { performance } from "node:perf_hooks";
import { sessionKindOf } from "@sessions/core";
import Database from "better-sqlite3";
import type { Gateway, SessionStore } from "../src/index.js";
import { check, DAY, measure, ms, note, rows, SMOKE, type Stats, since, TARGET, verdict } from "./harness.js";
import { transcriptMessage, writeTranscriptRows } from "./seed.js";

const SMALL_TRANSCRIPT = SMOKE ? 200 : 1_000;
const LARGE_TRANSCRIPT = SMOKE ? 5_000 : 1_000_000;
const HISTORY_LATENCY = SMOKE ? { warmup: 5, iterations: 50 } : { warmup: 50, iterations: 1_000 };
const APPEND_LATENCY = SMOKE ? { warmup: 10, iterations: 100 } : { warmup: 500, iterations: 5_000 };
const HISTORY_LIMIT = 50;

export async function historyBench(dbPath: string, gateway: Gateway): Promise<void> {
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
  writeTranscriptRows(db, largeKey, LARGE_TRANSCRIPT, now);
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
    HISTORY_LATENCY,
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
  const count = (n: number) => n.toLocaleString("en-US");
  historyRow(`chat.history limit 50 (${count(SMALL_TRANSCRIPT)} messages)`, small);
  historyRow(`chat.history limit 50 (${count(LARGE_TRANSCRIPT)} messages)`, large);
  rows.push({
    task: `chat.history p50 ratio ${count(LARGE_TRANSCRIPT)} / ${count(SMALL_TRANSCRIPT)}`,
    p50: `${ratio.toFixed(2)}x`,
    "p95 / total": `${(large.p95 / small.p95).toFixed(2)}x`,
    target: `≤ ${TARGET.historyRatio}x`,
    verdict: verdict(ratio <= TARGET.historyRatio),
  });
}

// Appending one message, next to a bare better-sqlite3 INSERT of the same row.

export async function appendBench(dbPath: string, store: SessionStore): Promise<void> {
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
    APPEND_LATENCY,
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
