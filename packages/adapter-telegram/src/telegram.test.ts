import {
  createGateway,
  createManualClock,
  createMemoryStore,
  createScriptedRunner,
  type Gateway,
  type GatewayOptions,
  type ScriptedAgent,
} from "@sessions/gateway";
import { createFakeTelegramApi, type FakeTelegramApi, telegramUpdate } from "@sessions/testing";
import { eventually } from "@sessions/testing/eventually";
import { Bot } from "grammy";
import type { Update } from "grammy/types";
import { afterEach, describe, expect, it } from "vitest";
import { createTelegramAdapter, type TelegramAdapter, type TelegramAdapterConfig } from "./index.js";

let api: FakeTelegramApi;
let gateway: Gateway;
let bot: Bot;
let adapter: TelegramAdapter;
const clock = createManualClock();

afterEach(async () => {
  await bot?.stop().catch(() => undefined);
  await gateway?.close({ drainMs: 200 });
  await api?.close();
});

async function setup(
  agents: Record<string, ScriptedAgent>,
  options: Partial<GatewayOptions> = {},
  adapterOptions: Omit<TelegramAdapterConfig, "bot"> = {},
) {
  api = await createFakeTelegramApi();
  bot = new Bot(api.token, { client: { apiRoot: api.apiRoot } });
  await bot.init();
  adapter = createTelegramAdapter({ bot, ...adapterOptions });
  gateway = createGateway({
    store: createMemoryStore(),
    runner: createScriptedRunner({ agents, clock, fallback: () => "ok" }),
    adapters: [adapter],
    clock,
    ...options,
  });
  adapter.attach(gateway);
  await gateway.ready;
}

/** Hands grammY one update; resolves once its handlers have run (a message's run is recorded by then). */
async function feed(update: Record<string, unknown>) {
  await bot.handleUpdate(update as unknown as Update);
}

/** Every run the gateway has recorded, whatever its status. */
const recordedRuns = () =>
  gateway.store.listRunsByStatus(["queued", "running", "ok", "error", "timeout", "aborted"]);

const sent = () => api.callsOf("sendMessage").map((c) => c.params);

describe("Telegram adapter through real grammY against a fake Bot API", () => {
  it("answers a group message in the same chat, with typing while the run is in progress", async () => {
    await setup({ main: (t) => `echo: ${t.text}` });
    await feed(telegramUpdate("group-text"));
    await eventually(() => sent().length === 1, "the reply");
    expect(sent()[0]).toMatchObject({ chat_id: "-100200300400", text: "echo: status please" });
    expect(sent()[0]).not.toHaveProperty("message_thread_id");
    expect(api.callsOf("sendChatAction")[0]?.params).toMatchObject({
      chat_id: "-100200300400",
      action: "typing",
    });
    const [row] = (await gateway.sessions.list()).sessions;
    expect(row).toMatchObject({
      key: "agent:main:telegram:group:-100200300400",
      displayName: "Ops Team",
      channel: "telegram",
    });
  });

  it("gives a forum topic its own session and replies into the topic; the General topic gets no thread id", async () => {
    await setup({ main: (t) => `echo: ${t.text}` });
    await feed(telegramUpdate("forum-topic-text"));
    await eventually(() => sent().length === 1, "the topic reply");
    expect(sent()[0]).toMatchObject({ chat_id: "-100900800700", message_thread_id: 77 });
    expect((await gateway.sessions.list()).sessions.map((s) => s.key)).toContain(
      "agent:main:telegram:group:-100900800700:topic:77",
    );

    await feed(telegramUpdate("forum-general-text"));
    await eventually(() => sent().length === 2, "the General reply");
    expect(sent()[1]).toMatchObject({ chat_id: "-100900800700", text: "echo: hello general" });
    expect(sent()[1]).not.toHaveProperty("message_thread_id");
    await feed(telegramUpdate("forum-general-text", { message_thread_id: 1, is_topic_message: false }));
    await eventually(() => sent().length === 3, "the second General reply");
    expect(sent()[2]).not.toHaveProperty("message_thread_id");
    // Delivering to topic 1 (General) must omit the thread id, or Telegram rejects the message.
    await adapter.deliver(
      { channel: "telegram", to: "-100900800700", threadId: "1" },
      { text: "to general", kind: "announce", sessionKey: "s" },
      { idempotencyKey: "general" },
    );
    expect(sent()[3]).toMatchObject({ chat_id: "-100900800700", text: "to general" });
    expect(sent()[3]).not.toHaveProperty("message_thread_id");
    await adapter.deliver(
      { channel: "telegram", to: "group:-100900800700", threadId: "77" },
      { text: "to topic", kind: "announce", sessionKey: "s" },
      { idempotencyKey: "topic" },
    );
    expect(sent()[4]).toMatchObject({ chat_id: "-100900800700", message_thread_id: 77 });
  });

  it("does not turn reply chains in ordinary groups into topics, and ignores bots", async () => {
    await setup({ main: (t) => `echo: ${t.text}` });
    await feed(telegramUpdate("group-reply-chain"));
    await eventually(() => sent().length === 1, "the reply");
    expect(sent()[0]).not.toHaveProperty("message_thread_id");
    expect((await gateway.sessions.list()).sessions.map((s) => s.key)).toEqual([
      "agent:main:telegram:group:-100200300400",
    ]);
    // `feed` returns once grammY has run the handler, which hands a message to the gateway and waits for its run
    // to be recorded: no new run, so nothing more to say.
    await feed(telegramUpdate("other-bot-text"));
    await feed(telegramUpdate("group-text", { from: { ...api.bot } }));
    expect(await recordedRuns()).toHaveLength(1);
    expect(sent()).toHaveLength(1);
  });

  it("chunks long replies at 4,096 characters and returns every message id", async () => {
    const paragraph = "word ".repeat(600).trim();
    await setup({ main: () => `${paragraph}\n\n${paragraph}\n\n${paragraph}` });
    const { runId } = await gateway.receive(
      adapter.resolveInbound(telegramUpdate("private-text").message as never) as never,
    );
    await gateway.agentWait({ runId: runId as string });
    await eventually(() => sent().length === 3, "three chunks");
    for (const params of sent()) expect(String(params.text).length).toBeLessThanOrEqual(4096);
    // The receipt is written once the adapter returns, a moment after the last chunk reached the platform.
    const receipt = await eventually(async () => {
      const [row] = (await gateway.deliveries.list({ runId: runId as string })).deliveries;
      return row?.status === "delivered" && row;
    }, "the delivered receipt");
    expect(receipt).toMatchObject({
      status: "delivered",
      receipt: expect.arrayContaining([expect.any(String)]),
    });
    expect(receipt?.receipt).toHaveLength(3);
  });

  it("turns a 429 into a retry at retry_after, without resending chunks already delivered", async () => {
    await setup({ main: () => `${"a".repeat(4000)}\n\n${"b".repeat(100)}` });
    // The second chunk hits the rate limit: only it may be sent again.
    let calls = 0;
    const original = bot.api.sendMessage.bind(bot.api);
    bot.api.sendMessage = (async (...args: Parameters<typeof original>) => {
      calls++;
      if (calls === 2)
        api.failNext("sendMessage", 1, {
          error_code: 429,
          description: "Too Many Requests: retry after 7",
          parameters: { retry_after: 7 },
        });
      return original(...args);
    }) as typeof original;
    await feed(telegramUpdate("private-text"));
    await eventually(
      () => api.callsOf("sendMessage").length === 2,
      "the first chunk and the rate-limited one",
    );
    const runId = (await gateway.deliveries.list()).deliveries[0]?.runId as string;
    // The failed attempt is recorded a moment after the platform answered 429.
    const queued = await eventually(async () => {
      const [row] = (await gateway.deliveries.list({ runId })).deliveries;
      return row?.attempts === 1 && row;
    }, "the failed attempt recorded");
    expect(queued).toMatchObject({ status: "queued", attempts: 1 });
    expect(queued?.lastError).toContain("rate limit");
    await clock.advance(6000);
    expect(api.callsOf("sendMessage")).toHaveLength(2);
    await clock.advance(1500);
    await eventually(() => api.callsOf("sendMessage").length === 3, "the retry");
    const texts = api.callsOf("sendMessage").map((c) => String(c.params.text)[0]);
    expect(texts).toEqual(["a", "b", "b"]);
  });

  it("creates a forum topic for sessions_spawn({ thread: true }) and announces there", async () => {
    await setup({
      main: async (t) => {
        if (t.kind === "subagent") return "Result: three papers";
        if (t.kind === "subagent_announce") return "Result: 3 papers found\nNotes:\n- none";
        if (t.text.startsWith("research")) {
          await t.callTool("sessions_spawn", { task: "find papers", thread: true, label: "Papers run" });
          return "started a topic for it";
        }
        return "ok";
      },
    });
    await feed(telegramUpdate("forum-general-text", { text: "research please" }));
    await eventually(() => api.callsOf("createForumTopic").length === 1, "the topic");
    expect(api.callsOf("createForumTopic")[0]?.params).toMatchObject({
      chat_id: "-100900800700",
      name: "Papers run",
    });
    await eventually(() => sent().some((p) => String(p.text).startsWith("Status: success")), "the announce");
    const announce = sent().find((p) => String(p.text).startsWith("Status: success"));
    expect(announce).toMatchObject({ chat_id: "-100900800700", message_thread_id: 500 });
    // A user writing in the new topic reaches the sub-agent's session, and its reply stays in the topic.
    const before = sent().length;
    await feed(telegramUpdate("forum-topic-text", { text: "how is it going?", message_thread_id: 500 }));
    await eventually(() => sent().length === before + 1, "the child's reply");
    expect(sent()[before]).toMatchObject({ chat_id: "-100900800700", message_thread_id: 500, text: "ok" });
    const child = (await gateway.store.listThreadBindings())[0]?.sessionKey as string;
    expect(child).toMatch(/^agent:main:subagent:/);
    const history = await gateway.chat.history({ sessionKey: child });
    expect(history.messages.some((m) => m.content === "how is it going?")).toBe(true);
  });

  it("binds the forum topic a spawn came from instead of opening a new one, and announces there", async () => {
    await setup({
      main: async (t) => {
        if (t.kind === "subagent") return "Result: three papers";
        if (t.kind === "subagent_announce") return "Result: 3 papers found";
        if (t.text.startsWith("research")) {
          await t.callTool("sessions_spawn", { task: "find papers", thread: true, label: "Papers run" });
          return "on it, in this topic";
        }
        return "ok";
      },
    });
    await feed(telegramUpdate("forum-topic-text", { text: "research please" }));
    await eventually(() => sent().some((p) => String(p.text).startsWith("Status: success")), "the announce");
    expect(api.callsOf("createForumTopic")).toHaveLength(0);
    // Intro, the parent's reply and the announce: all in topic 77, none in General or a new topic.
    for (const params of sent())
      expect(params).toMatchObject({ chat_id: "-100900800700", message_thread_id: 77 });
    expect(sent().map((p) => String(p.text))).toEqual(
      expect.arrayContaining([expect.stringMatching(/^Working on this here \(session agent:main:subagent:/)]),
    );
    const [binding] = await gateway.store.listThreadBindings();
    expect(binding).toMatchObject({ channel: "telegram", threadId: "77", to: "-100900800700" });
    // The topic now talks to the sub-agent.
    const before = sent().length;
    await feed(telegramUpdate("forum-topic-text", { text: "how is it going?" }));
    await eventually(() => sent().length === before + 1, "the child's reply");
    const history = await gateway.chat.history({ sessionKey: binding?.sessionKey as string });
    expect(history.messages.some((m) => m.content === "how is it going?")).toBe(true);
  });

  it("opens a new topic when the spawn came from the General topic", async () => {
    await setup({
      main: async (t) => {
        if (t.kind === "chat" && t.text.startsWith("research"))
          await t.callTool("sessions_spawn", { task: "x", thread: true, label: "From general" });
        return "ok";
      },
    });
    await feed(telegramUpdate("forum-general-text", { text: "research", message_thread_id: 1 }));
    await eventually(() => api.callsOf("createForumTopic").length === 1, "the new topic");
  });

  it("ignores channel posts with a log line", async () => {
    const logged: { message: string; fields?: Record<string, unknown> }[] = [];
    const logger = {
      debug: () => undefined,
      info: (message: string, fields?: Record<string, unknown>) =>
        logged.push({ message, ...(fields ? { fields } : {}) }),
      warn: () => undefined,
      error: () => undefined,
      child: () => logger,
    };
    await setup({ main: () => "should not be said" }, {}, { logger });
    // A recorded, sanitised channel post: no `from`, the channel itself as `sender_chat`.
    const channel = { id: -100555444333, title: "Release Notes", type: "channel" };
    await feed({
      update_id: 300_000_001,
      channel_post: {
        message_id: 41,
        sender_chat: channel,
        chat: channel,
        date: 1763800100,
        text: "v2.1 is out",
      },
    });
    await feed({
      update_id: 300_000_002,
      edited_channel_post: {
        message_id: 41,
        sender_chat: channel,
        chat: channel,
        date: 1763800100,
        edit_date: 1763800160,
        text: "v2.1.1 is out",
      },
    });
    // Both handled (`feed` waits for the handler): no session, no run, nothing to say.
    expect((await gateway.sessions.list()).sessions).toHaveLength(0);
    expect(await recordedRuns()).toHaveLength(0);
    expect(sent()).toHaveLength(0);
    expect(logged).toEqual([
      {
        message: "ignoring a channel post: channels are not handled",
        fields: { chatId: -100555444333, messageId: 41 },
      },
      {
        message: "ignoring a channel post: channels are not handled",
        fields: { chatId: -100555444333, messageId: 41 },
      },
    ]);
  });

  it("refuses thread=true in a group that is not a forum, leaving no child behind", async () => {
    let spawned: unknown;
    await setup({
      main: async (t) => {
        if (t.kind === "chat") spawned = await t.callTool("sessions_spawn", { task: "x", thread: true });
        return "ok";
      },
    });
    await feed(telegramUpdate("group-text", { text: "spawn" }));
    await eventually(() => spawned !== undefined, "the sessions_spawn result");
    expect(spawned).toMatchObject({
      status: "error",
      code: "thread_unavailable",
      error: expect.stringContaining("not a forum"),
    });
    expect((await gateway.sessions.list()).sessions.map((s) => s.key)).toEqual([
      "agent:main:telegram:group:-100200300400",
    ]);
  });

  it("suppresses group replies a send policy denies and records suppressed", async () => {
    await setup(
      { main: () => "hi" },
      {
        config: {
          session: {
            sendPolicy: { rules: [{ match: { channel: "telegram", chatType: "group" }, action: "deny" }] },
          },
        },
      },
    );
    await feed(telegramUpdate("group-text"));
    await eventually(
      async () => (await gateway.deliveries.list()).deliveries[0]?.status === "suppressed",
      "the suppressed receipt",
    );
    expect((await gateway.deliveries.list()).deliveries[0]).toMatchObject({
      status: "suppressed",
      lastError: expect.stringContaining("rules[0]"),
    });
    expect(sent()).toHaveLength(0);
  });

  it("keeps working after the gateway refuses a message", async () => {
    await setup({ main: (t) => `echo: ${t.text.slice(0, 10)}` });
    await feed(telegramUpdate("group-text", { text: "x".repeat(300 * 1024) }));
    await feed(telegramUpdate("group-text", { text: "still here?" }));
    await eventually(() => sent().length === 1, "the reply to the second message");
    expect(sent()[0]?.text).toBe("echo: still here");
  });

  it("lets only owners run /send, and polls real updates through getUpdates", async () => {
    await setup({ main: (t) => `echo: ${t.text}` }, {}, { ownerIds: [424242] });
    bot.start({ drop_pending_updates: false });
    api.pushUpdate(telegramUpdate("group-text", { text: "/send off" }));
    await eventually(() => sent().length === 1, "the refusal");
    expect(sent()[0]?.text).toBe("Only the owner can change this session's send policy.");
    api.pushUpdate(
      telegramUpdate("group-text", {
        text: "/send off",
        from: { id: 424242, is_bot: false, first_name: "Alice" },
      }),
    );
    await eventually(() => sent().length === 2, "the confirmation");
    expect(sent()[1]?.text).toBe("Send policy: off for this session.");
  });
});
