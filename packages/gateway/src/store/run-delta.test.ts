import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { entry } from "./contract-records.js";
import { applyRunDelta, changesEntry, TOUCH_GRAIN_MS } from "./run-units.js";
import type { EntryRunDelta, StoredEntry } from "./types.js";

const count = fc.option(fc.integer({ min: 0, max: 1e9 }), { nil: undefined });
const anEntry = fc
  .record({
    updatedAt: fc.integer({ min: 0, max: 1e7 }),
    inputTokens: count,
    outputTokens: count,
    totalTokens: count,
    systemSent: fc.option(fc.boolean(), { nil: undefined }),
    abortedLastRun: fc.option(fc.boolean(), { nil: undefined }),
  })
  .map(({ updatedAt, ...fields }): StoredEntry => {
    const defined = Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined));
    return entry("agent:main:s", updatedAt, defined);
  });
const aDelta = (at: number) =>
  fc.record(
    {
      updatedAt: fc.integer({ min: at - 3 * TOUCH_GRAIN_MS, max: at + 3 * TOUCH_GRAIN_MS }),
      tokens: fc.record(
        { inputTokens: count, outputTokens: count, totalTokens: count },
        { requiredKeys: [] },
      ),
      systemSent: fc.constant(true as const),
      abortedLastRun: fc.boolean(),
    },
    { requiredKeys: ["updatedAt"] },
  );
/** The fields a run's end does not touch. */
const othersOf = (e: StoredEntry) => {
  const { inputTokens, outputTokens, totalTokens, systemSent, abortedLastRun, updatedAt, ...others } = e;
  return others;
};
const entryAndDelta = anEntry.chain((before) =>
  aDelta(before.updatedAt).map((delta): [StoredEntry, EntryRunDelta] => [before, delta]),
);

describe("a run's end on its session's entry (applyRunDelta)", () => {
  it("moves updatedAt to the end only when it is a second or more behind: never back, never a second behind", () => {
    fc.assert(
      fc.property(entryAndDelta, ([before, delta]) => {
        const after = applyRunDelta(before, delta);
        const moves = before.updatedAt <= delta.updatedAt - TOUCH_GRAIN_MS;
        expect(after.updatedAt).toBe(moves ? delta.updatedAt : before.updatedAt);
        expect(after.updatedAt).toBeGreaterThanOrEqual(before.updatedAt);
        expect(after.updatedAt).toBeGreaterThan(delta.updatedAt - TOUCH_GRAIN_MS);
      }),
    );
  });

  it("adds the tokens and sets the flags whatever the grain, and leaves every other field", () => {
    fc.assert(
      fc.property(entryAndDelta, ([before, delta]) => {
        const after = applyRunDelta(before, delta);
        for (const field of ["inputTokens", "outputTokens", "totalTokens"] as const) {
          const added = delta.tokens?.[field];
          expect(after[field]).toBe(added === undefined ? before[field] : (before[field] ?? 0) + added);
        }
        if (delta.systemSent === true) expect(after.systemSent).toBe(true);
        if (delta.abortedLastRun === true) expect(after.abortedLastRun).toBe(true);
        expect(othersOf(after)).toEqual(othersOf(before));
      }),
    );
  });

  it("is written only when it changed: an end that changes nothing leaves the entry equal to what was stored", () => {
    fc.assert(
      fc.property(entryAndDelta, ([before, delta]) => {
        const after = applyRunDelta(before, delta);
        if (changesEntry(before, after)) expect(after).not.toEqual(before);
        else expect(after).toEqual(before);
      }),
    );
  });
});
