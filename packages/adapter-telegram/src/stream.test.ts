import { chunkMessage } from "@sessions/core";
import {
  createGateway,
  createMemoryStore,
  createScriptedRunner,
  type Gateway,
  type ScriptedAgent,
} from "@sessions/gateway";
import {
  createFakeTelegramApi,
  deliveredReply,
  type FakeTelegramApi,
  telegramUpdate,
  writeWords,
} from "@sessions/testing";
import { Bot } from "grammy";
import type { Update } from "grammy/types";
import { afterEach, describe, expect, it } from "vitest";
import { createTelegramAdapter, type TelegramAdapterConfig } from "./index.js";

let api: FakeTelegramApi;
let gateway: Gateway;
let bot: Bot;

afterEach(async () => {
  await gateway?.close({ drainMs: 200 });
  await api?.close();
});

/** A reply streamed ten words at a time: past Telegram's 4,096 characters when asked for a long one. */
const writer: ScriptedAgent = (turn) => writeWords(turn, turn.text === "long" ? 800 : 40);

async function setup(
  streaming: "off" | "partial" | "block" | undefined,
  adapterOptions: Omit<TelegramAdapterConfig, "bot"> = {},
) {
  api = await createFakeTelegramApi();
  bot = new Bot(api.token, { client: { apiRoot: api.apiRoot } });
  await bot.init();
  const adapter = createTelegramAdapter({ bot, typing: false, streamIntervalMs: 40, ...adapterOptions });
  gateway = createGateway({
    store: createMemoryStore(),
    runner: createScriptedRunner({ agents: { main: writer } }),
    adapters: [adapter],
    config: streaming === undefined ? {} : { channels: { telegram: { streaming } } },
  });
  adapter.attach(gateway);
  await gateway.ready;
}

/** Hands grammY one update, waits for the reply's delivery to be recorded, and returns the reply's text. */
async function ask(update: Record<string, unknown>): Promise<string> {
  await bot.handleUpdate(update as unknown as Update);
  return deliveredReply(gateway);
}

const GROUP = "-100200300400";

describe("streaming replies into Telegram through real grammY", () => {
  it("streams by default in a group: one message edited as the reply grows, ending as the reply", async () => {
    await setup(undefined);
    const reply = await ask(telegramUpdate("group-text"));
    const shown = api.messages(GROUP);
    expect(shown.map((m) => m.text)).toEqual([reply]);
    expect(api.callsOf("sendMessage")).toHaveLength(1);
    expect(shown[0]?.edits).toBeGreaterThan(0);
  });

  it("streams a private chat's reply as a draft, then sends it once", async () => {
    await setup("partial");
    const update = telegramUpdate("private-text");
    const chatId = (update.message as { chat: { id: number } }).chat.id;
    const reply = await ask(update);
    expect(api.callsOf("sendMessageDraft").length).toBeGreaterThan(0);
    const drafts = [...api.drafts(chatId).values()];
    expect(drafts).toHaveLength(1);
    expect(reply.startsWith(drafts[0] as string)).toBe(true);
    expect(api.messages(chatId).map((m) => m.text)).toEqual([reply]);
    expect(api.callsOf("editMessageText")).toEqual([]);
  });

  it("goes on in further messages past 4,096 characters", async () => {
    await setup("partial", { streamDrafts: false });
    const reply = await ask(telegramUpdate("group-text", { text: "long" }));
    expect(reply.length).toBeGreaterThan(4096);
    expect(api.messages(GROUP).map((m) => m.text)).toEqual(chunkMessage(reply, 4096));
    expect(api.callsOf("sendMessage")).toHaveLength(chunkMessage(reply, 4096).length);
  });

  it("posts the reply whole when streaming is off", async () => {
    await setup("off");
    const reply = await ask(telegramUpdate("group-text"));
    expect(api.messages(GROUP).map((m) => m.text)).toEqual([reply]);
    expect(api.callsOf("editMessageText")).toEqual([]);
    expect(api.callsOf("sendMessageDraft")).toEqual([]);
  });
});
