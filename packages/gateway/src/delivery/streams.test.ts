import { BLOCK_MIN_CHARS, chunkMessage, SessionsError } from "@sessions/core";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { createManualClock } from "../clock.js";
import type { GatewayOptions } from "../gateway.js";
import type { ScriptedAgent } from "../runner/scripted.js";
import {
  cleanupDirs,
  createStreamingChannel,
  eventually,
  type Harness,
  harness,
  rateLimited,
  STORE_KINDS,
  type StreamingChannel,
} from "../test-kit.js";
import { createReplyStream } from "./streams.js";

afterAll(cleanupDirs);

const TO = "user:alice";
const WORDS = Array.from({ length: 30 }, (_, i) => `word${i} `);
/** The reply the writer agent streams, word by word, 300 ms apart. */
const REPLY = WORDS.join("").trim();
const MORE = Array.from({ length: 12 }, (_, i) => `more${i}`).join(" ");
const PARAGRAPHS = [1, 2, 3].map((n) => `${String(n).repeat(BLOCK_MIN_CHARS + 20)}\n\n`);

const writer: ScriptedAgent = async (turn) => {
  const pieces = turn.text === "paragraphs" ? PARAGRAPHS : WORDS;
  for (const piece of pieces) {
    turn.say(piece);
    await turn.sleep(300);
  }
  if (turn.text === "fail") throw new Error("model went away");
  if (turn.text === "silent") return "";
  // A reply that goes on after what it streamed: its delivery edits and posts beyond what the chat shows.
  if (turn.text === "more") return `${pieces.join("").trim()} ${MORE}`;
  return pieces.join("").trim();
};

const inbound = (text: string) => ({
  channel: "chat",
  chatType: "direct" as const,
  peerId: "alice",
  senderId: "alice",
  to: TO,
  text,
});

describe.each(STORE_KINDS)("streaming replies on the %s store", (kind) => {
  let h: Harness;
  let channel: StreamingChannel;
  afterEach(async () => {
    await h?.close();
  });

  async function open(overrides: Partial<GatewayOptions> = {}, maxMessageLength = 60) {
    const clock = createManualClock();
    channel = createStreamingChannel({ maxMessageLength, intervalMs: 1000, clock });
    h = await harness(kind, { main: writer }, overrides, { clock, channel });
    return h;
  }

  /** Sends `text`, lets the run write for `ms`, and returns its run id. */
  async function send(text: string, ms: number) {
    const { runId } = await h.gateway.receive(inbound(text));
    await h.clock.advance(ms);
    return runId as string;
  }

  it("edits one message as the reply grows, paced, and ends it as the reply, split where the limit is passed", async () => {
    await open();
    const runId = await send("write", 1500);
    const early = channel.shown(TO);
    expect(early).toHaveLength(1);
    expect(REPLY.startsWith(early[0]?.text as string)).toBe(true);
    await h.clock.advance(10_000);
    expect((await h.gateway.agentWait({ runId })).status).toBe("ok");
    await eventually(async () => {
      const [delivery] = await h.store.listDeliveries({ runId });
      expect(delivery?.status).toBe("delivered");
      expect(delivery?.receipt).toEqual(channel.shown(TO).map((m) => m.id));
    });
    // The chat ends with the reply, cut as a delivery cuts it; nothing was posted whole besides.
    expect(channel.shown(TO).map((m) => m.text)).toEqual(chunkMessage(REPLY, 60));
    expect(channel.sent).toEqual([]);
    expect(channel.shown(TO)[0]?.edits).toBeGreaterThan(0);
    // One request a second at most while the run wrote: the latest text wins, not every delta.
    const endedAt = (await h.store.getRun(runId))?.endedAt as number;
    const during = channel.requests.filter((r) => r.at < endedAt);
    expect(during.length).toBeLessThan(WORDS.length / 2);
    for (let i = 1; i < during.length; i++)
      expect((during[i]?.at as number) - (during[i - 1]?.at as number)).toBeGreaterThanOrEqual(1000);
    // No request sets a message to the text it already shows (the delivery leaves finished messages as they are).
    const showing = new Map<string, string | undefined>();
    for (const request of channel.requests) {
      if (request.op === "edit") expect(request.text).not.toBe(showing.get(request.id as string));
      if (request.op === "post" || request.op === "edit") showing.set(request.id as string, request.text);
    }
  });

  it("posts the reply whole when the channel's streaming is off", async () => {
    await open({ config: { channels: { chat: { streaming: "off" } } } });
    const runId = await send("write", 12_000);
    expect((await h.gateway.agentWait({ runId })).status).toBe("ok");
    await eventually(() => expect(channel.sent.map((s) => s.message.text)).toEqual([REPLY]));
    expect(channel.requests).toEqual([]);
  });

  it("shows whole blocks in block mode", async () => {
    await open({ config: { channels: { chat: { accounts: {}, streaming: "block" } } } }, 2000);
    const runId = await send("paragraphs", 700);
    // The first block shows at once; what follows waits for the pace (one request a second).
    expect(channel.shown(TO).map((m) => m.text)).toEqual([PARAGRAPHS[0]?.trim()]);
    await h.clock.advance(5_000);
    expect((await h.gateway.agentWait({ runId })).status).toBe("ok");
    const reply = PARAGRAPHS.join("").trim();
    await eventually(() => expect(channel.shown(TO).map((m) => m.text)).toEqual(chunkMessage(reply, 800)));
    // Every text shown on the way was whole paragraphs.
    const whole = [1, 2, 3].map((n) => PARAGRAPHS.slice(0, n).join("").trim());
    for (const r of channel.requests) if (r.text !== undefined) expect(whole).toContain(r.text);
  });

  it("removes what it streamed when the run fails, or ends with no reply", async () => {
    await open();
    const failed = await send("fail", 3_000);
    expect(channel.shown(TO).length).toBeGreaterThan(0);
    await h.clock.advance(10_000);
    expect((await h.gateway.agentWait({ runId: failed })).status).toBe("error");
    await eventually(() => expect(channel.shown(TO)).toEqual([]));
    const silent = await send("silent", 12_000);
    expect((await h.gateway.agentWait({ runId: silent })).status).toBe("ok");
    await eventually(() => expect(channel.shown(TO)).toEqual([]));
    expect(channel.sent).toEqual([]);
  });

  it("waits out a rate limit, and still ends with the reply", async () => {
    await open();
    channel.failStream(1, rateLimited(5_000));
    const runId = await send("write", 2_000);
    const limitedAt = channel.requests.length;
    await h.clock.advance(2_500);
    // Nothing was asked of the platform before its retry-after passed.
    expect(channel.requests.length).toBe(limitedAt);
    await h.clock.advance(10_000);
    expect((await h.gateway.agentWait({ runId })).status).toBe("ok");
    await eventually(() => expect(channel.shown(TO).map((m) => m.text)).toEqual(chunkMessage(REPLY, 60)));
  });

  it("retries a reply's delivery that failed halfway, posting nothing twice", async () => {
    await open();
    // The reply goes on after what it streamed; its delivery fails at its first request (the first to show what
    // was not streamed); the outbox retries the delivery.
    channel.failStream(
      1,
      new SessionsError("unavailable", "platform down"),
      (r) => r.text?.includes("more0") === true,
    );
    const runId = await send("more", 9_500);
    expect((await h.gateway.agentWait({ runId })).status).toBe("ok");
    await h.clock.advance(5_000);
    await eventually(async () =>
      expect((await h.store.listDeliveries({ runId }))[0]?.status).toBe("delivered"),
    );
    const [delivery] = await h.store.listDeliveries({ runId });
    expect(delivery?.attempts).toBe(2);
    expect(channel.shown(TO).map((m) => m.text)).toEqual(chunkMessage(`${REPLY} ${MORE}`, 60));
    expect(channel.requests.filter((r) => r.op === "post")).toHaveLength(channel.shown(TO).length);
  });

  it("after a crash, recovery removes what a run it ends had streamed", async () => {
    await open();
    // A run a gateway that died had been streaming: its record names the message it posted.
    const id = await channel.stream.post({ channel: "chat", to: TO }, "half a rep");
    await h.store.putRun({
      runId: "run-crashed",
      sessionKey: "agent:main:main",
      agentId: "main",
      kind: "agent",
      status: "running",
      createdAt: h.clock.now(),
      startedAt: h.clock.now(),
      owner: "gateway-that-died",
      deliverTo: { channel: "chat", to: TO },
      stream: { channel: "chat", to: TO, messageIds: [id], maxChars: 60 },
    });
    h = await h.restart();
    await eventually(async () => expect((await h.store.getRun("run-crashed"))?.status).toBe("error"));
    await eventually(() => expect(channel.shown(TO)).toEqual([]));
    // Recorded once the platform answered: waited for, not read at once.
    await eventually(async () =>
      expect((await h.store.listDeliveries({ runId: "run-crashed" }))[0]).toMatchObject({
        status: "delivered",
        text: "",
      }),
    );
  });
});

describe("a reply stream", () => {
  it("edits the messages an earlier attempt of its run posted instead of posting anew", async () => {
    const clock = createManualClock();
    const channel = createStreamingChannel({ maxMessageLength: 20, intervalMs: 0 });
    const target = { channel: "chat", to: TO };
    const first = await channel.stream.post(target, "stale text of a run");
    const recorded: string[][] = [];
    const stream = createReplyStream({
      stream: channel.stream,
      target,
      mode: "partial",
      streamId: "run-1",
      clock,
      logger: { debug() {}, info() {}, warn() {}, error() {}, child: () => ({}) as never },
      adopted: [first],
      record: async (preview) => {
        recorded.push(preview.messageIds);
      },
    });
    stream.push({ type: "text-delta", text: "fresh words written again " });
    await clock.advance(0);
    stream.push({ type: "text-delta", text: "and more" });
    await clock.advance(0);
    const preview = await stream.close();
    expect(channel.shown(TO).map((m) => m.text)).toEqual(
      chunkMessage("fresh words written again and more", 20),
    );
    expect(preview?.messageIds[0]).toBe(first);
    expect(recorded.at(-1)).toEqual(preview?.messageIds);
  });

  it("asks the platform nothing once its run may no longer act (its lane lost)", async () => {
    const clock = createManualClock();
    const channel = createStreamingChannel({ intervalMs: 1000 });
    let live = true;
    const stream = createReplyStream({
      stream: channel.stream,
      target: { channel: "chat", to: TO },
      mode: "partial",
      streamId: "run-3",
      clock,
      logger: { debug() {}, info() {}, warn() {}, error() {}, child: () => ({}) as never },
      record: async () => {},
      live: () => live,
    });
    stream.push({ type: "text-delta", text: "Half of" });
    await clock.advance(0);
    expect(channel.requests.map((r) => r.op)).toEqual(["post"]);
    stream.push({ type: "text-delta", text: " a reply" });
    live = false;
    await clock.advance(5_000);
    stream.push({ type: "text-delta", text: " nobody sees" });
    await clock.advance(5_000);
    expect(channel.requests.map((r) => r.op)).toEqual(["post"]);
    expect((await stream.close())?.messageIds).toHaveLength(1);
  });

  it("starts over after a tool call: the reply is the last step's text", async () => {
    const clock = createManualClock();
    const channel = createStreamingChannel({ intervalMs: 0 });
    const target = { channel: "chat", to: TO };
    const stream = createReplyStream({
      stream: channel.stream,
      target,
      mode: "partial",
      streamId: "run-2",
      clock,
      logger: { debug() {}, info() {}, warn() {}, error() {}, child: () => ({}) as never },
      record: async () => {},
    });
    stream.push({ type: "text-delta", text: "Let me look that up." });
    await clock.advance(0);
    stream.push({ type: "tool-call", toolCallId: "c1", toolName: "sessions_list", params: {} });
    stream.push({ type: "text-delta", text: "Found two sessions." });
    await clock.advance(0);
    await stream.close();
    expect(channel.shown(TO).map((m) => m.text)).toEqual(["Found two sessions."]);
  });
});
