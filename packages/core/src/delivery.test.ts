import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { mergeDeliveryContext, normalizeDeliveryContext } from "./delivery.js";

describe("normalizeDeliveryContext (SPEC 8.1)", () => {
  it.each([
    [
      { channel: " TG ", to: " 123 ", accountId: "Main Bot", threadId: 42 },
      { channel: "telegram", to: "123", accountId: "main-bot", threadId: "42" },
    ],
    [{ channel: "discord", to: "", accountId: "  ", threadId: "" }, { channel: "discord" }],
    [{ channel: "", to: "  " }, undefined],
    [{}, undefined],
    [null, undefined],
    ["discord", undefined],
    [{ channel: 5, to: 7, threadId: Number.NaN }, undefined],
  ])("%j → %j", (input, expected) => {
    expect(normalizeDeliveryContext(input as never)).toEqual(expected);
  });

  it("uses adapter aliases", () => {
    expect(normalizeDeliveryContext({ channel: "dc", to: "x" }, { dc: "discord" })).toEqual({
      channel: "discord",
      to: "x",
    });
  });

  it("is idempotent", () => {
    const ctx = fc.record(
      {
        channel: fc.oneof(fc.string(), fc.constant("tg")),
        to: fc.string(),
        accountId: fc.string(),
        threadId: fc.oneof(fc.string(), fc.integer()),
      },
      { requiredKeys: [] },
    );
    fc.assert(
      fc.property(ctx, (c) => {
        const once = normalizeDeliveryContext(c);
        expect(normalizeDeliveryContext(once)).toEqual(once);
      }),
    );
  });
});

describe("mergeDeliveryContext", () => {
  it("fills missing fields from the fallback on the same channel", () => {
    expect(
      mergeDeliveryContext(
        { channel: "discord", threadId: "9" },
        { channel: "discord", to: "channel:1", accountId: "a" },
      ),
    ).toEqual({
      channel: "discord",
      to: "channel:1",
      accountId: "a",
      threadId: "9",
    });
    expect(mergeDeliveryContext({ to: "x" }, { channel: "telegram", to: "y", threadId: "3" })).toEqual({
      channel: "telegram",
      to: "x",
      threadId: "3",
    });
  });

  it("never mixes fields across different channels", () => {
    expect(
      mergeDeliveryContext(
        { channel: "discord" },
        { channel: "telegram", to: "123", accountId: "a", threadId: "4" },
      ),
    ).toEqual({
      channel: "discord",
    });
  });

  it("handles empties", () => {
    expect(mergeDeliveryContext(undefined, { channel: "tg" })).toEqual({ channel: "telegram" });
    expect(mergeDeliveryContext({ channel: "tg" }, null)).toEqual({ channel: "telegram" });
    expect(mergeDeliveryContext(undefined, undefined)).toBeUndefined();
  });
});
