import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { entry } from "../contract-records.js";
import { createMemoryStore } from "../memory.js";
import { createSqliteStore } from "../sqlite.js";
import type { SessionStore, StoreChange, StoreOps } from "../types.js";
import { jsonCopy } from "./writer-cache.js";

const dir = mkdtempSync(join(tmpdir(), "sessions-writer-"));
let n = 0;
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** One step of a unit of work: the writes and reads a run makes, on one of a few sessions. */
type Step =
  | { op: "append"; session: number }
  | { op: "touch"; session: number; label: string }
  | { op: "delete"; session: number }
  | { op: "read"; session: number }
  | { op: "nested"; session: number; fails: boolean };
/** A unit: its steps, and whether it throws after them. */
type UnitSpec = { steps: Step[]; fails: boolean };

const keyOf = (session: number) => `agent:main:s${session}`;
const session = fc.integer({ min: 0, max: 3 });
const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ op: fc.constant("append" as const), session }),
  fc.record({ op: fc.constant("touch" as const), session, label: fc.string({ maxLength: 4 }) }),
  fc.record({ op: fc.constant("delete" as const), session }),
  fc.record({ op: fc.constant("read" as const), session }),
  fc.record({ op: fc.constant("nested" as const), session, fails: fc.boolean() }),
);
const units = fc.array(fc.record({ steps: fc.array(step, { maxLength: 5 }), fails: fc.boolean() }), {
  minLength: 1,
  maxLength: 12,
});

/** Runs one step; returns what it observed (the result each unit reports). */
async function runStep(store: SessionStore, tx: StoreOps, s: Step, i: number): Promise<unknown> {
  const key = keyOf(s.session);
  switch (s.op) {
    case "append":
      return (await tx.appendMessage(key, { role: "user", content: `m${i}`, ts: i })).seq;
    case "touch": {
      const current = await tx.getEntry(key);
      await tx.putEntry({ ...(current ?? entry(key, 0)), label: s.label, updatedAt: i });
      return current?.label ?? null;
    }
    case "delete":
      return tx.deleteEntry(key);
    case "read":
      return [await tx.getEntry(key), await tx.countMessages(key)];
    case "nested":
      return store
        .transaction(async (inner) => {
          const seq = (await inner.appendMessage(key, { role: "assistant", content: `n${i}`, ts: i })).seq;
          if (s.fails) throw new Error("inner");
          return seq;
        })
        .catch((error: Error) => error.message);
  }
}

/** Starts every unit at once (so the SQLite store groups them) and reports each outcome and the final state. */
async function play(store: SessionStore, specs: UnitSpec[]) {
  const changes: StoreChange[] = [];
  store.watch((change) => changes.push(change));
  const outcomes = await Promise.all(
    specs.map((spec, u) =>
      store
        .transaction(async (tx) => {
          const seen: unknown[] = [];
          for (const [i, s] of spec.steps.entries()) seen.push(await runStep(store, tx, s, u * 10 + i));
          if (spec.fails) throw new Error(`unit ${u} fails`);
          return seen;
        })
        .catch((error: Error) => error.message),
    ),
  );
  const state = [];
  for (let s = 0; s < 4; s++) {
    const key = keyOf(s);
    state.push({
      entry: (await store.getEntry(key)) ?? null,
      messages: await store.readMessages(key, { limit: 100 }),
    });
  }
  // The indexed columns agree with the records (lists and lookups use them).
  const listed = (await store.listEntries({ limit: 100, includeArchived: true })).map((e) => e.key);
  const byLabel = [];
  for (const { entry } of state)
    if (entry?.label !== undefined)
      byLabel.push((await store.findEntriesByLabel(entry.label)).map((e) => e.key).sort());
  // One more write per session after it all: sequence numbers go on from the committed state.
  const next = [];
  for (let s = 0; s < 4; s++)
    next.push((await store.appendMessage(keyOf(s), { role: "user", content: "after", ts: 0 })).seq);
  await store.close();
  return { outcomes, state, listed, byLabel, next, changes };
}

describe("SQLite units without savepoints (undo by redo)", () => {
  it("gives every unit, committed state and change feed the memory store gives, whichever units throw", async () => {
    await fc.assert(
      fc.asyncProperty(units, async (specs) => {
        const expected = await play(createMemoryStore(), specs);
        const actual = await play(createSqliteStore({ path: join(dir, `redo-${++n}.db`) }), specs);
        expect(actual).toEqual(expected);
      }),
      { numRuns: 60 },
    );
  });

  it("keeps the units before and after a failed one in the same transaction", async () => {
    const store = createSqliteStore({ path: join(dir, "group.db") });
    const key = keyOf(0);
    await store.putEntry(entry(key, 1, { label: "start" }));
    const results = await Promise.allSettled([
      store.transaction(async (tx) => {
        await tx.putEntry(entry(key, 2, { label: "first" }));
        return (await tx.appendMessage(key, { role: "user", content: "a", ts: 1 })).seq;
      }),
      store.transaction(async (tx) => {
        await tx.putEntry(entry(key, 3, { label: "failed" }));
        await tx.appendMessage(key, { role: "user", content: "lost", ts: 2 });
        throw new Error("boom");
      }),
      store.transaction(async (tx) => {
        const label = (await tx.getEntry(key))?.label;
        const seq = (await tx.appendMessage(key, { role: "user", content: "b", ts: 3 })).seq;
        return [label, seq];
      }),
    ]);
    expect(results.map((r) => (r.status === "fulfilled" ? r.value : String(r.reason)))).toEqual([
      1,
      "Error: boom",
      ["first", 2],
    ]);
    expect((await store.readMessages(key, { limit: 10 })).map((m) => [m.seq, m.content])).toEqual([
      [1, "a"],
      [2, "b"],
    ]);
    await store.close();
    const reopened = createSqliteStore({ path: join(dir, "group.db") });
    expect(await reopened.getEntry(key)).toMatchObject({ label: "first", updatedAt: 2 });
    expect(await reopened.countMessages(key)).toBe(2);
    await reopened.close();
  });
});

describe("the SQLite store's entry caches", () => {
  it("read and write right past their capacity (10,000 entries), across a reopen", async () => {
    const path = join(dir, "many.db");
    const store = createSqliteStore({ path });
    const keys = Array.from({ length: 10_100 }, (_, i) => `agent:main:many-${i}`);
    await store.transaction(async (tx) => {
      for (const key of keys) await tx.putEntry(entry(key, 1, { label: "v1" }));
    });
    // The first ones were evicted by the last ones: touch every tenth entry, then read them all back.
    for (const key of keys.filter((_, i) => i % 10 === 0)) {
      await store.transaction(async (tx) => {
        const current = await tx.getEntry(key);
        await tx.putEntry({ ...(current ?? entry(key, 0)), updatedAt: 2, label: "v2" });
      });
    }
    const expected = (i: number) => (i % 10 === 0 ? "v2" : "v1");
    const labels = async (s: SessionStore) => {
      const out: string[] = [];
      for (const key of keys) out.push((await s.getEntry(key))?.label ?? "missing");
      return out;
    };
    expect(await labels(store)).toEqual(keys.map((_, i) => expected(i)));
    expect((await store.findEntriesByLabel("v2")).length).toBe(1_010);
    await store.close();
    const reopened = createSqliteStore({ path });
    expect(await labels(reopened)).toEqual(keys.map((_, i) => expected(i)));
    await reopened.close();
  });
});

describe("jsonCopy", () => {
  it("equals a JSON round trip", () => {
    const withHoles = fc.anything({
      withNullPrototype: false,
      withBoxedValues: false,
      withMap: false,
      withSet: false,
      withBigInt: false,
      withDate: true,
      withTypedArray: false,
      withSparseArray: true,
      withObjectString: false,
    });
    fc.assert(
      fc.property(withHoles, (value) => {
        const text = JSON.stringify(value);
        const copy = jsonCopy(value);
        if (text === undefined) expect(copy).toBeUndefined();
        else expect(JSON.stringify(copy)).toBe(text);
      }),
    );
  });
});
