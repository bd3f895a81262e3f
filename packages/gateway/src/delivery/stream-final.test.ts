import { chunkMessage, SessionsError } from "@sessions/core";
import { describe, expect, it } from "vitest";
import type { DeliveryRecord, StreamPreview } from "../store/types.js";
import { createStreamingChannel } from "../test-kit.js";
import { deliverStreamed } from "./stream-final.js";

const TO = "user:alice";
const target = { channel: "chat", to: TO };
const REPLY = Array.from({ length: 30 }, (_, i) => `word${i}`).join(" ");

function record(preview: StreamPreview, text = REPLY): DeliveryRecord & { stream: StreamPreview } {
  return {
    id: "d1",
    idempotencyKey: "reply:r1",
    kind: "reply",
    sessionKey: "agent:main:main",
    channel: "chat",
    to: TO,
    text,
    status: "queued",
    attempts: 0,
    nextAttemptAt: 0,
    createdAt: 0,
    updatedAt: 0,
    stream: preview,
  };
}

describe("deliverStreamed", () => {
  it("edits the streamed messages into the reply, posts the rest, and resumes a retry after the last piece", async () => {
    const channel = createStreamingChannel({ maxMessageLength: 60 });
    const first = await channel.stream.post(target, "word0 wo");
    const parts = chunkMessage(REPLY, 60);
    expect(parts.length).toBe(4);
    const progress = new Map<string, string[]>();
    const delivery = record({ ...target, messageIds: [first], maxChars: 60 });
    // The third piece's post fails: the retry posts it and the fourth, and nothing before them again.
    channel.failStream(
      1,
      new SessionsError("unavailable", "down"),
      (r) => r.op === "post" && r.text === parts[2],
    );
    await expect(deliverStreamed(channel, delivery, target, progress)).rejects.toMatchObject({
      code: "unavailable",
    });
    const { messageIds: ids } = await deliverStreamed(channel, delivery, target, progress);
    expect(channel.shown(TO).map((m) => m.text)).toEqual(parts);
    expect(ids).toEqual(channel.shown(TO).map((m) => m.id));
    expect(ids[0]).toBe(first);
    expect(channel.requests.filter((r) => r.text === parts[1])).toHaveLength(1);
    expect(progress.size).toBe(0);
  });

  it("leaves a streamed message that already shows its piece as it is, and edits one whose text is not known", async () => {
    const channel = createStreamingChannel({ maxMessageLength: 60 });
    const parts = chunkMessage(REPLY, 60);
    const ids = [
      await channel.stream.post(target, parts[0] as string),
      await channel.stream.post(target, "wo"),
    ];
    const preview = { ...target, messageIds: ids, maxChars: 60, shown: [parts[0] as string, null] };
    const { messageIds } = await deliverStreamed(channel, record(preview), target, new Map());
    expect(channel.shown(TO).map((m) => m.text)).toEqual(parts);
    expect(messageIds.slice(0, 2)).toEqual(ids);
    expect(channel.requests.filter((r) => r.op === "edit").map((r) => r.id)).toEqual([ids[1]]);
  });

  it("removes streamed messages the reply does not need, and all of them for an empty reply", async () => {
    const channel = createStreamingChannel({ maxMessageLength: 60 });
    const ids = [await channel.stream.post(target, "a"), await channel.stream.post(target, "b")];
    await deliverStreamed(
      channel,
      record({ ...target, messageIds: ids, maxChars: 60 }, "short"),
      target,
      new Map(),
    );
    expect(channel.shown(TO).map((m) => m.text)).toEqual(["short"]);
    await deliverStreamed(
      channel,
      record({ ...target, messageIds: [ids[0] as string], maxChars: 60 }, ""),
      target,
      new Map(),
    );
    expect(channel.shown(TO)).toEqual([]);
  });

  it("posts a piece whose streamed message is gone, and removes the streamed messages when the reply goes elsewhere", async () => {
    const channel = createStreamingChannel({ maxMessageLength: 60 });
    const gone = await channel.stream.post(target, "x");
    await channel.stream.remove(target, gone);
    await deliverStreamed(
      channel,
      record({ ...target, messageIds: [gone], maxChars: 60 }, "hello"),
      target,
      new Map(),
    );
    expect(channel.shown(TO).map((m) => m.text)).toEqual(["hello"]);

    const elsewhere = { channel: "chat", to: "user:bob" };
    const streamed = await channel.stream.post(elsewhere, "half");
    const moved = { ...record({ ...elsewhere, messageIds: [streamed], maxChars: 60 }, "whole"), to: TO };
    await deliverStreamed(channel, moved, target, new Map());
    expect(channel.shown("user:bob")).toEqual([]);
    expect(channel.sent.map((s) => [s.target.to, s.message.text])).toEqual([[TO, "whole"]]);
  });
});
