import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createBatcher } from "./batcher.js";

/**
 * The group-commit policy on its own (no database): which calls go together, how many batches are under way, and
 * that every caller gets its own answer. The statements themselves are group-commit.test.ts's.
 */

/** A batcher whose batches wait until the test lets them finish; each call answers its input doubled. */
function gatedBatcher(options: { concurrency: number; maxBatch: number }) {
  const batches: { inputs: number[]; finish(): void }[] = [];
  let inFlight = 0;
  let mostInFlight = 0;
  const gate = (inputs: number[]) =>
    new Promise<number[]>((resolve) => {
      inFlight++;
      mostInFlight = Math.max(mostInFlight, inFlight);
      batches.push({
        inputs,
        finish() {
          inFlight--;
          resolve(inputs.map((input) => input * 2));
        },
      });
    });
  const call = createBatcher<number, number>({
    ...options,
    many: (inputs) => gate(inputs),
    one: async (input) => (await gate([input]))[0] as number,
  });
  return { call, batches, mostInFlight: () => mostInFlight };
}

const turn = () => new Promise((resolve) => setImmediate(resolve));

describe("createBatcher", () => {
  it("sends a lone call alone", async () => {
    const { call, batches } = gatedBatcher({ concurrency: 4, maxBatch: 64 });
    const answer = call(7);
    await turn();
    expect(batches.map((batch) => batch.inputs)).toEqual([[7]]);
    batches[0]?.finish();
    expect(await answer).toBe(14);
  });

  it("sends calls arriving together with no batch under way as two batches side by side", async () => {
    const { call, batches } = gatedBatcher({ concurrency: 4, maxBatch: 64 });
    const answers = Array.from({ length: 9 }, (_, i) => call(i));
    await turn();
    // Both under way before either is answered.
    expect(batches.map((batch) => batch.inputs)).toEqual([
      [0, 1, 2, 3, 4],
      [5, 6, 7, 8],
    ]);
    for (const batch of batches) batch.finish();
    expect(await Promise.all(answers)).toEqual([0, 2, 4, 6, 8, 10, 12, 14, 16]);
  });

  it("sends what arrives while a batch is under way as one batch, up to maxBatch", async () => {
    const { call, batches } = gatedBatcher({ concurrency: 3, maxBatch: 4 });
    const first = [call(0), call(1)];
    await turn();
    expect(batches).toHaveLength(2);
    const later = Array.from({ length: 6 }, (_, i) => call(10 + i));
    await turn();
    // One connection left: the first four go, the other two wait for a free one.
    expect(batches.map((batch) => batch.inputs)).toEqual([[0], [1], [10, 11, 12, 13]]);
    batches[0]?.finish();
    await turn();
    expect(batches[3]?.inputs).toEqual([14, 15]);
    for (const batch of batches.slice(1)) batch.finish();
    expect(await Promise.all([...first, ...later])).toEqual([0, 2, 20, 22, 24, 26, 28, 30]);
  });

  it("keeps one batch under way when only one connection is allowed", async () => {
    const { call, batches } = gatedBatcher({ concurrency: 1, maxBatch: 64 });
    const answers = [call(1), call(2), call(3)];
    await turn();
    expect(batches.map((batch) => batch.inputs)).toEqual([[1, 2, 3]]);
    batches[0]?.finish();
    expect(await Promise.all(answers)).toEqual([2, 4, 6]);
  });

  it("answers every call once with its own answer, within concurrency and maxBatch, whatever the arrivals", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 5 }),
        fc.integer({ min: 1, max: 16 }),
        // Waves of calls, and after each how many of the batches under way finish (oldest first).
        fc.array(fc.record({ calls: fc.nat({ max: 40 }), finish: fc.nat({ max: 6 }) }), {
          minLength: 1,
          maxLength: 8,
        }),
        async (concurrency, maxBatch, waves) => {
          const { call, batches, mostInFlight } = gatedBatcher({ concurrency, maxBatch });
          const answers: Promise<number>[] = [];
          let next = 0;
          let finished = 0;
          for (const wave of waves) {
            for (let i = 0; i < wave.calls; i++) answers.push(call(next++));
            await turn();
            for (let i = 0; i < wave.finish && finished < batches.length; i++) batches[finished++]?.finish();
            await turn();
          }
          // The rest finish as they come (a call never sent would leave this loop with answers missing).
          let settled = false;
          void Promise.all(answers).then(() => {
            settled = true;
          });
          for (let round = 0; !settled && round < 1_000; round++) {
            await turn();
            while (finished < batches.length) batches[finished++]?.finish();
          }
          expect(settled).toBe(true);
          expect(await Promise.all(answers)).toEqual(answers.map((_, i) => i * 2));
          expect(mostInFlight()).toBeLessThanOrEqual(concurrency);
          for (const batch of batches) expect(batch.inputs.length).toBeLessThanOrEqual(maxBatch);
          // Each call went in exactly one batch, in the order the calls were made.
          expect(batches.flatMap((batch) => batch.inputs)).toEqual(answers.map((_, i) => i));
        },
      ),
      { numRuns: 200 },
    );
  });
});
