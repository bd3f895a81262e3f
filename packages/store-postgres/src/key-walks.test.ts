import { entry } from "@sessions/gateway/store-contract";
import fc from "fast-check";
import { afterAll, describe, expect, inject, it } from "vitest";
import { entriesQuery } from "./lists.js";
import { freshSchema, sql, storeOpener } from "./testing/helpers.js";

/**
 * The `sessions.list` cursor on Postgres (issue 25): a walk in key order paged by `afterKey`, with random writes
 * between pages, over keys in any script — the order the `COLLATE "C"` keyset compares in is the order it returns.
 */
const url = inject("postgresUrl");
const stores = storeOpener(url);
afterAll(() => stores.closeAll());

type Step = { op: "page"; limit: number } | { op: "put"; suffix: string } | { op: "delete"; at: number };

const suffix = fc.string({
  minLength: 1,
  maxLength: 6,
  unit: fc.constantFrom("a", "B", "é", "\uFFFF", "😀", ":", "~"),
});
const walk = fc.record({
  initial: fc.uniqueArray(suffix, { maxLength: 15 }),
  firstLimit: fc.integer({ min: 1, max: 4 }),
  steps: fc.array(
    fc.oneof(
      fc.record({ op: fc.constant("page" as const), limit: fc.integer({ min: 1, max: 4 }) }),
      fc.record({ op: fc.constant("put" as const), suffix }),
      fc.record({ op: fc.constant("delete" as const), at: fc.nat() }),
    ),
    { maxLength: 25 },
  ) as fc.Arbitrary<Step[]>,
});

interface PlanNode {
  "Actual Rows": number;
  Plans?: PlanNode[];
}
const nodes = (node: PlanNode): PlanNode[] => [node, ...(node.Plans ?? []).flatMap(nodes)];

// Code point order, as UTF-8 bytes compare.
const byCodePoint = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));

describe("walks in key order on Postgres", () => {
  it("return each entry that exists throughout exactly once, in code point order, whatever is written between pages", async () => {
    const store = await stores.open(freshSchema("key_walks"));
    let run = 0;
    await fc.assert(
      fc.asyncProperty(walk, async ({ initial, firstLimit, steps }) => {
        // Each run lists only its own agent's entries: one schema for all runs.
        const agent = `run${++run}`;
        const key = (s: string) => `agent:${agent}:${s}`;
        let clock = 0;
        for (const s of initial) await store.putEntry(entry(key(s), ++clock));
        const live = new Set(initial.map(key));
        const throughout = new Set(live);
        const seen: string[] = [];
        let done = false;
        const page = async (limit: number) => {
          if (done) return;
          const last = seen[seen.length - 1];
          const rows = await store.listEntries({
            order: "key",
            agentIds: [agent],
            limit,
            ...(last === undefined ? {} : { afterKey: last }),
          });
          seen.push(...rows.map((r) => r.key));
          done = rows.length < limit;
        };
        await page(firstLimit);
        for (const step of steps) {
          if (step.op === "page") await page(step.limit);
          else if (step.op === "put") {
            // A new entry, or an update that makes an existing one the newest.
            await store.putEntry(entry(key(step.suffix), ++clock, { label: `v${clock}` }));
            live.add(key(step.suffix));
          } else if (live.size > 0) {
            const victim = [...live][step.at % live.size] as string;
            await store.deleteEntry(victim);
            live.delete(victim);
            throughout.delete(victim);
          }
        }
        while (!done) await page(3);
        expect(seen).toEqual([...new Set(seen)].sort(byCodePoint));
        for (const k of throughout) expect(seen).toContain(k);
      }),
      { numRuns: 40 },
    );
  });

  it("reads about limit rows for a page deep in a walk, with or without statistics (counted, not timed)", async () => {
    const schema = freshSchema("key_walk_plan");
    await stores.open(schema);
    // A young table: no statistics until the test takes them.
    await sql(url, `ALTER TABLE "${schema}".entries SET (autovacuum_enabled = false)`);
    await sql(
      url,
      `INSERT INTO "${schema}".entries (key, session_id, agent_id, kind, updated_at, archived, data)
       SELECT 'agent:main:s' || lpad(i::text, 6, '0'), 's' || i, 'main', 'group', i, i % 100 = 0, '{}'
       FROM generate_series(1, 20000) i`,
    );
    const limit = 50;
    for (const analyzed of [false, true]) {
      if (analyzed) await sql(url, `ANALYZE "${schema}".entries`);
      const { text, values } = entriesQuery(`"${schema}"`, {
        order: "key",
        afterKey: "agent:main:s015000",
        limit,
      });
      const [row] = await sql<{ "QUERY PLAN": [{ Plan: PlanNode }] }>(
        url,
        `EXPLAIN (FORMAT JSON, ANALYZE) ${text}`,
        values,
      );
      const plan = (row as { "QUERY PLAN": [{ Plan: PlanNode }] })["QUERY PLAN"][0].Plan;
      // Every row read is in the page but the archived ones the filter drops (one in a hundred).
      expect(Math.max(...nodes(plan).map((n) => n["Actual Rows"])), JSON.stringify(plan)).toBeLessThanOrEqual(
        limit,
      );
    }
  });
});
