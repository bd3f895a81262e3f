// 2. sessions.list over 10,000 sessions and 3. chat.history on 200,000 messages, in process against over the wire.
import { randomUUID } from "node:crypto";
import { performance } from "node:perf_hooks";
import { sessionKindOf } from "@sessions/core";
import type { Gateway } from "@sessions/gateway";
import type { GatewayClient } from "../src/index.js";
import {
  check,
  DAY,
  HISTORY_LIMIT,
  kb,
  LIST_LIMIT,
  latencyRow,
  measure,
  note,
  prng,
  READ_LATENCY,
  SESSIONS,
  type Stats,
  since,
  TARGET,
  TRANSCRIPT,
} from "./harness.js";
import { loadBetterSqlite, seedEntry, writeTranscriptRows } from "./seed.js";

export async function listBench(gateway: Gateway, client: GatewayClient): Promise<void> {
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
    READ_LATENCY,
  )) as [Stats, Stats];
  latencyRow(
    `sessions.list limit ${LIST_LIMIT} in process (${SESSIONS.toLocaleString("en-US")} sessions)`,
    inProcess,
  );
  latencyRow(
    `sessions.list limit ${LIST_LIMIT} over the wire (${SESSIONS.toLocaleString("en-US")} sessions)`,
    wire,
    {
      p50Ms: TARGET.listP50Ms,
      label: "OpenClaw 2026.9: 25–30 ms",
    },
  );
}

// ------------------------------------------------------------------ 3. chat.history on 200,000 messages

export async function historyBench(dbPath: string, gateway: Gateway, client: GatewayClient): Promise<void> {
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
  writeTranscriptRows(db, key, TRANSCRIPT, now);
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
    READ_LATENCY,
  )) as [Stats, Stats];
  latencyRow(
    `chat.history limit ${HISTORY_LIMIT} in process (${TRANSCRIPT.toLocaleString("en-US")} messages)`,
    inProcess,
  );
  latencyRow(
    `chat.history limit ${HISTORY_LIMIT} over the wire (${TRANSCRIPT.toLocaleString("en-US")} messages)`,
    wire,
    {
      p50Ms: TARGET.historyP50Ms,
      label: "OpenClaw: 16.5 ms",
    },
  );
}
