import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { chunkMessage } from "./chunk.js";

describe("chunkMessage", () => {
  it("keeps short text whole and drops empty text", () => {
    expect(chunkMessage("hello", 2000)).toEqual(["hello"]);
    expect(chunkMessage("", 2000)).toEqual([]);
  });

  it("prefers paragraph, then line, then word boundaries", () => {
    const para = `${"a".repeat(60)}\n\n${"b".repeat(30)}`;
    expect(chunkMessage(para, 80)).toEqual(["a".repeat(60), "b".repeat(30)]);
    const words = "alpha beta gamma delta epsilon zeta eta theta";
    const pieces = chunkMessage(words, 20);
    expect(pieces.every((p) => p.length <= 20)).toBe(true);
    expect(pieces.join(" ")).toBe(words);
  });

  it("closes and reopens a code fence cut in two", () => {
    const code = `intro\n\`\`\`ts\n${Array.from({ length: 30 }, (_, i) => `const v${i} = ${i};`).join("\n")}\n\`\`\`\noutro`;
    const pieces = chunkMessage(code, 200);
    expect(pieces.length).toBeGreaterThan(1);
    for (const piece of pieces) {
      expect(piece.length).toBeLessThanOrEqual(200);
      expect((piece.match(/^```/gm) ?? []).length % 2).toBe(0);
    }
    expect(pieces[1]?.startsWith("```ts\n")).toBe(true);
  });

  it("terminates with a fence line longer than the limit", () => {
    const text = `\`\`\`${"x".repeat(40)}\n${"y".repeat(100)}`;
    const pieces = chunkMessage(text, 20);
    expect(pieces.every((p) => p.length <= 20)).toBe(true);
  });

  it("never exceeds the limit and never loses non-space text", () => {
    fc.assert(
      fc.property(
        fc.string({ unit: "grapheme", maxLength: 3000 }),
        fc.integer({ min: 16, max: 500 }),
        (text, limit) => {
          const pieces = chunkMessage(text, limit);
          for (const piece of pieces) expect(piece.length).toBeLessThanOrEqual(limit);
          const strip = (s: string) => s.replace(/\s+|```\S*/g, "");
          expect(strip(pieces.join(""))).toBe(strip(text));
        },
      ),
      { numRuns: 500 },
    );
  });
});
