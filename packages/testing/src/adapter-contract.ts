import { type ChannelAdapterV1, type DeliveryTarget, SessionsError } from "@sessions/core";
import { afterEach, describe, expect, it } from "vitest";

/** What a platform's test harness gives the shared adapter contract. */
export interface AdapterContractHarness {
  adapter: ChannelAdapterV1;
  /** A conversation the bot can post in, and one that has threads/topics (may be the same). */
  chat: DeliveryTarget;
  threadParent: DeliveryTarget;
  /** Messages the fake platform accepted (not those it refused or rate-limited), in order. */
  sent(): { to: string; threadId?: string | undefined; text: string }[];
  /** The next send (after letting `after` sends through, default 0) is rate-limited by the platform for `seconds`. */
  rateLimitNextSend(seconds: number, options?: { after?: number | undefined }): void;
  /** The next send is refused for good (unknown chat, no permission). */
  refuseNextSend(): void;
  /** The bot's messages `target` shows now (edits applied, removed ones gone), oldest first: for adapters that stream. */
  shown?(target: DeliveryTarget): string[];
  /** Stops everything `setup` started; called after each case. */
  close(): Promise<void>;
}

/** Three paragraphs that each nearly fill a message: `0…`, `1…`, `2…`. */
function threeMessages(limit: number): string {
  return Array.from({ length: 3 }, (_, i) => `${String(i).repeat(limit - 10)}`).join("\n\n");
}

/**
 * The behaviours every `ChannelAdapterV1` owes the gateway, run against a real platform library talking to a fake
 * API: chunking at the platform limit with every id returned, thread creation and delivery into the thread the way
 * the gateway binds it, rate limits as `rate_limited` with `retryAfterMs`, a retry after a partly sent message that
 * posts no chunk twice, permanent refusals and targets that are no conversation as `invalid_params`.
 */
export function describeChannelAdapterContract(
  name: string,
  setup: () => Promise<AdapterContractHarness>,
): void {
  describe(`ChannelAdapterV1 contract: ${name}`, () => {
    let h: AdapterContractHarness | undefined;
    const open = async () => {
      h = await setup();
      return h;
    };
    afterEach(async () => {
      await h?.close();
      h = undefined;
    });

    it("declares spec version 1 and its capabilities", async () => {
      const { adapter } = await open();
      expect(adapter.specVersion).toBe(1);
      expect(adapter.capabilities.maxMessageLength).toBeGreaterThan(0);
    });

    it("chunks long text at the platform limit and returns every message id", async () => {
      const { adapter, chat, sent } = await open();
      const limit = adapter.capabilities.maxMessageLength as number;
      const text = threeMessages(limit);
      const receipt = await adapter.deliver(
        chat,
        { text, kind: "reply", sessionKey: "s" },
        { idempotencyKey: "chunks" },
      );
      const messages = sent();
      expect(messages.length).toBe(3);
      expect(receipt.messageIds).toHaveLength(3);
      for (const m of messages) expect(m.text.length).toBeLessThanOrEqual(limit);
      expect(messages.map((m) => m.text[0])).toEqual(["0", "1", "2"]);
    });

    it("creates a thread and posts into it when the target names it, as the gateway binds it", async () => {
      const { adapter, threadParent, sent } = await open();
      expect(adapter.capabilities.threads).toBe(true);
      const thread = await adapter.createThread?.({
        parent: threadParent,
        name: "contract",
        sessionKey: "s",
      });
      expect(thread?.threadId).toEqual(expect.any(String));
      expect(thread?.threadId).not.toBe("");
      const before = sent().length;
      // The gateway records `to` from the answer (falling back to the parent's) and the thread id with it.
      await adapter.deliver(
        { ...threadParent, to: thread?.to ?? threadParent.to, threadId: thread?.threadId as string },
        { text: "in thread", kind: "announce", sessionKey: "s" },
        { idempotencyKey: "thread" },
      );
      const posted = sent()
        .slice(before)
        .find((m) => m.text === "in thread");
      expect(posted?.threadId ?? posted?.to).toContain(thread?.threadId as string);
    });

    it("surfaces platform rate limits as rate_limited with retryAfterMs", async () => {
      const { adapter, chat, rateLimitNextSend } = await open();
      rateLimitNextSend(3);
      const error = await adapter
        .deliver(chat, { text: "x", kind: "reply", sessionKey: "s" }, { idempotencyKey: "rl" })
        .catch((e) => e);
      expect(SessionsError.isInstance(error)).toBe(true);
      expect(error).toMatchObject({ code: "rate_limited" });
      expect(error.retryAfterMs).toBeGreaterThanOrEqual(2000);
      expect(error.retryAfterMs).toBeLessThanOrEqual(4000);
    });

    it("retries a partly sent message without posting any chunk twice (the outbox retries with the same key)", async () => {
      const { adapter, chat, sent, rateLimitNextSend } = await open();
      const limit = adapter.capabilities.maxMessageLength as number;
      const message = { text: threeMessages(limit), kind: "reply" as const, sessionKey: "s" };
      rateLimitNextSend(1, { after: 1 });
      const error = await adapter.deliver(chat, message, { idempotencyKey: "partial" }).catch((e) => e);
      expect(error).toMatchObject({ code: "rate_limited" });
      expect(sent().map((m) => m.text[0])).toEqual(["0"]);
      // As the outbox does: wait what the platform asked for, then deliver the same item again.
      await new Promise((resolve) => setTimeout(resolve, error.retryAfterMs));
      const receipt = await adapter.deliver(chat, message, { idempotencyKey: "partial" });
      expect(sent().map((m) => m.text[0])).toEqual(["0", "1", "2"]);
      expect(receipt.messageIds).toHaveLength(3);
      expect(new Set(receipt.messageIds).size).toBe(3);
    });

    it("refuses a target that is no conversation as invalid_params naming `to`, posting nothing", async () => {
      const { adapter, chat, sent } = await open();
      for (const to of ["", "not a conversation", "channel:"]) {
        const error = await adapter
          .deliver(
            { ...chat, to },
            { text: "x", kind: "reply", sessionKey: "s" },
            { idempotencyKey: `bad ${to}` },
          )
          .catch((e) => e);
        expect(SessionsError.isInstance(error)).toBe(true);
        expect(error).toMatchObject({ code: "invalid_params", field: "to" });
      }
      expect(sent()).toHaveLength(0);
    });

    it("reports permanent refusals as invalid_params (the outbox does not retry them)", async () => {
      const { adapter, chat, refuseNextSend } = await open();
      refuseNextSend();
      const error = await adapter
        .deliver(chat, { text: "x", kind: "reply", sessionKey: "s" }, { idempotencyKey: "no" })
        .catch((e) => e);
      expect(error).toMatchObject({ code: "invalid_params" });
    });

    it("streams, when it has `stream`: posts, edits (the same text again too), removes (a gone message too)", async () => {
      const { adapter, chat, shown } = await open();
      const stream = adapter.stream;
      if (stream === undefined) return;
      expect(shown, "a harness for an adapter that streams gives `shown`").toBeDefined();
      const read = () => shown?.(chat) ?? [];
      const before = read().length;
      expect(stream.maxMessageLength).toBeGreaterThan(0);
      expect(["off", "partial", "block"]).toContain(stream.defaultMode);
      const id = await stream.post(chat, "Writing the");
      expect(id).toEqual(expect.any(String));
      await stream.edit(chat, id, "Writing the reply…");
      await stream.edit(chat, id, "Writing the reply…");
      expect(read().slice(before)).toEqual(["Writing the reply…"]);
      const long = "y".repeat(stream.maxMessageLength);
      await stream.edit(chat, id, long);
      expect(read().slice(before)).toEqual([long]);
      await stream.remove(chat, id);
      await stream.remove(chat, id);
      expect(read()).toHaveLength(before);
    });
  });
}
