import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  assistantMessage,
  chatMessageText,
  type HistoryMessage,
  isTerminalChatState,
  normalizeHistoryMessage,
} from "./wire-events.js";

describe("chat event states", () => {
  it("ends a run only at final, aborted and error; status, delta and unknown states do not", () => {
    for (const state of ["final", "aborted", "error"]) expect(isTerminalChatState(state)).toBe(true);
    for (const state of ["status", "delta", "", "FINAL", "thinking", undefined, null, 3])
      expect(isTerminalChatState(state)).toBe(false);
    fc.assert(
      fc.property(fc.anything(), (state) => {
        expect(isTerminalChatState(state)).toBe(
          state === "final" || state === "aborted" || state === "error",
        );
      }),
    );
  });
});

describe("chatMessageText", () => {
  it("reads the text of either message shape", () => {
    fc.assert(
      fc.property(fc.string(), (text) => {
        expect(chatMessageText(text)).toBe(text);
        expect(chatMessageText(assistantMessage(text))).toBe(text);
        expect(chatMessageText({ role: "assistant", content: text })).toBe(text);
      }),
    );
  });

  it("joins text parts, skips other parts, and gives undefined when there is no text", () => {
    expect(
      chatMessageText({
        role: "assistant",
        content: [
          { type: "text", text: "a" },
          { type: "image", url: "x" },
          { type: "text", text: "b" },
        ],
      }),
    ).toBe("ab");
    for (const none of [undefined, null, 42, {}, { content: [] }, { content: [{ type: "image" }] }, [null]])
      expect(chatMessageText(none)).toBeUndefined();
    fc.assert(fc.property(fc.anything(), (value) => typeof (chatMessageText(value) ?? "") === "string"));
  });
});

describe("normalizeHistoryMessage", () => {
  const time = fc.integer({ min: 0, max: 4_102_444_800_000 });
  const seq = fc.integer({ min: 1, max: 1_000_000 });

  it("fills ts and seq from OpenClaw's timestamp and __openclaw.seq, keeping everything else", () => {
    fc.assert(
      fc.property(time, seq, fc.string(), (timestamp, n, text) => {
        const message: HistoryMessage = {
          role: "user",
          content: [{ type: "text", text }],
          timestamp,
          __openclaw: { seq: n, id: "m" },
        };
        expect(normalizeHistoryMessage(message)).toEqual({ ...message, ts: timestamp, seq: n });
      }),
    );
  });

  it("keeps ts and seq that are already there, and leaves messages without either as they are", () => {
    fc.assert(
      fc.property(time, time, seq, seq, (ts, timestamp, own, theirs) => {
        const message: HistoryMessage = { role: "assistant", content: "x", ts, seq: own, timestamp };
        const withMeta = { ...message, __openclaw: { seq: theirs } };
        expect(normalizeHistoryMessage(withMeta)).toBe(withMeta);
      }),
    );
    const bare: HistoryMessage = { role: "user", content: "x" };
    expect(normalizeHistoryMessage(bare)).toBe(bare);
    expect(normalizeHistoryMessage({ role: "user", content: "x", __openclaw: { seq: Number.NaN } })).toEqual({
      role: "user",
      content: "x",
      __openclaw: { seq: Number.NaN },
    });
  });

  it("reads an ISO timestamp", () => {
    const iso = {
      role: "user",
      content: "x",
      timestamp: "2026-01-02T03:04:05.000Z",
    } as unknown as HistoryMessage;
    expect(normalizeHistoryMessage(iso).ts).toBe(Date.parse("2026-01-02T03:04:05.000Z"));
  });
});
