// Search across sessions on a real SQLite file: `pnpm --filter @sessions/gateway bench` (or `npx tsx
// bench/search.bench.ts` in packages/gateway). Target on a 2-core machine: a one-word `sessions.search`, limit 20,
// over 1,000,000 messages in 10,000 sessions, p50 under 20 ms.
//
// The seeded file is kept in a cache folder (`SEARCH_BENCH_CACHE`, default: the OS temp dir) and reused while its
// seed and schema are the same: the first run seeds it (a minute or two), later runs only query it.
// `BENCH_SMOKE=1`: 20,000 messages in 200 sessions, 20 queries, seeded in a temp folder of its own that is removed
// when the process exits: nothing is cached for a later run.
import { existsSync, mkdirSync, mkdtempSync, renameSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { searchTerms, type TranscriptMessage } from "@sessions/core";
import Database from "better-sqlite3";
import { createGateway, createSqliteStore, type Gateway, type SessionStore } from "../src/index.js";
import { SCHEMA_VERSION } from "../src/store/sqlite/schema.js";
import { searchFileOf } from "../src/store/sqlite/search-index.js";
import { chatSentence, chatWord } from "./chat-text.js";
import { check, DAY, measure, ms, prng, SMOKE, type Stats, since, verdict } from "./kit.js";
import { seedEntry } from "./seed.js";

const SESSIONS = SMOKE ? 200 : Number(process.env.SEARCH_BENCH_SESSIONS ?? 10_000);
const MESSAGES = SMOKE ? 20_000 : Number(process.env.SEARCH_BENCH_MESSAGES ?? 1_000_000);
const ITERATIONS = SMOKE ? 20 : Number(process.env.SEARCH_BENCH_ITERATIONS ?? 200);
const TARGET_P50_MS = 20;
const LIMIT = 20;

// ---------------------------------------------------------------- the seeded file

const SEED = 20_250_601;
const cacheDir = SMOKE
  ? mkdtempSync(join(tmpdir(), "sessions-search-smoke-"))
  : (process.env.SEARCH_BENCH_CACHE ?? join(tmpdir(), "sessions-bench-cache"));
if (SMOKE) process.on("exit", () => rmSync(cacheDir, { recursive: true, force: true }));
// Format 3: the index in its own file (`<file>-search`), built by the store's indexer.
const cachedFile = join(
  cacheDir,
  `search-${SESSIONS}s-${MESSAGES}m-seed${SEED}-schema${SCHEMA_VERSION}-f3.db`,
);

/** Seeds a new file: the store creates the schema, then rows go in with prepared statements, 50,000 per transaction. */
async function seedFile(path: string): Promise<void> {
  rmSync(path, { force: true });
  const created = createSqliteStore({ path });
  await created.close();
  const db = new Database(path);
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = OFF");
  const rand = prng(SEED);
  const now = Date.now();
  const putEntry =
    db.prepare(`INSERT INTO entries (key, session_id, agent_id, kind, updated_at, spawned_by, label,
      display_name, archived, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`);
  const append = db.prepare("INSERT INTO messages (session_key, seq, data) VALUES (?, ?, ?)");
  const keys: string[] = [];
  db.transaction(() => {
    for (let i = 0; i < SESSIONS; i++) {
      const e = seedEntry(i, rand, now);
      keys.push(e.key);
      putEntry.run(
        e.key,
        e.sessionId,
        e.agentId,
        e.kind,
        e.updatedAt,
        e.spawnedBy ?? null,
        e.label ?? null,
        e.displayName ?? null,
        e.archivedAt === undefined ? 0 : 1,
        JSON.stringify(e),
      );
    }
  })();
  // Transcripts of uneven length (a few long ones, many short), every message a user turn or a reply.
  const weights = keys.map(() => rand() ** 3 + 0.02);
  const total = weights.reduce((a, b) => a + b, 0);
  const counts = weights.map((w) => Math.max(1, Math.round((w / total) * MESSAGES)));
  let left = MESSAGES - counts.reduce((a, b) => a + b, 0);
  for (let i = 0; left !== 0; i = (i + 1) % counts.length) {
    const step = left > 0 ? 1 : -1;
    if ((counts[i] as number) + step >= 1) {
      counts[i] = (counts[i] as number) + step;
      left -= step;
    }
  }
  const started = performance.now();
  let written = 0;
  const batch = db.transaction((rows: [string, number, string][]) => {
    for (const [key, seq, data] of rows) append.run(key, seq, data);
  });
  let rows: [string, number, string][] = [];
  for (const [s, key] of keys.entries()) {
    const count = counts[s] as number;
    for (let seq = 1; seq <= count; seq++) {
      const message: TranscriptMessage =
        seq % 2 === 1
          ? { role: "user", content: chatSentence(rand), ts: now - DAY + seq }
          : {
              role: "assistant",
              content: chatSentence(rand),
              ts: now - DAY + seq,
              runId: `run-${s}-${seq >> 1}`,
            };
      rows.push([key, seq, JSON.stringify({ ...message, seq })]);
      if (rows.length === 50_000) {
        batch(rows);
        written += rows.length;
        rows = [];
        process.stdout.write(`\r  seeded ${written.toLocaleString("en-US")} messages (${since(started)})`);
      }
    }
  }
  batch(rows);
  written += rows.length;
  console.log(`\r  seeded ${written.toLocaleString("en-US")} messages in ${since(started)}`);
  db.pragma("wal_checkpoint(TRUNCATE)");
  db.close();
  // Indexed as the store does when it opens a file whose index is missing: its indexer catches up with every
  // transcript, and the first search waits for it. The searches measured find nothing to catch up with.
  const indexing = performance.now();
  const store = createSqliteStore({ path });
  await store.searchSessions({ text: "the", limit: 1 });
  await store.close();
  console.log(`  indexed by the store's indexer thread in ${since(indexing)}`);
}

async function seededFile(): Promise<string> {
  if (existsSync(cachedFile)) {
    console.log(`  reusing ${cachedFile}`);
    return cachedFile;
  }
  mkdirSync(cacheDir, { recursive: true });
  const partial = `${cachedFile}.partial`;
  console.log(`  seeding ${cachedFile} (${SMOKE ? "removed at exit" : "cached for later runs"})`);
  await seedFile(partial);
  renameSync(searchFileOf(partial), searchFileOf(cachedFile));
  renameSync(partial, cachedFile);
  for (const file of [partial, searchFileOf(partial)])
    for (const suffix of ["-wal", "-shm"]) rmSync(`${file}${suffix}`, { force: true });
  return cachedFile;
}

// ---------------------------------------------------------------- the queries

/** Words of ranks 300–5,000: each in a few hundred to a few thousand of the million messages. */
function queryWords(db: Database.Database, count: number): { words: string[]; hits: number[] } {
  const rand = prng(7);
  const countHits = db.prepare("SELECT count(*) AS n FROM messages_search WHERE messages_search MATCH ?");
  const words: string[] = [];
  const hits: number[] = [];
  while (words.length < count) {
    const w = chatWord(300 + Math.floor(rand() * 4_700));
    if (words.includes(w)) continue;
    words.push(w);
    const term = searchTerms(w)[0];
    hits.push((countHits.get(`"${term?.text}"${term?.prefix ? "*" : ""}`) as { n: number }).n);
  }
  return { words, hits };
}

const path = await seededFile();
const wallStart = performance.now();
// The index's file, with the store's attached (as the store's own search connection sees them).
const bare = new Database(searchFileOf(path), { readonly: true });
bare.prepare("ATTACH DATABASE ? AS store").run(path);
const { words, hits } = queryWords(bare, ITERATIONS);
const sortedHits = [...hits].sort((a, b) => a - b);
const messageCount = (bare.prepare("SELECT count(*) AS n FROM messages").get() as { n: number }).n;
check(messageCount === MESSAGES, `${messageCount} messages seeded, ${MESSAGES} expected`);
console.log(
  `  ${messageCount.toLocaleString("en-US")} messages in ${SESSIONS.toLocaleString("en-US")} sessions; the ${words.length}` +
    ` query words match ${sortedHits[0]}–${sortedHits.at(-1)} messages each (median ${sortedHits[sortedHits.length >> 1]})`,
);

const store: SessionStore = createSqliteStore({ path });
const gateway: Gateway = createGateway({
  runner: { run: async () => ({ reply: "" }) },
  store,
  config: { tools: { sessions: { visibility: "all" }, agentToAgent: { enabled: true, allow: ["*"] } } },
});
await gateway.ready;
let i = 0;
let j = 0;
let k = 0;
const next = (n: number) => words[n % words.length] as string;
const countMatches = bare.prepare("SELECT count(*) AS n FROM messages_search WHERE messages_search MATCH ?");
const [method, asRequester, floor, list] = await measure(
  [
    () => gateway.sessions.search({ query: next(i++), limit: LIMIT }),
    () => gateway.sessions.search({ query: next(j++), limit: LIMIT, requesterKey: "agent:main:main" }),
    () => countMatches.get(`"${next(k++)}"*`),
    () => gateway.sessions.list({ limit: LIMIT }),
  ],
  { warmup: 20, iterations: ITERATIONS },
);
const common = await measure([() => gateway.sessions.search({ query: "the", limit: LIMIT })], {
  warmup: SMOKE ? 1 : 2,
  iterations: SMOKE ? 3 : 20,
});
const commonHits = (countMatches.get('"the"*') as { n: number }).n;
// The query word in the most messages: at smoke size, the rarest ones may be in none.
const found = words[hits.indexOf(sortedHits.at(-1) as number)] as string;
const sample = await gateway.sessions.search({ query: found, limit: LIMIT });
check(sample.count > 0, `"${found}" found nothing`);
await gateway.close({ drainMs: 0 });
bare.close();

const row = (task: string, s: Stats, target = "", ok?: boolean) => ({
  task,
  p50: ms(s.p50),
  p95: ms(s.p95),
  target,
  verdict: ok === undefined ? "" : verdict(ok),
});
console.table([
  row(
    `sessions.search, one word, limit ${LIMIT} (${MESSAGES.toLocaleString("en-US")} messages)`,
    method as Stats,
    `p50 < ${TARGET_P50_MS} ms`,
    (method as Stats).p50 < TARGET_P50_MS,
  ),
  row("  the same as a requester (visibility all, agent-to-agent any)", asRequester as Stats),
  row("  floor: counting the word's messages, FTS5 on bare better-sqlite3", floor as Stats),
  row(`  baseline: sessions.list limit ${LIMIT} on the same file`, list as Stats),
  row('  worst case: "the", in most messages', common[0] as Stats),
]);
console.log(
  `  (${ITERATIONS} queries each, different words; "the" matches ${commonHits.toLocaleString("en-US")} messages; wall ${since(wallStart)})`,
);
