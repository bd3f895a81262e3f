import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { KnownTails } from "./known-tails.js";

/**
 * A session's transcript as the database holds it, written by this gateway (which tells the tails what it wrote,
 * or read) and by others (which do not); deleting it starts it again at 1 (the change feed tells the tails).
 */
type Step =
  | { op: "ours"; text: string }
  | { op: "oursLate"; text: string }
  | { op: "heard"; reversed: boolean }
  | { op: "theirs"; text: string }
  | { op: "delete" }
  | { op: "read"; limit: number; back: number };

const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({ op: fc.constant("ours" as const), text: fc.string({ maxLength: 3 }) }),
  },
  {
    weight: 2,
    arbitrary: fc.record({ op: fc.constant("theirs" as const), text: fc.string({ maxLength: 3 }) }),
  },
  {
    weight: 3,
    arbitrary: fc.record({ op: fc.constant("oursLate" as const), text: fc.string({ maxLength: 3 }) }),
  },
  { weight: 2, arbitrary: fc.record({ op: fc.constant("heard" as const), reversed: fc.boolean() }) },
  { weight: 1, arbitrary: fc.constant({ op: "delete" as const }) },
  {
    weight: 4,
    arbitrary: fc.record({
      op: fc.constant("read" as const),
      limit: fc.integer({ min: 0, max: 80 }),
      back: fc.integer({ min: 0, max: 5 }),
    }),
  },
);

describe("known transcript tails", () => {
  it("serve a window only when it is exactly what the database holds", () => {
    fc.assert(
      fc.property(fc.array(step, { maxLength: 200 }), (steps) => {
        const tails = new KnownTails();
        let transcript: string[] = [];
        // Our appends committed but not heard of yet (group commit: batches on several connections).
        let unheard: { seq: number; text: string }[] = [];
        const text = (content: string) => JSON.stringify({ role: "user", content });
        for (const s of steps) {
          if (s.op === "ours" || s.op === "theirs" || s.op === "oursLate") {
            transcript.push(text(s.text));
            if (s.op === "ours") tails.add("k", transcript.length, text(s.text));
            if (s.op === "oursLate") unheard.push({ seq: transcript.length, text: text(s.text) });
          } else if (s.op === "heard") {
            if (s.reversed) unheard.reverse();
            for (const { seq, text } of unheard.splice(0)) tails.add("k", seq, text);
          } else if (s.op === "delete") {
            transcript = [];
            unheard = [];
            tails.forget("k");
          } else {
            const beforeSeq = Math.max(1, transcript.length + 1 - s.back);
            const served = tails.read("k", s.limit, beforeSeq);
            const end = beforeSeq - 1;
            const start = Math.max(1, end - s.limit + 1);
            const truth =
              s.limit <= 0
                ? []
                : transcript.slice(start - 1, end).map((t, i) => ({
                    ...JSON.parse(t),
                    seq: start + i,
                  }));
            if (served !== undefined) expect(served).toEqual(truth);
            else {
              // What a read from the database returns fills the tail.
              const rows = transcript.slice(start - 1, end);
              if (rows.length > 0) tails.fill("k", start, rows);
            }
          }
        }
      }),
    );
  });

  it("serves a run's window from what this gateway wrote, and misses one another gateway wrote into", () => {
    const tails = new KnownTails();
    const m = (content: string) => JSON.stringify({ role: "user", content });
    tails.add("k", 1, m("a"));
    tails.add("k", 2, m("b"));
    expect(tails.read("k", 50, 3)).toEqual([
      { role: "user", content: "a", seq: 1 },
      { role: "user", content: "b", seq: 2 },
    ]);
    // Seq 3 is another gateway's: a window up to 4 is not known, one up to 2 still is.
    tails.add("k", 4, m("d"));
    expect(tails.read("k", 50, 5)).toBeUndefined();
    expect(tails.read("k", 50, 3)).toHaveLength(2);
    // Once read from the database, the window is known, and so is the tail past it.
    tails.fill("k", 1, [m("a"), m("b"), m("c")]);
    expect(tails.read("k", 50, 5)?.map((message) => message.seq)).toEqual([1, 2, 3, 4]);
  });

  it("joins this gateway's appends heard out of order (group commit) into one tail", () => {
    const tails = new KnownTails();
    const m = (content: string) => JSON.stringify({ role: "user", content });
    tails.add("k", 1, m("a"));
    tails.add("k", 4, m("d"));
    tails.add("k", 3, m("c"));
    expect(tails.read("k", 50, 5)).toBeUndefined();
    tails.add("k", 2, m("b"));
    expect(tails.read("k", 50, 5)?.map((message) => message.content)).toEqual(["a", "b", "c", "d"]);
  });

  it("keeps a run's window behind the inputs of the runs queued after it", () => {
    const tails = new KnownTails();
    const m = (content: string) => JSON.stringify({ role: "user", content });
    // 50 messages of history, then the inputs of 100 runs accepted at once (a backlog), all this gateway's.
    for (let seq = 1; seq <= 150; seq++) tails.add("k", seq, m(`m${seq}`));
    // The first queued run's window: the 50 messages before its input (seq 51).
    expect(tails.read("k", 50, 51)?.map((message) => message.seq)).toEqual(
      Array.from({ length: 50 }, (_, i) => i + 1),
    );
  });

  it("extends a known tail back with a window read just before it", () => {
    const tails = new KnownTails();
    const m = (content: string) => JSON.stringify({ role: "user", content });
    for (let seq = 41; seq <= 60; seq++) tails.add("k", seq, m(`m${seq}`));
    expect(tails.read("k", 50, 50)).toBeUndefined();
    // Read from the database: 1..49, overlapping the tail from 41.
    tails.fill(
      "k",
      1,
      Array.from({ length: 49 }, (_, i) => m(`m${i + 1}`)),
    );
    expect(tails.read("k", 50, 61)?.map((message) => message.content)).toEqual(
      Array.from({ length: 50 }, (_, i) => `m${i + 11}`),
    );
    // A read that disagrees where it overlaps (the transcript started over meanwhile) extends nothing.
    tails.forget("k");
    for (let seq = 41; seq <= 60; seq++) tails.add("k", seq, m(`m${seq}`));
    tails.fill(
      "k",
      1,
      Array.from({ length: 49 }, (_, i) => m(`other${i + 1}`)),
    );
    expect(tails.read("k", 50, 50)).toBeUndefined();
  });

  it("forgets the least recently used sessions past its character budget", () => {
    const text = JSON.stringify({ role: "user", content: "x".repeat(970) });
    const tails = new KnownTails({ maxChars: 10 * text.length });
    // Four sessions of three messages each: twelve texts, two over the budget.
    for (const key of ["a", "b", "c", "d"]) for (let seq = 1; seq <= 3; seq++) tails.add(key, seq, text);
    expect(tails.read("a", 3, 4)).toBeUndefined();
    for (const key of ["b", "c", "d"]) expect(tails.read(key, 3, 4)).toHaveLength(3);
    // Read, "b" is the most recently used: a new session pushes out "c", the least recently used now.
    tails.read("b", 1, 2);
    for (let seq = 1; seq <= 3; seq++) tails.add("e", seq, text);
    expect(tails.read("c", 3, 4)).toBeUndefined();
    for (const key of ["b", "d", "e"]) expect(tails.read(key, 3, 4)).toHaveLength(3);
  });
});
