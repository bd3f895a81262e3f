import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { escapeMrkdwn, unescapeMrkdwn } from "./mrkdwn.js";
import { planSlackMessages, renderSlackPiece, SLACK_MAX_MESSAGE_LENGTH, splitForSlack } from "./split.js";

// Text heavy in the characters that grow when escaped, in the boundaries the splitter cuts at, and in astral
// characters (surrogate pairs).
const units = ["&", "<", ">", "a", "bcd", " ", "\n", "\n\n", "*", "é", "😀", "&amp;", "&&&&", "<@U0ALICE01>"];
const slackish = fc.string({ unit: fc.constantFrom(...units), maxLength: 3000, size: "max" });
// The same with code fences and stray backticks.
const withFences = fc.string({
  unit: fc.constantFrom(...units, "```", "```js\n", "\n```\n", "`", "x = a < b && c > d;\n"),
  maxLength: 3000,
  size: "max",
});
const limits = fc.integer({ min: 80, max: 600 });
const fenceCount = (text: string) => text.split("```").length - 1;

describe("splitting replies at Slack's limit", () => {
  it("sends text without code blocks as messages whose concatenation is exactly the escaped text", () => {
    // Whitespace runs shorter than a message and a last character that is not whitespace: every piece can carry
    // text, so nothing at all may be left out.
    const prose = slackish
      .map((text) => `${text.replace(/\s{20,}/g, (run) => run.slice(0, 19))}.`)
      .filter((text) => !text.includes("`"));
    fc.assert(
      fc.property(prose, limits, (text, limit) => {
        const messages = splitForSlack(text, limit);
        expect(messages.join("")).toBe(escapeMrkdwn(text));
        for (const m of messages) {
          expect(m.length).toBeLessThanOrEqual(limit);
          expect(m.trim()).not.toBe("");
        }
      }),
      { numRuns: 200 },
    );
  });

  it("cuts any text into slices that join to exactly the escaped text, never inside an entity or a pair", () => {
    fc.assert(
      fc.property(withFences, limits, (text, limit) => {
        const plan = planSlackMessages(text, limit);
        expect(plan.map((p) => p.text).join("")).toBe(escapeMrkdwn(text));
        for (const [i, piece] of plan.entries()) {
          expect(renderSlackPiece(piece).length).toBeLessThanOrEqual(limit);
          expect(piece.text).not.toBe("");
          if (i === plan.length - 1) continue;
          expect(piece.text).not.toMatch(/&(a|am|amp|l|lt|g|gt)?$/);
          const last = piece.text.charCodeAt(piece.text.length - 1);
          expect(last >= 0xd800 && last <= 0xdbff).toBe(false);
          expect(piece.text.endsWith("`") && plan[i + 1]?.text.startsWith("`")).toBe(false);
        }
        // Only whitespace is ever left unsent (Slack refuses messages without text).
        for (const piece of plan) expect(piece.blank).toBe(piece.text.trim() === "");
        expect(splitForSlack(text, limit)).toEqual(plan.filter((p) => !p.blank).map(renderSlackPiece));
      }),
      { numRuns: 200 },
    );
  });

  it("closes a code block cut in two at the end of one message and reopens it at the start of the next", () => {
    fc.assert(
      fc.property(withFences, limits, (text, limit) => {
        const plan = planSlackMessages(text, limit);
        let open = false;
        for (const [i, piece] of plan.entries()) {
          expect(piece.reopen).toBe(open);
          open = open !== (fenceCount(piece.text) % 2 === 1);
          expect(piece.close).toBe(open && i < plan.length - 1);
        }
      }),
      { numRuns: 200 },
    );
    const code = `Here:\n\`\`\`js\n${"if (a < b && c > d) x();\n".repeat(12)}\`\`\`\nafter`;
    const messages = splitForSlack(code, 120);
    expect(messages.length).toBeGreaterThan(2);
    for (const m of messages.slice(0, -1)) expect(m.endsWith("```")).toBe(true);
    for (const m of messages.slice(1)) expect(m.startsWith("```\n")).toBe(true);
    // Each message is its slice with the repair around it, and the slices are the escaped text.
    const plan = planSlackMessages(code, 120);
    expect(messages).toEqual(plan.map(renderSlackPiece));
    expect(unescapeMrkdwn(plan.map((p) => p.text).join(""))).toBe(code);
    expect(plan.every((p) => p.text.endsWith("\n") || !p.close)).toBe(true);
  });

  it("sends short text as one message, nothing for empty or blank text, and cuts long words hard", () => {
    expect(splitForSlack("hi & bye")).toEqual(["hi &amp; bye"]);
    expect(splitForSlack("")).toEqual([]);
    expect(splitForSlack(" \n\n ")).toEqual([]);
    const long = "x".repeat(SLACK_MAX_MESSAGE_LENGTH * 2 + 5);
    const messages = splitForSlack(long);
    expect(messages).toHaveLength(3);
    expect(messages.join("")).toBe(long);
    // A paragraph end near the limit is where the cut goes, and the blank line stays with the first message.
    const paragraphs = `${"a ".repeat(1900)}\n\n${"b ".repeat(100)}`;
    expect(splitForSlack(paragraphs).map((m) => m.slice(-2))).toEqual(["\n\n", "b "]);
  });
});
