import type { SessionStore, StoredEntry } from "@sessions/gateway";
import pg from "pg";

/** The data both stores get: `sessions` entries (9 in 10 groups), one transcript of `big` and one of 1,000. */
export interface SeedShape {
  sessions: number;
  big: number;
  small: number;
}

export const BIG_KEY = "agent:main:discord:group:big";
export const SMALL_KEY = "agent:main:discord:group:small";
const DAY = 24 * 3600_000;

function entryOf(i: number, now: number): StoredEntry {
  const group = i % 10 !== 0;
  const key = group ? `agent:main:discord:group:g${i}` : `agent:main:discord:direct:u${i}`;
  return {
    key,
    sessionId: `sid-${i}`,
    agentId: "main",
    kind: group ? "group" : "other",
    chatType: group ? "group" : "direct",
    channel: "discord",
    createdAt: now - DAY,
    updatedAt: now - (i % 100_000) * 1000,
    ...(i % 7 === 0 ? { label: `team ${i}` } : {}),
  } as StoredEntry;
}

/** Seeds through the store's own API, in units of 5,000 writes (the SQLite side). */
export async function seedThroughStore(store: SessionStore, shape: SeedShape, now: number): Promise<void> {
  const unit = 5_000;
  for (let i = 0; i < shape.sessions; i += unit) {
    await store.transaction(async (tx) => {
      for (let j = i; j < Math.min(shape.sessions, i + unit); j++) await tx.putEntry(entryOf(j, now));
    });
  }
  for (const [key, count] of [
    [BIG_KEY, shape.big],
    [SMALL_KEY, shape.small],
  ] as const) {
    await store.putEntry({ ...entryOf(1, now), key, sessionId: `sid-${key}`, updatedAt: now });
    for (let i = 0; i < count; i += unit) {
      await store.transaction(async (tx) => {
        for (let j = i; j < Math.min(count, i + unit); j++) {
          await tx.appendMessage(key, {
            role: j % 2 ? "assistant" : "user",
            content: `message ${j}`,
            ts: now + j,
          });
        }
      });
    }
  }
}

/**
 * Seeds Postgres with set-based SQL (a million round trips would measure the network, not the store): the same
 * rows `seedThroughStore` writes, in the store's table layout.
 */
export async function seedPostgres(
  url: string,
  schema: string,
  shape: SeedShape,
  now: number,
): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const s = `"${schema}"`;
  try {
    const sample = JSON.stringify(entryOf(1, now));
    if (!sample.includes('"kind"')) throw new Error("unexpected entry shape");
    await client.query(
      `INSERT INTO ${s}.entries (key, session_id, agent_id, kind, updated_at, label, archived, data)
       SELECT e.key, e.sid, 'main', e.kind, e.updated_at, e.label, false,
         json_strip_nulls(json_build_object('key', e.key, 'sessionId', e.sid, 'agentId', 'main', 'kind', e.kind,
           'chatType', e.chat_type, 'channel', 'discord', 'createdAt', $2::bigint - ${DAY}, 'updatedAt', e.updated_at,
           'label', e.label))::text
       FROM (SELECT
               CASE WHEN i % 10 <> 0 THEN 'agent:main:discord:group:g' || i ELSE 'agent:main:discord:direct:u' || i END AS key,
               'sid-' || i AS sid,
               CASE WHEN i % 10 <> 0 THEN 'group' ELSE 'other' END AS kind,
               CASE WHEN i % 10 <> 0 THEN 'group' ELSE 'direct' END AS chat_type,
               $2::bigint - (i % 100000) * 1000 AS updated_at,
               CASE WHEN i % 7 = 0 THEN 'team ' || i END AS label
             FROM generate_series(0, $1::int - 1) AS i) AS e`,
      [shape.sessions, now],
    );
    for (const [key, count] of [
      [BIG_KEY, shape.big],
      [SMALL_KEY, shape.small],
    ] as const) {
      const entry = { ...entryOf(1, now), key, sessionId: `sid-${key}`, updatedAt: now };
      await client.query(
        `INSERT INTO ${s}.entries (key, session_id, agent_id, kind, updated_at, archived, data)
         VALUES ($1, $2, 'main', 'group', $3, false, $4)`,
        [key, entry.sessionId, now, JSON.stringify(entry)],
      );
      await client.query(
        `INSERT INTO ${s}.messages (session_key, seq, data)
         SELECT $1, i + 1, json_build_object('role', CASE WHEN i % 2 = 1 THEN 'assistant' ELSE 'user' END,
           'content', 'message ' || i, 'ts', $3::bigint + i)::text
         FROM generate_series(0, $2::int - 1) AS i`,
        [key, count, now],
      );
      await client.query(`INSERT INTO ${s}.transcripts (session_key, last_seq) VALUES ($1, $2)`, [
        key,
        count,
      ]);
    }
    await client.query(`ANALYZE ${s}.entries`);
    await client.query(`ANALYZE ${s}.messages`);
  } finally {
    await client.end();
  }
}
