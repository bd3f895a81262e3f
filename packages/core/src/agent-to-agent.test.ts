import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  isAnnounceSkip,
  isReplySkip,
  resolveAnnounceTarget,
  resolvePingPongTurns,
} from "./agent-to-agent.js";

describe("skip tokens (SPEC 5.3)", () => {
  it.each([
    ["REPLY_SKIP", true],
    ["  reply_skip  ", true],
    ['"REPLY_SKIP"', true],
    ["'ANNOUNCE_SKIP'.", true],
    ["`NO_REPLY`!", true],
    ["REPLY_SKIP.", true],
    ["“ANNOUNCE_SKIP”", true],
    ["REPLY_SKIP ANNOUNCE_SKIP", true],
    ["NO_REPLY\nNO_REPLY", true],
    ['"REPLY_SKIP."', true],
    ["Ok. REPLY_SKIP", false],
    ["REPLY_SKIP please", false],
    ["REPLYSKIP", false],
    ["", false],
    ["   ", false],
    ["...", false],
  ])("%j → %j", (text, expected) => {
    expect(isReplySkip(text)).toBe(expected);
    expect(isAnnounceSkip(text)).toBe(expected);
  });

  it("non-strings are not skips", () => {
    expect(isReplySkip(undefined)).toBe(false);
    expect(isAnnounceSkip(42)).toBe(false);
  });

  it("any real text around a token makes it not a skip", () => {
    fc.assert(
      fc.property(
        fc.stringMatching(/^[a-z]{1,10}$/),
        fc.constantFrom("REPLY_SKIP", "ANNOUNCE_SKIP", "NO_REPLY"),
        (word, token) => {
          expect(isReplySkip(`${word} ${token}`)).toBe(false);
          expect(isReplySkip(`${token} ${word}`)).toBe(false);
        },
      ),
    );
  });
});

describe("resolvePingPongTurns (SPEC 5.1)", () => {
  it.each([
    [undefined, 5],
    [null, 5],
    ["3", 5],
    [Number.NaN, 5],
    [0, 0],
    [2.9, 2],
    [-1, 0],
    [7, 5],
    [Number.POSITIVE_INFINITY, 5],
    [Number.NEGATIVE_INFINITY, 0],
  ])("%j → %j", (value, expected) => {
    expect(resolvePingPongTurns(value)).toBe(expected);
  });

  it("is always an integer in 0..5", () => {
    fc.assert(
      fc.property(fc.anything(), (value) => {
        const turns = resolvePingPongTurns(value);
        expect(Number.isInteger(turns) && turns >= 0 && turns <= 5).toBe(true);
      }),
    );
  });
});

describe("resolveAnnounceTarget (SPEC 5.4)", () => {
  it.each([
    ["agent:main:discord:group:123", { channel: "discord", to: "channel:123" }],
    ["agent:main:discord:channel:456", { channel: "discord", to: "channel:456" }],
    [
      "agent:main:slack:channel:c1:thread:1710000000.123456",
      { channel: "slack", to: "channel:c1", threadId: "1710000000.123456" },
    ],
    ["agent:main:telegram:group:-100:topic:42", { channel: "telegram", to: "group:-100", threadId: "42" }],
    ["agent:main:whatsapp:group:1203@g.us", { channel: "whatsapp", to: "group:1203@g.us" }],
    ["agent:main:signal:group:AbC", { channel: "signal", to: "group:AbC" }],
    ["agent:main:signal:channel:AbC", { channel: "signal", to: "channel:abc" }],
    ["discord:group:dev", { channel: "discord", to: "channel:dev" }],
    ["agent:main:main", null],
    ["agent:main:direct:bob", null],
    ["agent:main:telegram:direct:42", null],
    ["cron:nightly", null],
    ["agent:main:hook:x", null],
    ["node-a", null],
    ["agent:main:subagent:abc", null],
    ["group:abc", null],
    ["::", null],
  ])("%j → %j", (key, expected) => {
    expect(resolveAnnounceTarget(key)).toEqual(expected);
  });

  it("prefers the stored delivery context, including its thread", () => {
    expect(
      resolveAnnounceTarget("agent:main:discord:group:123", {
        deliveryContext: { channel: "Discord", to: " channel:999 ", threadId: "77", accountId: "Bot A" },
      }),
    ).toEqual({ channel: "discord", to: "channel:999", threadId: "77", accountId: "bot-a" });
    expect(
      resolveAnnounceTarget("agent:main:main", {
        lastChannel: "telegram",
        lastTo: "12345",
        lastThreadId: "9",
      }),
    ).toEqual({ channel: "telegram", to: "12345", threadId: "9" });
    expect(
      resolveAnnounceTarget("agent:main:discord:group:1", { deliveryContext: { channel: "discord" } }),
    ).toEqual({
      channel: "discord",
      to: "channel:1",
    });
  });
});

it("treats a long run of silent tokens as a skip", () => {
  expect(isReplySkip(Array.from({ length: 100 }, () => "REPLY_SKIP").join(" "))).toBe(true);
});
