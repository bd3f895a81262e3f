import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { chunkMessage } from "./chunk.js";
import { parseSessionsConfig, resolveStreaming } from "./config.js";
import {
  BLOCK_MAX_CHARS,
  BLOCK_MIN_CHARS,
  blockVisible,
  STREAMING_MODES,
  streamedParts,
} from "./streaming.js";

/** Text with paragraphs, lines and words, long enough to pass a few limits. */
const prose = fc
  .array(fc.oneof(fc.constantFrom("\n\n", "\n", " ", ". "), fc.string({ minLength: 1, maxLength: 90 })), {
    maxLength: 80,
  })
  .map((pieces) => pieces.join(""));

describe("streamedParts", () => {
  it("shows nothing when streaming is off, and the text so far in partial mode", () => {
    expect(streamedParts("hello", "off", 4096)).toEqual([]);
    expect(streamedParts("hello", "partial", 4096)).toEqual(["hello"]);
    expect(streamedParts("", "partial", 4096)).toEqual([]);
  });

  it("shows a block once a paragraph ends it, or once it is full", () => {
    const first = "a".repeat(BLOCK_MIN_CHARS + 10);
    expect(streamedParts(`${first}\n\nstill writ`, "block", 4096)).toEqual([first]);
    // A paragraph break before the block's least size does not end it.
    expect(blockVisible(`short\n\n${"b".repeat(50)}`)).toBe("");
    const words = Array.from({ length: 200 }, (_, i) => `w${i}`).join(" ");
    const shown = blockVisible(words);
    expect(shown.length).toBeGreaterThan(BLOCK_MIN_CHARS);
    expect(shown.length).toBeLessThanOrEqual(words.length);
    expect(shown.endsWith(" ")).toBe(true);
    for (const part of streamedParts(words, "block", 4096))
      expect(part.length).toBeLessThanOrEqual(BLOCK_MAX_CHARS);
  });

  it("never changes a message it moved past as the text grows", () => {
    fc.assert(
      fc.property(
        prose,
        fc.nat(),
        fc.constantFrom(...STREAMING_MODES),
        fc.integer({ min: 40, max: 4096 }),
        (text, at, mode, max) => {
          const prefix = text.slice(0, at % (text.length + 1));
          const before = streamedParts(prefix, mode, max);
          const after = streamedParts(text, mode, max);
          // Every message but the open last one stays as it was.
          expect(after.slice(0, Math.max(0, before.length - 1))).toEqual(before.slice(0, -1));
          expect(after.length).toBeGreaterThanOrEqual(before.length - 1);
          if (mode === "block") expect(blockVisible(text).startsWith(blockVisible(prefix))).toBe(true);
        },
      ),
    );
  });

  it("shows, once the reply is whole, what a delivery of it would post (in block mode, up to its last block)", () => {
    fc.assert(
      fc.property(prose, fc.integer({ min: 40, max: 4096 }), (text, max) => {
        expect(streamedParts(text, "partial", max)).toEqual(chunkMessage(text.trimEnd(), max));
        const block = streamedParts(text, "block", max);
        for (const part of block) expect(part.length).toBeLessThanOrEqual(Math.min(max, BLOCK_MAX_CHARS));
      }),
    );
  });
});

describe("resolveStreaming", () => {
  it("reads the account's mode, then the channel's, matching ids as they normalise", () => {
    const config = parseSessionsConfig({
      channels: {
        Telegram: { streaming: "block", accounts: { "Work Bot": { streaming: " OFF " } } },
        discord: { streaming: "partial" },
      },
    });
    expect(resolveStreaming(config, "telegram", "work-bot")).toBe("off");
    expect(resolveStreaming(config, "telegram", "other")).toBe("block");
    expect(resolveStreaming(config, "discord")).toBe("partial");
    expect(resolveStreaming(config, "slack")).toBeUndefined();
  });

  it("refuses a mode it does not know, naming the field", () => {
    expect(() => parseSessionsConfig({ channels: { discord: { streaming: "fast" } } })).toThrow(
      expect.objectContaining({ code: "invalid_config", field: "channels.discord.streaming" }),
    );
  });
});
