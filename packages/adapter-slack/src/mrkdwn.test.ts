import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { escapeMrkdwn, SLACK_MAX_MESSAGE_LENGTH, splitForSlack, unescapeMrkdwn } from "./mrkdwn.js";

const words = (text: string) => text.split(/\s+/).filter(Boolean);
// Text heavy in the characters that grow when escaped, and in the boundaries the splitter cuts at. (Code fences,
// which the splitter closes and reopens around a cut, have their own example below.)
const slackish = fc.string({
  unit: fc.constantFrom("&", "<", ">", "a", "bcd", " ", "\n", "\n\n", "*", "é", "😀", "&amp;", "&&&&"),
  maxLength: 3000,
  size: "max",
});

describe("mrkdwn escaping and splitting", () => {
  it("escapes exactly &, < and >, and unescaping gives the text back", () => {
    expect(escapeMrkdwn("a & b <@U1> <!channel> > c")).toBe("a &amp; b &lt;@U1&gt; &lt;!channel&gt; &gt; c");
    fc.assert(
      fc.property(fc.string(), (text) => {
        const escaped = escapeMrkdwn(text);
        expect(escaped).not.toMatch(/[<>]/);
        expect(escaped.replace(/&(amp|lt|gt);/g, "")).not.toContain("&");
        expect(unescapeMrkdwn(escaped)).toBe(text);
      }),
    );
  });

  it("keeps every piece within the limit after escaping and loses no text", () => {
    fc.assert(
      fc.property(slackish, fc.integer({ min: 80, max: 600 }), (text, limit) => {
        const pieces = splitForSlack(text, limit);
        for (const piece of pieces) {
          expect(piece.length).toBeLessThanOrEqual(limit);
          // Never cut inside an entity.
          expect(piece).not.toMatch(/&(a|am|l|g|lt|gt|amp)?$/);
        }
        expect(words(pieces.map(unescapeMrkdwn).join(" ")).join("")).toBe(words(text).join(""));
      }),
      { numRuns: 200 },
    );
  });

  it("closes a code fence cut in two and reopens it in the next message", () => {
    const text = `\`\`\`js\n${"if (a < b && c > d) x();\n".repeat(12)}\`\`\`\nafter`;
    const pieces = splitForSlack(text, 120).map(unescapeMrkdwn);
    expect(pieces.length).toBeGreaterThan(2);
    for (const piece of pieces.slice(0, -1)) expect(piece.endsWith("```")).toBe(true);
    for (const piece of pieces.slice(1)) expect(piece.startsWith("```js")).toBe(true);
    const body = pieces.map((p) => p.replace(/^```js\n?|\n?```$/g, "")).join("\n");
    expect(words(body.replace(/```/g, ""))).toEqual(words(text.replace(/```js|```/g, "")));
  });

  it("sends short text as one message and nothing for empty text", () => {
    expect(splitForSlack("hi & bye")).toEqual(["hi &amp; bye"]);
    expect(splitForSlack("")).toEqual([]);
    const long = "x".repeat(SLACK_MAX_MESSAGE_LENGTH * 2 + 5);
    expect(splitForSlack(long).map((p) => p.length)).toEqual([
      expect.any(Number),
      expect.any(Number),
      expect.any(Number),
    ]);
    expect(splitForSlack(long).join("")).toBe(long);
  });
});
