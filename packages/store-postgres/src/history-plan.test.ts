import { createGateway, createScriptedRunner, type Gateway } from "@sessions/gateway";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it, vi } from "vitest";
import { freshSchema, sql, storeOpener } from "./testing/helpers.js";

/**
 * `chat.history` reads O(limit) on a transcript grown through the product's own path (chat.send runs), with the
 * statistics the planner happens to have: none (a young table autovacuum has not visited yet), or fresh ones. Work is
 * counted, not timed: shared buffers and rows of the statements the store sends, under EXPLAIN ANALYZE.
 */
const url = inject("postgresUrl");
const stores = storeOpener(url);
const gateways: Gateway[] = [];
afterAll(async () => {
  await Promise.all(gateways.splice(0).map((gateway) => gateway.close({ drainMs: 100 })));
  await stores.closeAll();
});

// Big enough that reading the whole transcript (the bug) costs several times what reading 50 messages does; the
// cost of growing it through chat.send keeps it below the 20,000 of the report.
const BIG = 2_000;
const SMALL = 200;
const LIMIT = 50;
/**
 * A heap page per message of the window at most, the index's path, and the entry and counter lookups — each of
 * those a few pages more while their row's dead versions wait for a vacuum (every run rewrites both; the suite's
 * other packages loading the machine spread the rows over more pages: 67 seen). Whatever the layout, far below
 * the pages of the 2,000-message transcript that reading it whole (the bug) costs.
 */
const BUFFERS = 2 * LIMIT;
const bigKey = "agent:main:big";
const smallKey = "agent:main:small";

interface PlanNode {
  "Actual Rows": number;
  "Shared Hit Blocks": number;
  "Shared Read Blocks": number;
  Plans?: PlanNode[];
}
interface Statement {
  text: string;
  values: unknown[];
}
interface Cost {
  buffers: number;
  /** The most rows any node of any statement produced. */
  maxRows: number;
  plans: string[];
}

const schema = freshSchema("history_plan");
let gateway: Gateway;
let calls = 0;

async function grow(key: string, messages: number): Promise<void> {
  for (let i = 0; i < messages / 2; i++) {
    const { runId } = await gateway.chat.send({
      sessionKey: key,
      message: `m${i}`,
      idempotencyKey: `h${calls++}`,
    });
    expect((await gateway.agentWait({ runId, timeoutMs: 60_000 })).status).toBe("ok");
  }
}

/**
 * The SELECTs the store sends for one `chat.history` call, seen on the node-postgres client they go through. It
 * asks a gateway of its own, on a store opened for it: the gateway that grew the transcript knows its tail and
 * serves the window from memory (see `known-tails.ts`), which is not what is measured here.
 */
async function historyStatements(key: string): Promise<Statement[]> {
  const reader = createGateway({
    store: await stores.open(schema),
    runner: createScriptedRunner({ agents: {}, fallback: () => "unused" }),
    cluster: false,
  });
  gateways.push(reader);
  await reader.ready;
  const spy = vi.spyOn(pg.Client.prototype, "query");
  try {
    const history = await reader.chat.history({ sessionKey: key, limit: LIMIT });
    expect(history.messages).toHaveLength(LIMIT);
    return spy.mock.calls
      .map(([text, values]) => ({ text: String(text), values: (values ?? []) as unknown[] }))
      .filter((statement) => /^\s*SELECT\b/i.test(statement.text) && statement.text.includes(`"${schema}"`));
  } finally {
    spy.mockRestore();
  }
}

const walk = (node: PlanNode): PlanNode[] => [node, ...(node.Plans ?? []).flatMap(walk)];

async function historyCost(key: string): Promise<Cost> {
  const statements = await historyStatements(key);
  // entries (getEntry), transcripts (countMessages), messages (readMessages).
  expect(statements.map((statement) => /FROM "[^"]+"\.(\w+)/.exec(statement.text)?.[1])).toEqual([
    "entries",
    "transcripts",
    "messages",
  ]);
  const cost: Cost = { buffers: 0, maxRows: 0, plans: [] };
  for (const statement of statements) {
    const [row] = await sql<{ "QUERY PLAN": [{ Plan: PlanNode }] }>(
      url,
      `EXPLAIN (FORMAT JSON, ANALYZE, BUFFERS) ${statement.text}`,
      statement.values,
    );
    const plan = (row as { "QUERY PLAN": [{ Plan: PlanNode }] })["QUERY PLAN"][0].Plan;
    // The top node's counts include its children and init plans (planning's catalog reads are apart).
    cost.buffers += plan["Shared Hit Blocks"] + plan["Shared Read Blocks"];
    cost.maxRows = Math.max(cost.maxRows, ...walk(plan).map((node) => node["Actual Rows"]));
    cost.plans.push(JSON.stringify(plan));
  }
  return cost;
}

describe("chat.history on Postgres", () => {
  beforeAll(async () => {
    const store = await stores.open(schema);
    // As a young table before autovacuum's first visit, deterministically: no statistics unless the test takes them.
    for (const table of ["entries", "transcripts", "messages", "runs"]) {
      await sql(url, `ALTER TABLE "${schema}".${table} SET (autovacuum_enabled = false)`);
    }
    gateway = createGateway({
      store,
      runner: createScriptedRunner({ agents: {}, fallback: (turn) => `echo: ${turn.text}` }),
      cluster: false,
    });
    gateways.push(gateway);
    await gateway.ready;
    await grow(smallKey, SMALL);
    await grow(bigKey, BIG);
  });

  it("reads O(limit) buffers and rows of a transcript grown through chat.send, with no statistics", async () => {
    const analyzed = await sql<{ n: number }>(
      url,
      `SELECT count(*)::int AS n FROM pg_stat_user_tables
        WHERE schemaname = $1 AND (last_analyze IS NOT NULL OR last_autoanalyze IS NOT NULL)`,
      [schema],
    );
    expect(analyzed[0]?.n).toBe(0);
    const small = await historyCost(smallKey);
    const big = await historyCost(bigKey);
    expect(big.maxRows, big.plans.join("\n")).toBeLessThanOrEqual(LIMIT);
    expect(small.maxRows, small.plans.join("\n")).toBeLessThanOrEqual(LIMIT);
    // No node produced more rows than the window: the scan stopped after `limit` rows, whatever the transcript's
    // length. The pages that costs depend on where the rows landed (gateways insert through several connections,
    // each filling heap pages of its own): at most a heap page per row, an index path and the two small lookups.
    expect(big.buffers, big.plans.join("\n")).toBeLessThanOrEqual(BUFFERS);
    expect(small.buffers, small.plans.join("\n")).toBeLessThanOrEqual(BUFFERS);
  });

  it("stays O(limit) with statistics, whatever plan they lead to", async () => {
    // As autovacuum's first visit leaves the tables: statistics taken, and the entries' dead versions (every run's
    // end rewrites its session's entry) gone, which a bitmap scan of the entry would otherwise count as rows.
    await sql(url, `VACUUM ANALYZE "${schema}".entries, "${schema}".transcripts, "${schema}".messages`);
    const small = await historyCost(smallKey);
    const big = await historyCost(bigKey);
    for (const cost of [small, big]) {
      expect(cost.maxRows, cost.plans.join("\n")).toBeLessThanOrEqual(LIMIT);
      expect(cost.buffers, cost.plans.join("\n")).toBeLessThanOrEqual(BUFFERS);
    }
  });

  it("still reads the latest messages of a transcript whose sequence has gaps (rows deleted by hand)", async () => {
    const gaps = freshSchema("history_gaps");
    const writer = await stores.open(gaps);
    for (let i = 1; i <= 30; i++) await writer.appendMessage("s", { role: "user", content: `m${i}`, ts: i });
    await sql(url, `DELETE FROM "${gaps}".messages WHERE seq > 10 AND seq <= 28`);
    // Read by a gateway started after the rows went: the one that wrote them still knows them (a running
    // gateway takes written messages to stay as they are; see known-tails.ts).
    const store = await stores.open(gaps);
    const seqs = async (options: { limit: number; beforeSeq?: number }) =>
      (await store.readMessages("s", options)).map((message) => message.seq);
    expect(await seqs({ limit: 5 })).toEqual([8, 9, 10, 29, 30]);
    expect(await seqs({ limit: 3, beforeSeq: 29 })).toEqual([8, 9, 10]);
    expect(await seqs({ limit: 50 })).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 29, 30]);
  });
});
