import { createTelegramAdapter } from "@sessions/adapter-telegram";
import {
  createGateway,
  createManualClock,
  createMemoryStore,
  createScriptedRunner,
  type Gateway,
  type GatewayOptions,
  type ScriptedAgent,
} from "@sessions/gateway";
import {
  createFakeDiscordApi,
  createFakeTelegramApi,
  discordMessage,
  type FakeDiscordApi,
  telegramUpdate,
} from "@sessions/testing";
import { eventually } from "@sessions/testing/eventually";
import type { Client } from "discord.js";
import { Bot } from "grammy";
import type { Update } from "grammy/types";
import { afterEach, describe, expect, it } from "vitest";
import { createDiscordAdapter, type DiscordAdapter } from "./index.js";
import { loggedInClient } from "./test-kit.js";

let api: FakeDiscordApi;
let client: Client;
let gateway: Gateway;
let adapter: DiscordAdapter;
let clock: ReturnType<typeof createManualClock>;
const extraCleanups: (() => Promise<unknown>)[] = [];

afterEach(async () => {
  await gateway?.close({ drainMs: 200 });
  await client?.destroy();
  await api?.close();
  for (const fn of extraCleanups.splice(0)) await fn();
});

async function setup(agents: Record<string, ScriptedAgent>, options: Partial<GatewayOptions> = {}) {
  api = await createFakeDiscordApi({ echoOwnMessages: false });
  client = await loggedInClient(api);
  adapter = createDiscordAdapter({ client, ownerIds: [api.user.id] });
  clock = createManualClock();
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

const posts = () =>
  api
    .callsOf("POST", "/channels/:id/messages")
    .map((c) => ({ channel: c.path.split("/")[2], content: (c.body as { content: string }).content }));

describe("Discord adapter through real discord.js against a fake Discord API", () => {
  it("answers a guild channel message in the same channel, typing while the run is in progress", async () => {
    await setup({ main: (t) => `echo: ${t.text}` });
    api.dispatch("MESSAGE_CREATE", discordMessage("guild-text", { content: "status please" }));
    await eventually(() => posts().length === 1, "the reply");
    expect(posts()[0]).toEqual({ channel: api.guild.general.id, content: "echo: status please" });
    expect(api.callsOf("POST", "/channels/:id/typing").length).toBeGreaterThan(0);
    const [row] = (await gateway.sessions.list()).sessions;
    expect(row).toMatchObject({
      key: `agent:main:discord:channel:${api.guild.general.id}`,
      channel: "discord",
      chatType: "channel",
    });
    expect(row?.displayName).toContain("#general");
  });

  it("gives a thread its own session with the parent recorded, and replies into the thread", async () => {
    await setup({ main: (t) => `echo: ${t.text}` });
    api.dispatch("MESSAGE_CREATE", discordMessage("thread-text", { content: "in the thread" }));
    await eventually(() => posts().length === 1, "the thread reply");
    expect(posts()[0]).toEqual({ channel: api.guild.thread.id, content: "echo: in the thread" });
    const key = `agent:main:discord:channel:${api.guild.general.id}:thread:${api.guild.thread.id}`;
    expect((await gateway.sessions.list()).sessions.map((s) => s.key)).toEqual([key]);
  });

  it("answers DMs in the DM and ignores bots, itself included", async () => {
    await setup({ main: (t) => `echo: ${t.text}` });
    api.dispatch("MESSAGE_CREATE", discordMessage("other-bot-text"));
    api.dispatch("MESSAGE_CREATE", discordMessage("guild-text", { author: api.botUser }));
    api.dispatch("MESSAGE_CREATE", discordMessage("dm-text", { content: "psst" }));
    await eventually(() => posts().length === 1, "the DM reply");
    expect(posts()[0]).toEqual({ channel: api.dmChannel.id, content: "echo: psst" });
    expect((await gateway.sessions.list()).sessions.map((s) => s.key)).toEqual(["agent:main:main"]);
  });

  it("creates a thread for sessions_spawn({ thread: true }), routes the thread to the child, announces there, and unbinds when archived", async () => {
    await setup({
      main: async (t) => {
        if (t.kind === "subagent") return "Result: found it";
        if (t.kind === "subagent_announce") return "Result: the answer is 42\nNotes:\n- none";
        if (t.text.startsWith("research")) {
          await t.callTool("sessions_spawn", { task: "find the answer", thread: true, label: "Answer hunt" });
          return "opened a thread";
        }
        return `child heard: ${t.text}`;
      },
    });
    api.dispatch("MESSAGE_CREATE", discordMessage("guild-text", { content: "research please" }));
    await eventually(() => api.callsOf("POST", "/channels/:id/threads").length === 1, "the thread");
    expect(api.callsOf("POST", "/channels/:id/threads")[0]?.body).toMatchObject({ name: "Answer hunt" });
    await eventually(() => posts().some((p) => p.content.startsWith("Status: success")), "the announce");
    const announce = posts().find((p) => p.content.startsWith("Status: success"));
    const threadId = announce?.channel as string;
    expect(threadId).not.toBe(api.guild.general.id);
    expect(posts().some((p) => p.channel === threadId && p.content.startsWith("Working on this here"))).toBe(
      true,
    );
    const [binding] = await gateway.store.listThreadBindings();
    expect(binding).toMatchObject({ channel: "discord", threadId });

    api.dispatch(
      "MESSAGE_CREATE",
      discordMessage("thread-text", { channel_id: threadId, content: "how is it going?" }),
    );
    await eventually(
      () => posts().some((p) => p.content === "child heard: how is it going?"),
      "the child's reply in the thread",
    );
    expect(posts().find((p) => p.content === "child heard: how is it going?")?.channel).toBe(threadId);
    const childHistory = await gateway.chat.history({ sessionKey: binding?.sessionKey as string });
    expect(childHistory.messages.some((m) => m.content === "how is it going?")).toBe(true);
    expect(binding?.sessionKey).toMatch(/^agent:main:subagent:/);

    // Someone archives the thread on Discord (PATCH → THREAD_UPDATE from the platform).
    const live = await client.channels.fetch(threadId);
    if (live?.isThread()) await live.setArchived(true);
    await eventually(
      async () => (await gateway.store.listThreadBindings()).length === 0,
      "the binding to end",
    );
  });

  it("unbinds an idle thread on the gateway clock and says goodbye in it", async () => {
    await setup(
      {
        main: async (t) => {
          if (t.kind === "subagent_announce") return "ANNOUNCE_SKIP";
          if (t.text.startsWith("watch"))
            await t.callTool("sessions_spawn", { task: "watch", thread: true, label: "Watcher" });
          return "ok";
        },
      },
      { config: { session: { threadBindings: { idleHours: 2 } } } },
    );
    api.dispatch("MESSAGE_CREATE", discordMessage("guild-text", { content: "watch the deploy" }));
    await eventually(async () => (await gateway.store.listThreadBindings()).length === 1, "the binding");
    const [binding] = await gateway.store.listThreadBindings();
    await clock.advance(2 * 3_600_000 + 1000);
    await eventually(
      async () => (await gateway.store.listThreadBindings()).length === 0,
      "the binding to expire",
    );
    await eventually(
      () => posts().some((p) => p.channel === binding?.threadId && p.content.includes("no longer connected")),
      "the farewell",
    );
  });

  it("keeps working after the gateway refuses a message", async () => {
    await setup({ main: (t) => `echo: ${t.text.slice(0, 10)}` });
    const crashes: unknown[] = [];
    const onRejection = (e: unknown) => crashes.push(e);
    process.on("unhandledRejection", onRejection);
    try {
      api.dispatch("MESSAGE_CREATE", discordMessage("guild-text", { content: "x".repeat(300 * 1024) }));
      api.dispatch("MESSAGE_CREATE", discordMessage("guild-text", { content: "still here?" }));
      await eventually(() => posts().length === 1, "the reply to the second message");
      expect(posts()[0]?.content).toBe("echo: still here");
      expect(crashes).toEqual([]);
    } finally {
      process.off("unhandledRejection", onRejection);
    }
  });

  it("creates the thread under the parent channel when spawned from inside a thread", async () => {
    await setup({
      main: async (t) => {
        if (t.kind === "chat")
          await t.callTool("sessions_spawn", { task: "x", thread: true, label: "Nested" });
        return t.kind === "subagent_announce" ? "ANNOUNCE_SKIP" : "ok";
      },
    });
    api.dispatch("MESSAGE_CREATE", discordMessage("thread-text", { content: "spawn from the thread" }));
    await eventually(() => api.callsOf("POST", "/channels/:id/threads").length === 1, "the new thread");
    expect(api.callsOf("POST", "/channels/:id/threads")[0]?.path).toBe(
      `/channels/${api.guild.general.id}/threads`,
    );
  });

  it("suppresses replies a send policy denies and records suppressed", async () => {
    await setup(
      { main: () => "hi" },
      {
        config: {
          session: {
            sendPolicy: { rules: [{ match: { channel: "discord", chatType: "channel" }, action: "deny" }] },
          },
        },
      },
    );
    api.dispatch("MESSAGE_CREATE", discordMessage("guild-text"));
    await eventually(
      async () => (await gateway.deliveries.list()).deliveries[0]?.status === "suppressed",
      "the suppressed receipt",
    );
    expect(posts()).toEqual([]);
  });

  it("shares one DM session across Telegram and Discord for a person linked by identity links (per-peer)", async () => {
    await setup({ main: () => "unused" });
    // One gateway with both adapters attached, as a bot author would wire them.
    await gateway.close({ drainMs: 0 });
    const tgApi = await createFakeTelegramApi();
    extraCleanups.push(() => tgApi.close());
    const bot = new Bot(tgApi.token, { client: { apiRoot: tgApi.apiRoot } });
    await bot.init();
    const telegram = createTelegramAdapter({ bot });
    const discord = createDiscordAdapter({ client });
    gateway = createGateway({
      store: createMemoryStore(),
      runner: createScriptedRunner({
        agents: { main: (t) => `seen ${t.messages.filter((m) => m.role === "user").length} message(s)` },
      }),
      adapters: [discord, telegram],
      config: {
        session: {
          dmScope: "per-peer",
          identityLinks: { alice: ["telegram:424242", "discord:1200000000000000001"] },
        },
      },
    });
    discord.attach(gateway);
    telegram.attach(gateway);
    await gateway.ready;
    api.dispatch("MESSAGE_CREATE", discordMessage("dm-text", { content: "from discord" }));
    await eventually(() => posts().some((p) => p.content === "seen 1 message(s)"), "the Discord reply");
    await bot.handleUpdate(telegramUpdate("private-text", { text: "from telegram" }) as unknown as Update);
    await eventually(
      () => tgApi.callsOf("sendMessage").some((c) => c.params.text === "seen 2 message(s)"),
      "the Telegram reply",
    );
    expect(
      tgApi.callsOf("sendMessage").find((c) => c.params.text === "seen 2 message(s)")?.params.chat_id,
    ).toBe("424242");
    expect((await gateway.sessions.list()).sessions.map((s) => s.key)).toEqual(["agent:main:direct:alice"]);
    const routes = await gateway.store.listRoutes("agent:main:direct:alice");
    expect(routes.map((r) => r.channel).sort()).toEqual(["discord", "telegram"]);
  });
});
