import { chunkMessage } from "@sessions/core";
import {
  createGateway,
  createMemoryStore,
  createScriptedRunner,
  type Gateway,
  type ScriptedAgent,
} from "@sessions/gateway";
import {
  createFakeDiscordApi,
  deliveredReply,
  discordMessage,
  type FakeDiscordApi,
  writeWords,
} from "@sessions/testing";
import type { Client } from "discord.js";
import { afterEach, describe, expect, it } from "vitest";
import { createDiscordAdapter } from "./index.js";
import { loggedInClient } from "./test-kit.js";

let api: FakeDiscordApi;
let client: Client;
let gateway: Gateway;

afterEach(async () => {
  await gateway?.close({ drainMs: 200 });
  await client?.destroy();
  await api?.close();
});

/** A reply streamed ten words at a time: past Discord's 2,000 characters when asked for a long one. */
const writer: ScriptedAgent = (turn) => writeWords(turn, turn.text === "long" ? 450 : 40);

/** The bot's messages in a channel as it shows them now. */
const botMessages = (channelId: string) =>
  api.messages(channelId).filter((m) => m.authorId === api.botUser.id);

async function setup(streaming: "off" | "partial" | "block" | undefined) {
  api = await createFakeDiscordApi({ echoOwnMessages: false });
  client = await loggedInClient(api);
  const adapter = createDiscordAdapter({ client, streamIntervalMs: 40, typing: false });
  gateway = createGateway({
    store: createMemoryStore(),
    runner: createScriptedRunner({ agents: { main: writer } }),
    adapters: [adapter],
    config: streaming === undefined ? {} : { channels: { discord: { streaming } } },
  });
  adapter.attach(gateway);
  await gateway.ready;
}

describe("streaming replies into Discord through real discord.js", () => {
  it("does not stream by default: the reply is posted whole, as OpenClaw does", async () => {
    await setup(undefined);
    api.dispatch("MESSAGE_CREATE", discordMessage("guild-text", { content: "write" }));
    const reply = await deliveredReply(gateway);
    expect(api.callsOf("PATCH", "/channels/:id/messages/:id")).toEqual([]);
    expect(botMessages(api.guild.general.id).map((m) => m.content)).toEqual([reply]);
  });

  it("edits one message as the reply grows and ends it as the reply (partial)", async () => {
    await setup("partial");
    api.dispatch("MESSAGE_CREATE", discordMessage("guild-text", { content: "write" }));
    const reply = await deliveredReply(gateway);
    const shown = botMessages(api.guild.general.id);
    expect(shown.map((m) => m.content)).toEqual([reply]);
    expect(shown[0]?.edited).toBe(true);
    const edits = api.callsOf("PATCH", "/channels/:id/messages/:id");
    expect(edits.length).toBeGreaterThan(0);
    // Paced: far fewer edits than the deltas it was written in.
    expect(edits.length).toBeLessThan(8);
    expect(api.callsOf("POST", "/channels/:id/messages")).toHaveLength(1);
  });

  it("goes on in a further message past 2,000 characters, in a DM too", async () => {
    await setup("partial");
    api.dispatch("MESSAGE_CREATE", discordMessage("dm-text", { content: "long" }));
    const reply = await deliveredReply(gateway);
    const dm = api.callsOf("POST", "/channels/:id/messages")[0]?.path.split("/")[2] as string;
    const shown = botMessages(dm).map((m) => m.content);
    expect(reply.length).toBeGreaterThan(2000);
    expect(shown).toEqual(chunkMessage(reply, 2000));
    expect(api.callsOf("POST", "/channels/:id/messages")).toHaveLength(shown.length);
  });
});
