import { SESSION_TOOL_NAMES } from "@sessions/core";
import { simulateReadableStream } from "ai";
import { MockLanguageModelV3 } from "ai/test";
import { afterEach, describe, expect, it } from "vitest";
import type { InboundMessage } from "../adapter.js";
import type { GatewayEvent, GatewayOptions } from "../gateway.js";
import { eventually, type Harness, harness } from "../test-kit.js";
import { messageText } from "../transcript.js";
import { type AiSdkRunnerOptions, createAiSdkRunner } from "./ai-sdk.js";

type StreamResult = Awaited<ReturnType<MockLanguageModelV3["doStream"]>>;
type StreamPart = StreamResult["stream"] extends ReadableStream<infer P> ? P : never;
type CallOptions = MockLanguageModelV3["doStreamCalls"][number];
type PromptMessage = CallOptions["prompt"][number];
type Usage = Extract<StreamPart, { type: "finish" }>["usage"];

const usage = (input: number, output: number): Usage => ({
  inputTokens: { total: input, noCache: input, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: output, text: output, reasoning: undefined },
});

/** A v3 `doStream` result emitting the given parts (no delays). */
const stream = (parts: StreamPart[]): StreamResult => ({
  stream: simulateReadableStream({ chunks: parts, initialDelayInMs: null, chunkDelayInMs: null }),
});

/** A v3 `doStream` result with one text part, streamed as the given deltas. */
const deltas = (chunks: string[], tokens: Usage = usage(10, 5)): StreamResult =>
  stream([
    { type: "stream-start", warnings: [] },
    { type: "text-start", id: "t1" },
    ...chunks.map((delta): StreamPart => ({ type: "text-delta", id: "t1", delta })),
    { type: "text-end", id: "t1" },
    { type: "finish", finishReason: { unified: "stop", raw: "stop" }, usage: tokens },
  ]);

/** A v3 `doStream` result with one text part streamed as a single delta. */
const text = (reply: string, tokens: Usage = usage(10, 5)): StreamResult => deltas([reply], tokens);

/** A v3 `doStream` result with one client-executed tool call (input is JSON-encoded, as providers send it). */
const toolCall = (
  toolCallId: string,
  toolName: string,
  input: unknown,
  tokens: Usage = usage(10, 5),
): StreamResult =>
  stream([
    { type: "stream-start", warnings: [] },
    { type: "tool-call", toolCallId, toolName, input: JSON.stringify(input) },
    { type: "finish", finishReason: { unified: "tool-calls", raw: "tool_calls" }, usage: tokens },
  ]);

/**
 * A model whose first call waits for `release` and then asks for `sessions_list`; call `n` after it answers
 * `later(n)`. `calls()`: how many calls it has had.
 */
function heldFirstStep(later: (n: number) => string) {
  let release!: () => void;
  const held = new Promise<void>((resolve) => {
    release = resolve;
  });
  let calls = 0;
  const model = new MockLanguageModelV3({
    doStream: async () => {
      calls++;
      if (calls === 1) {
        await held;
        return toolCall("call-1", "sessions_list", { limit: 5 });
      }
      return text(later(calls));
    },
  });
  return { model, release, calls: () => calls };
}

/** The plain text of a prompt message (text parts joined; system content is a string). */
function promptText(message: PromptMessage | undefined): string {
  if (message === undefined) return "";
  if (typeof message.content === "string") return message.content;
  return message.content.map((part) => (part.type === "text" ? part.text : "")).join("");
}

const systemOf = (call: CallOptions | undefined) =>
  (call?.prompt ?? [])
    .filter((m) => m.role === "system")
    .map(promptText)
    .join("\n");

const lastUserText = (call: CallOptions) => promptText(call.prompt.filter((m) => m.role === "user").at(-1));

const dm = (text: string): InboundMessage => ({
  channel: "chat",
  chatType: "direct",
  peerId: "alice",
  senderId: "alice",
  to: "user:alice",
  text,
});

const group = (peerId: string, text: string): InboundMessage => ({
  channel: "chat",
  chatType: "group",
  peerId,
  senderId: "bob",
  to: `group:${peerId}`,
  text,
});

describe("createAiSdkRunner (AI SDK v6 mock model, real gateway)", () => {
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  async function open(
    model: MockLanguageModelV3,
    options: Omit<AiSdkRunnerOptions, "model"> = {},
    config: GatewayOptions["config"] = {},
  ): Promise<Harness> {
    h = await harness("memory", {}, { runner: createAiSdkRunner({ model, ...options }), config });
    return h;
  }

  async function receiveAndWait(gw: Harness, inbound: InboundMessage) {
    const result = await gw.gateway.receive(inbound);
    expect(result.runId).toEqual(expect.any(String));
    const wait = await gw.gateway.agentWait({ runId: result.runId as string, timeoutMs: 60_000 });
    return { result, wait };
  }

  it("replies with the model's text, delivers it, and adds the v6 token usage to the session entry", async () => {
    const model = new MockLanguageModelV3({
      doStream: [text("Hello Alice!", usage(11, 7)), text("Still here.", usage(20, 3))],
    });
    const gw = await open(model);
    const events: GatewayEvent[] = [];
    gw.gateway.subscribe((event) => events.push(event));

    const first = await receiveAndWait(gw, dm("hi there"));
    expect(first.result.sessionKey).toBe("agent:main:main");
    expect(first.wait).toMatchObject({ status: "ok", reply: "Hello Alice!" });
    expect(model.doStreamCalls).toHaveLength(1);
    expect(model.doStreamCalls[0]?.prompt).toEqual([
      { role: "user", content: [{ type: "text", text: "hi there" }] },
    ]);
    // The whole reply is streamed out as a delta before the final event.
    expect(events).toContainEqual(
      expect.objectContaining({ type: "chat", state: "delta", deltaText: "Hello Alice!" }),
    );

    await eventually(() => expect(gw.channel.sent).toHaveLength(1));
    expect(gw.channel.sent[0]).toMatchObject({
      target: { channel: "chat", to: "user:alice" },
      message: { text: "Hello Alice!", kind: "reply" },
    });
    expect(await gw.store.getEntry("agent:main:main")).toMatchObject({
      inputTokens: 11,
      outputTokens: 7,
      totalTokens: 18,
    });

    // A second turn sees the first exchange as history, and usage accumulates on the entry.
    const second = await receiveAndWait(gw, dm("still there?"));
    expect(second.wait).toMatchObject({ status: "ok", reply: "Still here." });
    expect(model.doStreamCalls[1]?.prompt).toEqual([
      { role: "user", content: [{ type: "text", text: "hi there" }] },
      { role: "assistant", content: [{ type: "text", text: "Hello Alice!" }] },
      { role: "user", content: [{ type: "text", text: "still there?" }] },
    ]);
    expect(await gw.store.getEntry("agent:main:main")).toMatchObject({
      inputTokens: 31,
      outputTokens: 10,
      totalTokens: 41,
    });
    const run = await gw.store.getRun(second.result.runId as string);
    expect(run?.usage).toEqual({ inputTokens: 20, outputTokens: 3, totalTokens: 23 });
    await eventually(() => expect(gw.channel.sent.map((s) => s.message.text)).toContain("Still here."));
  });

  it("forwards each streamed text delta as a chat delta event, in order, before the final event", async () => {
    const model = new MockLanguageModelV3({ doStream: [deltas(["Hel", "lo, ", "Alice", "!"], usage(9, 4))] });
    const gw = await open(model);
    const events: GatewayEvent[] = [];
    gw.gateway.subscribe((event) => events.push(event));

    const { result, wait } = await receiveAndWait(gw, dm("hi"));
    expect(wait).toMatchObject({ status: "ok", reply: "Hello, Alice!" });
    const chat = events.filter(
      (e): e is Extract<GatewayEvent, { type: "chat" }> => e.type === "chat" && e.runId === result.runId,
    );
    const deltaTexts = chat.filter((e) => e.state === "delta").map((e) => e.deltaText);
    expect(deltaTexts).toEqual(["Hel", "lo, ", "Alice", "!"]);
    // Every delta precedes the final event, which carries the whole reply; sequence numbers increase.
    const finalIndex = chat.findIndex((e) => e.state === "final");
    expect(finalIndex).toBe(chat.length - 1);
    expect(chat[finalIndex]).toMatchObject({
      state: "final",
      message: { role: "assistant", content: [{ type: "text", text: "Hello, Alice!" }] },
    });
    expect(chat.slice(0, finalIndex).every((e) => e.state === "delta")).toBe(true);
    const seqs = chat.map((e) => e.seq);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    expect(await gw.store.getRun(result.runId as string)).toMatchObject({
      usage: { inputTokens: 9, outputTokens: 4, totalTokens: 13 },
    });
    await eventually(() => expect(gw.channel.sent.map((s) => s.message.text)).toEqual(["Hello, Alice!"]));
  });

  it("ends the run as 'error' when the model's stream reports an error or fails", async () => {
    // An error part mid-stream, even when a finish part follows, fails the run instead of succeeding silently.
    const errorPart = new MockLanguageModelV3({
      doStream: [
        stream([
          { type: "stream-start", warnings: [] },
          { type: "text-start", id: "t1" },
          { type: "text-delta", id: "t1", delta: "partial " },
          { type: "error", error: new Error("model overloaded") },
          { type: "text-end", id: "t1" },
          { type: "finish", finishReason: { unified: "error", raw: "error" }, usage: usage(5, 1) },
        ]),
      ],
    });
    const gw = await open(errorPart);
    const first = await receiveAndWait(gw, dm("hi"));
    expect(first.wait).toMatchObject({ status: "error", error: "model overloaded" });
    expect(await gw.store.getRun(first.result.runId as string)).toMatchObject({ status: "error" });

    // A stream that errors outright (the connection dropped, say) fails the run too, without hanging.
    const broken = new MockLanguageModelV3({
      doStream: async () => ({
        stream: new ReadableStream<StreamPart>({
          start(controller) {
            controller.enqueue({ type: "stream-start", warnings: [] });
            controller.error(new Error("connection reset"));
          },
        }),
      }),
    });
    await gw.close();
    const gw2 = await open(broken);
    const second = await receiveAndWait(gw2, dm("hi again"));
    expect(second.wait).toMatchObject({ status: "error", error: "connection reset" });
    expect(broken.doStreamCalls).toHaveLength(1);
    expect(gw2.channel.sent.filter((s) => s.message.kind === "reply")).toHaveLength(0);
  });

  it("records what a failed run's finished steps used: its first step's tokens, when the second call fails", async () => {
    let calls = 0;
    const model = new MockLanguageModelV3({
      doStream: async () => {
        calls++;
        if (calls === 1) return toolCall("call-1", "sessions_list", { limit: 5 }, usage(30, 8));
        throw new Error("provider overloaded");
      },
    });
    const gw = await open(model);
    const { result, wait } = await receiveAndWait(gw, dm("which sessions exist?"));
    expect(wait).toMatchObject({ status: "error", error: "provider overloaded" });
    const run = await gw.store.getRun(result.runId as string);
    expect(run?.usage).toEqual({ inputTokens: 30, outputTokens: 8, totalTokens: 38 });
  });

  it("executes a tool call through the gateway and replies with the next step's text", async () => {
    const model = new MockLanguageModelV3({
      doStream: [
        toolCall("call-1", "sessions_list", { limit: 5 }, usage(30, 8)),
        text("You have one session: main.", usage(50, 6)),
      ],
    });
    const gw = await open(model);
    const { result, wait } = await receiveAndWait(gw, dm("which sessions exist?"));
    expect(wait).toMatchObject({ status: "ok", reply: "You have one session: main." });
    expect(model.doStreamCalls).toHaveLength(2);

    // The model got the five session tools as function tools with object JSON schemas.
    const tools = model.doStreamCalls[0]?.tools ?? [];
    expect(tools.map((t) => t.name).sort()).toEqual([...SESSION_TOOL_NAMES].sort());
    for (const t of tools) {
      expect(t.type).toBe("function");
      if (t.type !== "function") continue;
      expect(t.description).toEqual(expect.any(String));
      expect(t.inputSchema).toMatchObject({ type: "object", properties: expect.any(Object) });
    }
    const send = tools.find((t) => t.name === "sessions_send");
    expect(send?.type === "function" ? send.inputSchema : undefined).toMatchObject({
      properties: { sessionKey: expect.any(Object), label: expect.any(Object), message: expect.any(Object) },
      required: ["message"],
    });

    // The gateway ran the real tool and recorded the call and its result in the transcript.
    const transcript = await gw.store.readMessages(result.sessionKey, { limit: 50 });
    expect(transcript.map((m) => m.role)).toEqual(["user", "assistant", "toolResult", "assistant"]);
    const toolResult = transcript.find((m) => m.role === "toolResult");
    const part = Array.isArray(toolResult?.content) ? toolResult.content[0] : undefined;
    expect(part).toMatchObject({ type: "tool-result", toolName: "sessions_list" });
    const output = (part as { output?: unknown } | undefined)?.output as {
      count: number;
      sessions: { key: string; sessionId: string }[];
    };
    expect(output.count).toBe(1);
    expect(output.sessions[0]?.key).toBe("main");
    const entry = await gw.store.getEntry(result.sessionKey);
    expect(output.sessions[0]?.sessionId).toBe(entry?.sessionId);
    expect(transcript[1]?.content).toEqual([
      expect.objectContaining({ type: "tool-call", toolName: "sessions_list", input: { limit: 5 } }),
    ]);
    expect(messageText(transcript[3])).toBe("You have one session: main.");

    // The second step saw the tool call and the same real output.
    const second = model.doStreamCalls[1]?.prompt ?? [];
    expect(second.find((m) => m.role === "assistant")?.content).toEqual([
      expect.objectContaining({ type: "tool-call", toolCallId: "call-1", toolName: "sessions_list" }),
    ]);
    const toolMessage = second.find((m) => m.role === "tool");
    expect(toolMessage?.content).toEqual([
      expect.objectContaining({
        type: "tool-result",
        toolCallId: "call-1",
        toolName: "sessions_list",
        output: { type: "json", value: output },
      }),
    ]);

    // Usage sums both steps; the final text is delivered once.
    expect(entry).toMatchObject({ inputTokens: 80, outputTokens: 14, totalTokens: 94 });
    await eventually(() => expect(gw.channel.sent).toHaveLength(1));
    expect(gw.channel.sent[0]?.message.text).toBe("You have one session: main.");
  });

  it("marks sessions_send input as inter-session before the model sees it", async () => {
    const opsKey = "agent:main:chat:group:ops";
    const model = new MockLanguageModelV3({
      doStream: async (call) => {
        const system = systemOf(call);
        if (system.includes("Announce step")) return text("ANNOUNCE_SKIP");
        if (call.prompt.some((m) => m.role === "tool")) return text("Ops reports: all green.");
        const last = lastUserText(call);
        if (last === "ask ops for status")
          return toolCall("call-send", "sessions_send", { sessionKey: opsKey, message: "status?" });
        if (last.endsWith("status?")) return text("all green");
        return text(`ack: ${last}`);
      },
    });
    const gw = await open(
      model,
      {},
      {
        tools: { sessions: { visibility: "agent" } },
        session: { agentToAgent: { maxPingPongTurns: 0 } },
      },
    );
    await receiveAndWait(gw, group("ops", "deploy finished"));
    const { result, wait } = await receiveAndWait(gw, dm("ask ops for status"));
    expect(wait).toMatchObject({ status: "ok", reply: "Ops reports: all green." });

    const marker = "[message from session agent:main:main, not from the user]";
    const opsCall = model.doStreamCalls.find((c) => promptText(c.prompt.at(-1)).includes(marker));
    expect(opsCall).toBeDefined();
    // Earlier real-user input in the target session is not marked; the injected message is.
    expect(opsCall?.prompt.filter((m) => m.role !== "system")).toEqual([
      { role: "user", content: [{ type: "text", text: "deploy finished" }] },
      { role: "assistant", content: [{ type: "text", text: "ack: deploy finished" }] },
      { role: "user", content: [{ type: "text", text: `${marker}\nstatus?` }] },
    ]);
    // The gateway's agent-to-agent context reaches the model as the system prompt.
    expect(systemOf(opsCall)).toContain("Agent-to-agent message context:");
    expect(systemOf(opsCall)).toContain("Requester session: agent:main:main (channel chat)");

    // The requester's tool result carries the target's reply.
    const transcript = await gw.store.readMessages(result.sessionKey, { limit: 50 });
    const toolResult = transcript.find((m) => m.role === "toolResult");
    expect(Array.isArray(toolResult?.content) ? toolResult.content[0] : undefined).toMatchObject({
      toolName: "sessions_send",
      output: { status: "ok", reply: "all green", sessionKey: opsKey },
    });
    // The announce step ran with no tools and chose to stay silent.
    await eventually(async () => {
      const { deliveries } = await gw.gateway.deliveries.list({ sessionKey: opsKey });
      expect(deliveries.find((d) => d.kind === "announce")).toMatchObject({ status: "suppressed" });
    });
    const announceCall = model.doStreamCalls.find((c) => systemOf(c).includes("Announce step"));
    expect(announceCall?.tools ?? []).toEqual([]);
  });

  it("stops the model call on chat.abort and ends the run as 'run aborted'", async () => {
    let started!: () => void;
    const inFlight = new Promise<void>((resolve) => {
      started = resolve;
    });
    let seenSignal: AbortSignal | undefined;
    const model = new MockLanguageModelV3({
      doStream: (call) =>
        new Promise<StreamResult>((_, reject) => {
          seenSignal = call.abortSignal;
          seenSignal?.addEventListener("abort", () => reject(seenSignal?.reason), { once: true });
          started();
        }),
    });
    const gw = await open(model);
    const { sessionKey, runId } = await gw.gateway.receive(dm("write a novel"));
    await inFlight;
    const aborted = await gw.gateway.chat.abort({ sessionKey });
    expect(aborted).toMatchObject({ ok: true, aborted: true, runIds: [runId] });
    const wait = await gw.gateway.agentWait({ runId: runId as string, timeoutMs: 60_000 });
    expect(wait).toMatchObject({ runId, status: "error", error: "run aborted" });
    // The runner forwarded the gateway's signal to the model call.
    expect(seenSignal?.aborted).toBe(true);
    expect(model.doStreamCalls).toHaveLength(1);
    expect(await gw.store.getRun(runId as string)).toMatchObject({ status: "aborted" });
    expect(await gw.store.getEntry(sessionKey)).toMatchObject({ abortedLastRun: true });
    expect(gw.channel.sent).toHaveLength(0);
  });

  it("sends options.system and the gateway's system context as one system prompt", async () => {
    const model = new MockLanguageModelV3({ doStream: async () => text("ok") });
    const gw = await open(model, {
      system: (agentId) => (agentId === "main" ? "You are the main agent." : undefined),
    });
    const accepted = await gw.gateway.agent({
      message: "summarise",
      idempotencyKey: "k-1",
      extraSystemPrompt: "Answer in one sentence.",
    });
    expect(await gw.gateway.agentWait({ runId: accepted.runId, timeoutMs: 60_000 })).toMatchObject({
      status: "ok",
      reply: "ok",
    });
    const call = model.doStreamCalls[0];
    expect(call?.prompt[0]).toEqual({
      role: "system",
      content: "You are the main agent.\n\nAnswer in one sentence.",
    });
    expect(call?.prompt.filter((m) => m.role === "system")).toHaveLength(1);
    expect(lastUserText(call as CallOptions)).toBe("summarise");

    // Without gateway context, only options.system is sent; a plain string works too.
    const plain = new MockLanguageModelV3({ doStream: async () => text("hi") });
    await gw.close();
    const gw2 = await open(plain, { system: "Be kind." });
    await receiveAndWait(gw2, dm("hello"));
    expect(plain.doStreamCalls[0]?.prompt).toEqual([
      { role: "system", content: "Be kind." },
      { role: "user", content: [{ type: "text", text: "hello" }] },
    ]);
  });

  it("resolves the model per agent and model override, and exposes the accepted model ids", async () => {
    const seen: { agentId: string; model?: string | undefined }[] = [];
    const fast = new MockLanguageModelV3({ modelId: "fast", doStream: async () => text("fast reply") });
    const smart = new MockLanguageModelV3({ modelId: "smart", doStream: async () => text("smart reply") });
    const runner = createAiSdkRunner({
      model: (request) => {
        seen.push(request);
        return request.model === "smart" ? smart : fast;
      },
      models: ["fast", "smart"],
    });
    expect(runner.models).toEqual(["fast", "smart"]);
    h = await harness("memory", {}, { runner });
    const first = await receiveAndWait(h, dm("one"));
    expect(first.wait).toMatchObject({ status: "ok", reply: "fast reply" });
    await h.gateway.sessions.patch({ key: "main", model: "smart" });
    const second = await receiveAndWait(h, dm("two"));
    expect(second.wait).toMatchObject({ status: "ok", reply: "smart reply" });
    expect(seen).toEqual([{ agentId: "main" }, { agentId: "main", model: "smart" }]);
    expect(fast.doStreamCalls).toHaveLength(1);
    expect(smart.doStreamCalls).toHaveLength(1);
  });

  it("sends provider-ready tool schemas (no $schema) and still runs on a first message without text", async () => {
    const model = new MockLanguageModelV3({ doStream: [text("I see no text.")] });
    const gw = await open(model);
    const { wait } = await receiveAndWait(gw, dm("   "));
    expect(wait).toMatchObject({ status: "ok", reply: "I see no text." });
    expect(model.doStreamCalls[0]?.prompt).toEqual([
      { role: "user", content: [{ type: "text", text: "(the message had no text)" }] },
    ]);
    const tools = model.doStreamCalls[0]?.tools ?? [];
    expect(tools.length).toBe(SESSION_TOOL_NAMES.length);
    for (const tool of tools) {
      if (tool.type === "function") expect(tool.inputSchema).not.toHaveProperty("$schema");
    }
  });
  it("steers: messages that arrive while a step runs join the conversation before the next model call", async () => {
    const { model, release, calls } = heldFirstStep((n) => (n === 2 ? "Got all three." : "again"));
    const gw = await open(model);
    const first = await gw.gateway.receive(dm("first"));
    await eventually(() => expect(calls()).toBe(1), "the first model call");
    await gw.gateway.sessions.patch({ key: first.sessionKey, queueMode: "steer" });
    const second = await gw.gateway.receive(dm("second"));
    const third = await gw.gateway.receive(dm("third"));
    // A message without text (an attachment, say) is taken too: the model is told it had none.
    const empty = await gw.gateway.receive(dm("  "));
    release();
    const wait = await gw.gateway.agentWait({ runId: first.runId as string, timeoutMs: 60_000 });
    expect(wait).toMatchObject({ status: "ok", reply: "Got all three." });
    // The second call saw the tool's answer, then the messages that arrived, as user messages.
    const prompt = model.doStreamCalls[1]?.prompt ?? [];
    expect(prompt.map((m) => m.role)).toEqual(["user", "assistant", "tool", "user", "user", "user"]);
    expect(prompt.slice(-3).map(promptText)).toEqual(["second", "third", "(the message had no text)"]);
    for (const run of [second, third, empty]) {
      const result = await gw.gateway.agentWait({ runId: run.runId as string, timeoutMs: 60_000 });
      expect(result).toMatchObject({ status: "ok", mergedInto: first.runId });
    }
    expect(model.doStreamCalls).toHaveLength(2);
  });

  it("does not steer under the default queue mode: later messages run afterwards", async () => {
    const { model, release, calls } = heldFirstStep((n) => `reply ${n}`);
    const gw = await open(model);
    const first = await gw.gateway.receive(dm("first"));
    await eventually(() => expect(calls()).toBe(1), "the first model call");
    const second = await gw.gateway.receive(dm("second"));
    release();
    await gw.gateway.agentWait({ runId: first.runId as string, timeoutMs: 60_000 });
    const after = await gw.gateway.agentWait({ runId: second.runId as string, timeoutMs: 60_000 });
    expect(after).toMatchObject({ status: "ok", reply: "reply 3" });
    expect(model.doStreamCalls[1]?.prompt.map((m) => m.role)).toEqual(["user", "assistant", "tool"]);
  });
});
