/**
 * `sessions.search` on Postgres over 1,000,000 messages in 10,000 sessions, the same text as the SQLite bench
 * (packages/gateway/bench/search.bench.ts): `npx tsx bench/search.bench.ts` (`BENCH_SCALE=small`: 100,000 messages;
 * `BENCH_SMOKE=1`: 20,000 messages in 200 sessions, 20 queries, to check the bench runs).
 * Seeds a fresh local Postgres with set-based SQL each run (the generated tsvector and both GIN indexes are kept up
 * as rows go in), then ANALYZE, then one-word queries, limit 20.
 */
import { createGateway, createScriptedRunner } from "@sessions/gateway";
import pg from "pg";
import { chatSentence, chatWord } from "../../gateway/bench/chat-text.js";
import { prng, SMOKE } from "../../gateway/bench/kit.js";
import { seedEntry } from "../../gateway/bench/seed.js";
import { createPostgresStore } from "../src/index.js";
import { startLocalPostgres } from "../src/testing/local-postgres.js";

const small = process.env.BENCH_SCALE === "small";
const SESSIONS = SMOKE ? 200 : 10_000;
const MESSAGES = SMOKE ? 20_000 : small ? 100_000 : 1_000_000;
const ITERATIONS = SMOKE ? 20 : 200;
const LIMIT = 20;
const TARGET_P50_MS = 20;
const say = (line: string) => process.stdout.write(`${line}\n`);
const schema = "bench_search";
const s = `"${schema}"`;

function stats(samples: number[]) {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] ?? 0;
  return { p50: at(0.5), p95: at(0.95) };
}

/** Entries and messages in the store's table layout, 20,000 rows per statement. */
async function seed(client: pg.Client): Promise<void> {
  const rand = prng(20_250_601);
  const now = Date.now();
  const entries = Array.from({ length: SESSIONS }, (_, i) => seedEntry(i, rand, now));
  await client.query(
    `INSERT INTO ${s}.entries (key, session_id, agent_id, kind, updated_at, spawned_by, label, display_name, archived, data)
     SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[], $6::text[], $7::text[],
       $8::text[], $9::boolean[], $10::text[])`,
    [
      entries.map((e) => e.key),
      entries.map((e) => e.sessionId),
      entries.map((e) => e.agentId),
      entries.map((e) => e.kind),
      entries.map((e) => e.updatedAt),
      entries.map((e) => e.spawnedBy ?? null),
      entries.map((e) => e.label ?? null),
      entries.map((e) => e.displayName ?? null),
      entries.map((e) => e.archivedAt !== undefined),
      entries.map((e) => JSON.stringify(e)),
    ],
  );
  const weights = entries.map(() => rand() ** 3 + 0.02);
  const total = weights.reduce((a, b) => a + b, 0);
  const counts = weights.map((w) => Math.max(1, Math.round((w / total) * MESSAGES)));
  const rows: { key: string[]; seq: number[]; data: string[] } = { key: [], seq: [], data: [] };
  const flush = async () => {
    if (rows.key.length === 0) return;
    await client.query(
      `INSERT INTO ${s}.messages (session_key, seq, data) SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[])`,
      [rows.key, rows.seq, rows.data],
    );
    rows.key = [];
    rows.seq = [];
    rows.data = [];
  };
  let written = 0;
  const started = performance.now();
  for (const [i, e] of entries.entries()) {
    for (let seq = 1; seq <= (counts[i] as number) && written < MESSAGES; seq++, written++) {
      const role = seq % 2 === 1 ? "user" : "assistant";
      rows.key.push(e.key);
      rows.seq.push(seq);
      rows.data.push(JSON.stringify({ role, content: chatSentence(rand), ts: now + seq, seq }));
      if (rows.key.length === 20_000) {
        await flush();
        process.stdout.write(`\r  seeded ${written.toLocaleString("en-US")} messages`);
      }
    }
  }
  await flush();
  await client.query(
    `INSERT INTO ${s}.transcripts (session_key, last_seq) SELECT session_key, max(seq) FROM ${s}.messages GROUP BY 1`,
  );
  await client.query(`ANALYZE ${s}.entries; ANALYZE ${s}.messages; ANALYZE ${s}.transcripts`);
  say(
    `\r  seeded ${written.toLocaleString("en-US")} messages in ${((performance.now() - started) / 1000).toFixed(1)} s`,
  );
}

const server = await startLocalPostgres({ durable: true });
try {
  const url = await server.createDatabase("sessions_bench_search");
  const store = await createPostgresStore({ connectionString: url, schema });
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const gateway = createGateway({
    store,
    runner: createScriptedRunner({ agents: {}, fallback: () => "ok" }),
    cluster: false,
  });
  try {
    await gateway.ready;
    await seed(client);
    const rand = prng(7);
    const words: string[] = [];
    const hits: number[] = [];
    while (words.length < ITERATIONS) {
      const w = chatWord(300 + Math.floor(rand() * 4_700));
      if (words.includes(w)) continue;
      words.push(w);
      const { rows } = await client.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM ${s}.messages WHERE search @@ to_tsquery('simple', $1)`,
        [`'${w}':*`],
      );
      hits.push(rows[0]?.n ?? 0);
    }
    const sortedHits = [...hits].sort((a, b) => a - b);
    say(
      `  the ${words.length} query words match ${sortedHits[0]}–${sortedHits.at(-1)} messages each (median ${sortedHits[sortedHits.length >> 1]})`,
    );
    const time = async (op: () => Promise<unknown>) => {
      const start = performance.now();
      await op();
      return performance.now() - start;
    };
    for (const w of words.slice(0, SMOKE ? 2 : 20)) await gateway.sessions.search({ query: w, limit: LIMIT });
    const search: number[] = [];
    const list: number[] = [];
    for (const w of words) {
      search.push(await time(() => gateway.sessions.search({ query: w, limit: LIMIT })));
      list.push(await time(() => gateway.sessions.list({ limit: LIMIT })));
    }
    const common: number[] = [];
    for (let i = 0; i < (SMOKE ? 3 : 10); i++)
      common.push(await time(() => gateway.sessions.search({ query: "the", limit: LIMIT })));
    const one = stats(search);
    say(
      `\n# sessions.search on Postgres, ${MESSAGES.toLocaleString("en-US")} messages in ${SESSIONS.toLocaleString("en-US")} sessions, ${new Date().toISOString()}`,
    );
    say("\n| task | p50 ms | p95 ms | target |");
    say("| --- | --- | --- | --- |");
    say(
      `| sessions.search, one word, limit ${LIMIT} | ${one.p50.toFixed(2)} | ${one.p95.toFixed(2)} | < ${TARGET_P50_MS} (${one.p50 < TARGET_P50_MS ? "ok" : "BELOW TARGET"}) |`,
    );
    const baseline = stats(list);
    say(
      `| baseline: sessions.list limit ${LIMIT} | ${baseline.p50.toFixed(2)} | ${baseline.p95.toFixed(2)} | |`,
    );
    const worst = stats(common);
    say(
      `| worst case: "the", in most messages (ranks 20,000) | ${worst.p50.toFixed(2)} | ${worst.p95.toFixed(2)} | |`,
    );
  } finally {
    await client.end();
    await gateway.close({ drainMs: 100 });
  }
} finally {
  await server.stop();
}
