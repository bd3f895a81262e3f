import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  ignoredReason,
  type ResolveContext,
  resolveSlackMessage,
  type SlackMessageEvent,
} from "./inbound.js";

const base: ResolveContext = {
  teamId: "T0ACME001",
  botUserId: "U0BOTACME",
  channelType: "channel",
  requireMention: true,
  owners: new Set(["U0ALICE01"]),
  teamName: "Acme",
  conversationName: "general",
};
const event = (fields: Partial<SlackMessageEvent> = {}): SlackMessageEvent => ({
  type: "message",
  channel: "C0GENERAL",
  user: "U0ALICE01",
  ts: "1763800010.000100",
  text: "<@U0BOTACME> status &amp; plans",
  ...fields,
});

describe("resolveSlackMessage", () => {
  it("turns a mention in a channel into a channel message without the mention, entities decoded", () => {
    expect(resolveSlackMessage(event(), base)).toEqual({
      mentioned: true,
      inbound: {
        channel: "slack",
        accountId: "T0ACME001",
        chatType: "channel",
        peerId: "C0GENERAL",
        senderId: "U0ALICE01",
        isOwner: true,
        to: "channel:C0GENERAL",
        text: "status & plans",
        messageId: "C0GENERAL:1763800010.000100",
        displayName: "Acme #general",
      },
    });
  });

  it("hands other people's mentions, channel links and URLs to the agent as Slack wrote them", () => {
    const text =
      "<@U0BOTACME> ask <@U0BOB0001> about <https://example.com/doc?a=1&amp;b=2|the doc> in <#C0OPS0001|ops> &amp; <!here>";
    expect(resolveSlackMessage(event({ text }), base)).toMatchObject({
      inbound: {
        text: "ask <@U0BOB0001> about <https://example.com/doc?a=1&b=2|the doc> in <#C0OPS0001|ops> & <!here>",
      },
    });
    // The bot's own mention goes wherever it is, also with a label.
    expect(resolveSlackMessage(event({ text: "thanks <@U0BOTACME|sessions>!" }), base)).toMatchObject({
      inbound: { text: "thanks !" },
    });
  });

  it("maps conversation types to chat types: channel and private channel → channel, mpim → group, im → direct", () => {
    const chat = (channelType: ResolveContext["channelType"]) => {
      const r = resolveSlackMessage(event(), { ...base, channelType, senderName: "alice" });
      return "inbound" in r ? [r.inbound.chatType, r.inbound.peerId, r.inbound.displayName] : r.ignored;
    };
    expect(chat("channel")).toEqual(["channel", "C0GENERAL", "Acme #general"]);
    expect(chat("group")).toEqual(["channel", "C0GENERAL", "Acme #general"]);
    expect(chat("mpim")).toEqual(["group", "C0GENERAL", "general"]);
    expect(chat("im")).toEqual(["direct", "U0ALICE01", "alice"]);
  });

  it("gates channels and multi-person DMs on a mention, never DMs; engaged threads pass", () => {
    const plain = event({ text: "status" });
    expect(resolveSlackMessage(plain, base)).toEqual({ ignored: "not mentioned" });
    expect(resolveSlackMessage(plain, { ...base, channelType: "mpim" })).toEqual({
      ignored: "not mentioned",
    });
    expect("inbound" in resolveSlackMessage(plain, { ...base, channelType: "im" })).toBe(true);
    expect("inbound" in resolveSlackMessage(plain, { ...base, requireMention: false })).toBe(true);
    expect("inbound" in resolveSlackMessage(plain, { ...base, viaAppMention: true })).toBe(true);
    const inThread = event({ text: "status", thread_ts: "1763800000.000001" });
    expect(resolveSlackMessage(inThread, base)).toEqual({ ignored: "not mentioned" });
    const engaged = resolveSlackMessage(inThread, { ...base, threadEngaged: true });
    expect(engaged).toMatchObject({
      inbound: { threadId: "1763800000.000001", threadKind: "thread", parentId: "C0GENERAL" },
    });
    // A thread's root message is not "in" its thread.
    const root = resolveSlackMessage(event({ thread_ts: "1763800010.000100" }), base);
    expect(root).toMatchObject({ inbound: { to: "channel:C0GENERAL" } });
    expect(root).not.toHaveProperty("inbound.threadId");
  });

  it("ignores bots, the bot itself, edits and other subtypes, and mention-only messages", () => {
    expect(ignoredReason(event({ bot_id: "B0CI" }))).toBe("a bot's message");
    expect(ignoredReason(event({ user: "U0BOTACME" }), "U0BOTACME")).toBe("the bot's own message");
    expect(ignoredReason(event({ subtype: "message_changed" }))).toBe("subtype message_changed");
    expect(ignoredReason(event({ subtype: "channel_join" }))).toBe("subtype channel_join");
    expect(ignoredReason(event({ subtype: "file_share" }))).toBeUndefined();
    expect(ignoredReason(event({ subtype: "thread_broadcast" }))).toBeUndefined();
    expect(resolveSlackMessage(event({ text: "<@U0BOTACME|sessions>  " }), base)).toEqual({
      ignored: "no text",
    });
  });

  it("never throws on arbitrary events, and whatever it passes has a sender, a target and text", () => {
    const anyEvent = fc.record(
      {
        type: fc.constantFrom("message", "app_mention", "reaction_added"),
        subtype: fc.constantFrom("bot_message", "file_share", "message_changed"),
        channel: fc.constantFrom("C0GENERAL", "D0ALICEDM", ""),
        user: fc.constantFrom("U0ALICE01", "U0BOTACME", ""),
        bot_id: fc.constant("B0X"),
        text: fc.string(),
        ts: fc.constantFrom("1.1", ""),
        thread_ts: fc.constantFrom("1.1", "2.2"),
        hidden: fc.boolean(),
      },
      { requiredKeys: ["type"] },
    );
    fc.assert(
      fc.property(anyEvent, fc.boolean(), (e, requireMention) => {
        const r = resolveSlackMessage(e, { ...base, requireMention });
        if ("inbound" in r) {
          expect(r.inbound.senderId).not.toBe("U0BOTACME");
          expect(r.inbound.text.trim()).not.toBe("");
          expect(r.inbound.to).toMatch(/^channel:[A-Z0-9]+$/);
          if (requireMention) expect(r.mentioned).toBe(true);
        }
      }),
    );
  });
});
