import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { StoredMessage } from "../types.js";
import { copyJson, TranscriptTails } from "./transcript-tails.js";

const message = (seq: number, content = `m${seq}`): StoredMessage => ({
  role: seq % 2 === 1 ? "user" : "assistant",
  content,
  ts: seq,
  seq,
});
const sized = (m: StoredMessage) => ({ message: m, size: JSON.stringify(m).length });

describe("copyJson", () => {
  it("returns an equal value sharing no object with the original", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const copy = copyJson(value);
        expect(copy).toEqual(value);
        const objects = (v: unknown, into: Set<unknown>): Set<unknown> => {
          if (v !== null && typeof v === "object") {
            into.add(v);
            for (const x of Object.values(v)) objects(x, into);
          }
          return into;
        };
        const mine = objects(copy, new Set());
        for (const o of objects(value, new Set())) expect(mine.has(o)).toBe(false);
      }),
    );
  });

  it("keeps an own __proto__ key a plain property", () => {
    const parsed = JSON.parse('{"a":{"__proto__":{"x":1}}}') as { a: Record<string, unknown> };
    const copy = copyJson(parsed);
    expect(Object.getPrototypeOf(copy.a)).toBe(Object.prototype);
    expect(Object.keys(copy.a)).toEqual(["__proto__"]);
    expect(copy).toEqual(parsed);
  });
});

describe("TranscriptTails", () => {
  it("serves the newest messages of a cached tail as copies, and says when it cannot", () => {
    const tails = new TranscriptTails({ perSession: 4, maxBytes: 1_000_000, maxSessions: 10 });
    tails.fill("s", [1, 2, 3, 4, 5, 6].map((seq) => sized(message(seq))).slice(-4));
    expect(tails.count("s")).toBe(6);
    expect(tails.read("s", 2)?.map((m) => m.seq)).toEqual([5, 6]);
    expect(tails.read("s", 3, 6)?.map((m) => m.seq)).toEqual([3, 4, 5]);
    expect(tails.read("s", 4, 6)).toBeUndefined();
    expect(tails.read("s", 10, 1)).toEqual([]);
    const [first] = tails.read("s", 1) ?? [];
    (first as StoredMessage).content = "changed";
    expect(tails.read("s", 1)?.[0]?.content).toBe("m6");
    expect(tails.read("other", 1)).toBeUndefined();
    const nested = { ...message(7), sender: { id: "u1", name: "Ada" } } as StoredMessage;
    tails.append("s", nested, 50);
    const [copy] = tails.read("s", 1) ?? [];
    (copy as unknown as { sender: { name: string } }).sender.name = "changed";
    expect(tails.read("s", 1)).toEqual([nested]);
    expect((nested as unknown as { sender: { name: string } }).sender.name).toBe("Ada");
  });

  it("follows committed appends, starts new transcripts, and drops a tail it cannot follow", () => {
    const tails = new TranscriptTails({ perSession: 3, maxBytes: 1_000_000, maxSessions: 10 });
    tails.append("new", message(1), 10);
    expect(tails.read("new", 5)?.map((m) => m.seq)).toEqual([1]);
    for (const seq of [2, 3, 4]) tails.append("new", message(seq), 10);
    expect(tails.read("new", 3)?.map((m) => m.seq)).toEqual([2, 3, 4]);
    expect(tails.count("new")).toBe(4);
    tails.append("new", message(9), 10);
    expect(tails.has("new")).toBe(false);
    tails.append("unknown", message(7), 10);
    expect(tails.has("unknown")).toBe(false);
    tails.fill("empty", []);
    expect(tails.read("empty", 5)).toEqual([]);
    expect(tails.count("empty")).toBe(0);
  });

  it("keeps within its bounds, dropping the least recently used sessions first", () => {
    const tails = new TranscriptTails({ perSession: 10, maxBytes: 100, maxSessions: 3 });
    for (const key of ["a", "b", "c"]) tails.append(key, message(1), 20);
    tails.read("a", 1);
    tails.append("d", message(1), 20);
    expect(["a", "b", "c", "d"].filter((k) => tails.has(k))).toEqual(["a", "c", "d"]);
    tails.append("a", message(2), 60);
    expect(["a", "c", "d"].filter((k) => tails.has(k))).toEqual(["a", "d"]);
  });
});
