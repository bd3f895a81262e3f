// What the search index costs: `npx tsx bench/search-cost.bench.ts` in packages/gateway (part of `pnpm bench`).
// Targets (issue 32): runs/s in process with search on at most 3 % below the same runs with search off, measured
// side by side in the same run; the store of the headline data (10,000 sessions and a 200,000-message transcript) at
// most 100 MB with its search index.
//
// Search off is `createSqliteStore({ search: false })`: no indexer thread, no index file, nothing of the index written;
// the same gateway and the same SQL otherwise. Each round runs both, on fresh SQLite files
// in the same folder, alternating which goes first; the figures are the medians of the rounds. The runs have the
// headline shape (200 in flight over 100 sessions, `agent` then `agent.wait`) with chat sentences for messages and
// replies, so the index has real text to take. `BENCH_SMOKE=1`: a few hundred runs, two rounds, a small seed.
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import Database from "better-sqlite3";
import { createGateway, createScriptedRunner, createSqliteStore } from "../src/index.js";
import { searchFileOf } from "../src/store/sqlite/search-index.js";
import { chatSentence } from "./chat-text.js";
import { check, MB, median, prng, SMOKE, since, verdict } from "./kit.js";
import { type Rate, rate, start } from "./rate.js";
import { seedEntry, transcriptMessage } from "./seed.js";

const ROUNDS = SMOKE ? 2 : Number(process.env.BENCH_ROUNDS ?? 5);
const RUNS = SMOKE ? 300 : Number(process.env.BENCH_RUNS ?? 10_000);
const WARMUP = SMOKE ? 100 : 1_000;
const IN_FLIGHT = 200;
const RUN_SESSIONS = 100;
const SEED_SESSIONS = SMOKE ? 200 : 10_000;
const SEED_MESSAGES = SMOKE ? 2_000 : 200_000;
const TARGET_COST = 0.03;
const TARGET_STORE_MB = 100;

type Variant = "on" | "off";
const dir = mkdtempSync(join(tmpdir(), "sessions-search-cost-"));
process.on("exit", () => rmSync(dir, { recursive: true, force: true }));

/** A fresh store's file, and the store on it with search on (as shipped) or off (`search: false`). */
function storeAt(name: string, variant: Variant) {
  const path = join(dir, `${name}.db`);
  return { path, store: createSqliteStore({ path, search: variant === "on" }) };
}

/** What the indexes hold for the store at `path`: messages indexed (in the index's file) and sessions. */
function indexed(path: string): number {
  if (!existsSync(searchFileOf(path))) return 0;
  const db = new Database(searchFileOf(path), { readonly: true });
  try {
    db.prepare("ATTACH DATABASE ? AS store").run(path);
    const count = (sql: string) => (db.prepare(sql).get() as { n: number }).n;
    return (
      count("SELECT count(*) AS n FROM messages_search") +
      count("SELECT count(*) AS n FROM store.entries_search")
    );
  } finally {
    db.close();
  }
}

/** Bytes on disk of the store at `path` (its WAL and shared memory included). */
function sizeOf(path: string): number {
  const base = path.slice(dir.length + 1);
  return readdirSync(dir)
    .filter((file) => file.startsWith(base))
    .reduce((sum, file) => sum + statSync(join(dir, file)).size, 0);
}

const rand = prng(32);
const sentences = Array.from({ length: 1_024 }, () => chatSentence(rand));
const sentence = (i: number) => sentences[i % sentences.length] as string;

/** `RUNS` runs in process on a fresh store (after `WARMUP`), in the headline shape. */
async function runs(round: number, variant: Variant): Promise<Rate> {
  const { path, store } = storeAt(`runs-${round}-${variant}`, variant);
  const gateway = createGateway({
    store,
    runner: createScriptedRunner({ agents: {}, fallback: (turn) => sentence(turn.text.length * 7) }),
  });
  try {
    const many = async (count: number, prefix: string) => {
      let next = 0;
      await Promise.all(
        Array.from({ length: IN_FLIGHT }, async () => {
          for (let i = next++; i < count; i = next++) {
            const { runId } = await gateway.agent({
              sessionKey: `agent:main:bench-${i % RUN_SESSIONS}`,
              message: sentence(i),
              idempotencyKey: `${prefix}-${i}`,
            });
            const done = await gateway.agentWait({ runId, timeoutMs: 120_000 });
            if (done.status !== "ok")
              throw new Error(`run ${runId} ended ${done.status}: ${done.error ?? ""}`);
          }
        }),
      );
    };
    await many(WARMUP, "warm");
    const started = start();
    await many(RUNS, "run");
    return rate(RUNS, started);
  } finally {
    await gateway.close();
    const held = indexed(path);
    check(
      variant === "on" ? held > 0 : held === 0,
      `search ${variant}: the index ${variant === "on" ? "took" : "took nothing of"} the runs`,
    );
    rmSync(path, { force: true });
  }
}

/** The headline data written through the store: `SEED_SESSIONS` sessions and one long transcript; its size on disk. */
async function seeded(variant: Variant): Promise<number> {
  const { path, store } = storeAt(`seed-${variant}`, variant);
  const now = Date.now();
  const seedRand = prng(42);
  for (let from = 0; from < SEED_SESSIONS; from += 1_000) {
    await store.transaction(async (tx) => {
      for (let i = from; i < Math.min(SEED_SESSIONS, from + 1_000); i++)
        await tx.putEntry(seedEntry(i, seedRand, now));
    });
  }
  const key = "agent:main:discord:group:history";
  await store.putEntry({ ...seedEntry(SEED_SESSIONS, seedRand, now), key, updatedAt: now });
  for (let from = 0; from < SEED_MESSAGES; from += 2_000) {
    await store.transaction(async (tx) => {
      for (let i = from; i < Math.min(SEED_MESSAGES, from + 2_000); i++)
        await tx.appendMessage(key, transcriptMessage(i + 1, now - (SEED_MESSAGES - i) * 1_000));
    });
  }
  // A search moves what waits into the index: the size is the index's, not its queue's.
  if (variant === "on") await store.searchSessions({ text: "question", limit: 1 });
  await store.close();
  return sizeOf(path);
}

const t = performance.now();
const figures: Record<Variant, Rate[]> = { on: [], off: [] };
for (let round = 0; round < ROUNDS; round++) {
  const order: Variant[] = round % 2 === 0 ? ["on", "off"] : ["off", "on"];
  for (const variant of order) figures[variant].push(await runs(round, variant));
  process.stderr.write(
    `round ${round + 1}/${ROUNDS}: on ${figures.on.at(-1)?.perSecond.toFixed(0)} runs/s, off ${figures.off.at(-1)?.perSecond.toFixed(0)} runs/s\n`,
  );
}
const perSecond = (variant: Variant) => median(figures[variant].map((r) => r.perSecond));
const cpu = (variant: Variant) => median(figures[variant].map((r) => r.cpuUsPerRun));
const mainCpu = (variant: Variant) => median(figures[variant].map((r) => r.mainUsPerRun ?? Number.NaN));
const [on, off] = [perSecond("on"), perSecond("off")];
const cost = (off - on) / off;
const [sizeOn, sizeOff] = [await seeded("on"), await seeded("off")];

console.log(
  `\nsearch's cost (in process, SQLite file; ${ROUNDS} rounds of ${RUNS.toLocaleString("en-US")} runs each, medians)`,
);
console.log(`| | search on (shipped) | search off | cost | target |`);
console.log(`| --- | --- | --- | --- | --- |`);
console.log(
  `| runs/s in process | ${on.toFixed(0)} | ${off.toFixed(0)} | ${(cost * 100).toFixed(1)} % | ≤ ${TARGET_COST * 100} % ${SMOKE ? "(smoke)" : verdict(cost <= TARGET_COST)} |`,
);
console.log(
  `| CPU µs per run, the process | ${cpu("on").toFixed(0)} | ${cpu("off").toFixed(0)} | ${(cpu("on") - cpu("off")).toFixed(0)} µs | |`,
);
console.log(
  `| CPU µs per run, the main thread | ${mainCpu("on").toFixed(0)} | ${mainCpu("off").toFixed(0)} | ${(mainCpu("on") - mainCpu("off")).toFixed(0)} µs | |`,
);
console.log(
  `| store, ${SEED_SESSIONS.toLocaleString("en-US")} sessions + ${SEED_MESSAGES.toLocaleString("en-US")} messages | ${(sizeOn / MB).toFixed(1)} MB | ${(sizeOff / MB).toFixed(1)} MB | ${((sizeOn - sizeOff) / MB).toFixed(1)} MB | ≤ ${TARGET_STORE_MB} MB ${SMOKE ? "(smoke)" : verdict(sizeOn / MB <= TARGET_STORE_MB)} |`,
);
console.log(`(${since(t)})`);
