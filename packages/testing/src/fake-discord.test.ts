import { once } from "node:events";
import { createInflate, constants as zlibConstants } from "node:zlib";
import {
  ChannelType,
  Client,
  type ClientOptions,
  DiscordAPIError,
  Events,
  GatewayIntentBits,
  type Message,
  Partials,
  RateLimitError,
  type TextChannel,
  type ThreadChannel,
} from "discord.js";
import { afterEach, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import { discordMessage, discordSnowflake } from "./discord-fixtures.js";
import { eventually } from "./eventually.js";
import { createFakeDiscordApi, type FakeDiscordApi, type FakeDiscordOptions } from "./fake-discord/index.js";

const INTENTS = [
  GatewayIntentBits.Guilds,
  GatewayIntentBits.GuildMessages,
  GatewayIntentBits.MessageContent,
  GatewayIntentBits.DirectMessages,
];

let fake: FakeDiscordApi | undefined;
const clients: Client[] = [];

afterEach(async () => {
  for (const client of clients.splice(0)) await client.destroy();
  await fake?.close();
  fake = undefined;
});

async function start(fakeOptions: FakeDiscordOptions = {}): Promise<FakeDiscordApi> {
  fake = await createFakeDiscordApi(fakeOptions);
  return fake;
}

/** A real discord.js client logged in to the fake and past `clientReady`. */
async function login(api: FakeDiscordApi, options: Partial<ClientOptions> = {}): Promise<Client<true>> {
  const client = new Client({
    intents: INTENTS,
    partials: [Partials.Channel],
    ...options,
    rest: { api: api.restUrl, ...options.rest },
  });
  clients.push(client);
  const ready = once(client, Events.ClientReady);
  await client.login(api.token);
  await ready;
  return client as Client<true>;
}

/** Dispatches a MESSAGE_CREATE and resolves with discord.js's `Message` for it (the bot's own echoes are skipped). */
async function receive(
  client: Client,
  api: FakeDiscordApi,
  payload: Record<string, unknown>,
): Promise<Message> {
  const received = new Promise<Message>((resolve) => {
    const listener = (message: Message) => {
      if (message.id !== payload.id) return;
      client.off(Events.MessageCreate, listener);
      resolve(message);
    };
    client.on(Events.MessageCreate, listener);
  });
  expect(api.dispatch("MESSAGE_CREATE", payload)).toBe(1);
  return received;
}

function textChannel(client: Client, api: FakeDiscordApi): TextChannel {
  return client.channels.cache.get(api.guild.general.id) as TextChannel;
}

describe("createFakeDiscordApi with a real discord.js Client", () => {
  it("logs in: /gateway/bot, IDENTIFY, READY and GUILD_CREATE fill discord.js's caches", async () => {
    const api = await start();
    const client = await login(api);
    expect(client.user.id).toBe(api.botUser.id);
    expect(client.user.bot).toBe(true);
    expect(client.application?.id).toBe(api.botUser.id);
    expect(api.callsOf("GET", "/gateway/bot")).toHaveLength(1);
    expect(api.identifies).toHaveLength(1);
    expect(api.identifies[0]).toMatchObject({ token: api.token, shard: [0, 1], compress: false });
    expect(api.connections).toBe(1);

    const guild = client.guilds.cache.get(api.guild.id);
    expect(guild?.available).toBe(true);
    expect(guild?.name).toBe("Sessions Test Guild");
    expect(guild?.members.me?.id).toBe(api.botUser.id);
    const general = textChannel(client, api);
    expect(general.type).toBe(ChannelType.GuildText);
    expect(general.name).toBe("general");
    expect(general.permissionsFor(client.user)?.has("SendMessagesInThreads")).toBe(true);
    expect(client.channels.cache.get(api.guild.forum.id)?.type).toBe(ChannelType.GuildForum);
    const thread = client.channels.cache.get(api.guild.thread.id) as ThreadChannel;
    expect(thread.isThread()).toBe(true);
    expect(thread.parentId).toBe(api.guild.general.id);
    expect(general.threads.cache.has(thread.id)).toBe(true);
  });

  it("emits messageCreate for recorded guild, thread, DM and other-bot messages", async () => {
    const api = await start();
    const client = await login(api);

    const inGuild = await receive(client, api, discordMessage("guild-text", { content: "hello there" }));
    expect(inGuild.content).toBe("hello there");
    expect(inGuild.author.id).toBe(api.user.id);
    expect(inGuild.author.bot).toBe(false);
    expect(inGuild.guild?.id).toBe(api.guild.id);
    expect(inGuild.channel.id).toBe(api.guild.general.id);
    expect(inGuild.channel.isThread()).toBe(false);
    expect(inGuild.member?.id).toBe(api.user.id);

    const inThread = await receive(client, api, discordMessage("thread-text"));
    expect(inThread.channel.isThread()).toBe(true);
    expect(inThread.channel.id).toBe(api.guild.thread.id);
    expect((inThread.channel as ThreadChannel).parentId).toBe(api.guild.general.id);

    const dm = await receive(client, api, discordMessage("dm-text"));
    expect(dm.guild).toBeNull();
    expect(dm.channel.type).toBe(ChannelType.DM);
    expect(dm.channel.isDMBased()).toBe(true);
    expect(dm.author.username).toBe("alice_example");
    if (!dm.channel.isSendable()) throw new Error("DM channel not sendable");
    await dm.channel.send("hi alice");
    expect(api.callsOf("POST", `/channels/${api.dmChannel.id}/messages`)[0]?.body).toMatchObject({
      content: "hi alice",
    });

    const fromBot = await receive(client, api, discordMessage("other-bot-text"));
    expect(fromBot.author.bot).toBe(true);
    expect(fromBot.author.id).toBe(api.otherBot.id);

    const mention = await receive(client, api, discordMessage("guild-mention"));
    expect(mention.mentions.users.has(client.user.id)).toBe(true);

    const reply = await receive(client, api, discordMessage("guild-reply"));
    expect(reply.reference?.messageId).toBe("1440941101380436009");
    expect(reply.mentions.repliedUser?.id).toBe(client.user.id);
  });

  it("records channel.send, sendTyping and message.reply, and echoes the bot's own messages", async () => {
    const api = await start();
    const client = await login(api);
    const general = textChannel(client, api);

    const echoed = once(client, Events.MessageCreate) as Promise<[Message]>;
    const sent = await general.send("hi");
    expect(sent.id).toMatch(/^\d{17,20}$/);
    expect(sent.content).toBe("hi");
    expect(sent.author.id).toBe(client.user.id);
    expect(sent.channelId).toBe(api.guild.general.id);
    const [echo] = await echoed;
    expect(echo.id).toBe(sent.id);
    expect(api.callsOf("POST", "/channels/:id/messages")).toEqual([
      {
        method: "POST",
        path: `/channels/${api.guild.general.id}/messages`,
        body: expect.objectContaining({ content: "hi", tts: false }),
        status: 200,
      },
    ]);

    await general.sendTyping();
    expect(api.callsOf("POST", `/channels/${api.guild.general.id}/typing`)).toHaveLength(1);

    const incoming = await receive(client, api, discordMessage("guild-text"));
    const answer = await incoming.reply("on it");
    expect(answer.reference?.messageId).toBe(incoming.id);
    expect(api.calls.at(-1)?.body).toMatchObject({ message_reference: { message_id: incoming.id } });

    await expect(general.send("x".repeat(2001))).rejects.toMatchObject({ code: 50035, status: 400 });
    const unknown = await client.channels.fetch(discordSnowflake()).catch((e: unknown) => e);
    expect(unknown).toBeInstanceOf(DiscordAPIError);
    expect((unknown as DiscordAPIError).code).toBe(10003);
  });

  it("shows a channel as it is now: message.edit applied, a refused edit changing nothing, deletes gone", async () => {
    const api = await start();
    const client = await login(api);
    const general = textChannel(client, api);
    const first = await general.send("thinking");
    const second = await general.send("second");
    await first.edit("thinking… done");
    // Past 2,000 characters Discord refuses the edit, and the message stays as it was.
    await expect(first.edit("x".repeat(2001))).rejects.toMatchObject({ code: 50035, status: 400 });
    expect(api.messages(api.guild.general.id)).toEqual([
      { id: first.id, authorId: client.user.id, content: "thinking… done", edited: true },
      { id: second.id, authorId: client.user.id, content: "second", edited: false },
    ]);
    await second.delete();
    expect(api.messages(api.guild.general.id).map((message) => message.id)).toEqual([first.id]);
  });

  it("creates, uses and archives threads (THREAD_CREATE / THREAD_UPDATE reach the client)", async () => {
    const api = await start();
    const client = await login(api);
    const general = textChannel(client, api);

    const threadCreated = once(client, Events.ThreadCreate) as Promise<[ThreadChannel, boolean]>;
    const thread = await general.threads.create({ name: "session 42" });
    expect(thread.isThread()).toBe(true);
    expect(thread.type).toBe(ChannelType.PublicThread);
    expect(thread.name).toBe("session 42");
    expect(thread.parentId).toBe(general.id);
    expect(thread.guildId).toBe(api.guild.id);
    expect(api.callsOf("POST", "/channels/:id/threads")[0]).toMatchObject({
      path: `/channels/${general.id}/threads`,
      body: { name: "session 42", type: ChannelType.PublicThread },
    });
    const [createdEvent] = await threadCreated;
    expect(createdEvent.id).toBe(thread.id);

    const inThread = await thread.send("first reply in the thread");
    expect(inThread.channelId).toBe(thread.id);

    const updated = once(client, Events.ThreadUpdate) as Promise<[ThreadChannel, ThreadChannel]>;
    await thread.setArchived(true);
    expect(thread.archived).toBe(true);
    expect(api.callsOf("PATCH", `/channels/${thread.id}`)[0]?.body).toEqual({ archived: true });
    expect(api.channel(thread.id)?.thread_metadata).toMatchObject({ archived: true });
    await updated;

    const starter = await receive(client, api, discordMessage("guild-text", { content: "let's discuss" }));
    const fromMessage = await starter.startThread({ name: "discussion" });
    expect(fromMessage.id).toBe(starter.id);
    expect(api.callsOf("POST", "/channels/:id/messages/:mid/threads")).toHaveLength(1);

    const forum = client.channels.cache.get(api.guild.forum.id);
    if (forum?.type !== ChannelType.GuildForum) throw new Error("forum missing");
    const post = await forum.threads.create({ name: "idea", message: { content: "what if…" } });
    expect(post.parentId).toBe(forum.id);
    expect(api.callsOf("POST", `/channels/${forum.id}/threads`)[0]?.body).toMatchObject({
      name: "idea",
      message: { content: "what if…" },
    });
  });

  it("makes discord.js wait out a 429 and retry", async () => {
    const api = await start();
    const client = await login(api);
    api.failNext("POST /channels/:id/messages", 1, { status: 429, retryAfterSeconds: 0.2 });
    const startedAt = Date.now();
    const sent = await textChannel(client, api).send("after the limit");
    expect(Date.now() - startedAt).toBeGreaterThanOrEqual(200);
    expect(sent.content).toBe("after the limit");
    expect(api.callsOf("POST", "/channels/:id/messages")).toHaveLength(2);
  });

  it("rejects with a RateLimitError when the client uses rejectOnRateLimit", async () => {
    const api = await start();
    const client = await login(api, { rest: { rejectOnRateLimit: () => true } });
    api.failNext("POST /channels/:id/messages", 1, { retryAfterSeconds: 2 });
    const failure = await textChannel(client, api)
      .send("limited")
      .catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(RateLimitError);
    expect(failure).toMatchObject({ method: "POST", route: "/channels/:id/messages", global: false });
    expect((failure as RateLimitError).retryAfter).toBeGreaterThanOrEqual(2000);
    expect((failure as RateLimitError).retryAfter).toBeLessThan(2500);
    // The bucket hash from the 429 moves later requests to a fresh bucket: the next send goes through.
    expect((await textChannel(client, api).send("later")).content).toBe("later");
  });

  it("returns other errors on demand, 404 for unknown routes and 401 for a wrong token", async () => {
    const api = await start();
    const client = await login(api);
    api.failNext("/channels/:id/typing", 1, { status: 403, code: 50013, message: "Missing Permissions" });
    const denied = await textChannel(client, api)
      .sendTyping()
      .catch((e: unknown) => e);
    expect(denied).toBeInstanceOf(DiscordAPIError);
    expect(denied).toMatchObject({ status: 403, code: 50013, message: "Missing Permissions" });

    const headers = { authorization: `Bot ${api.token}` };
    const unknown = await fetch(`${api.restUrl}/v10/nothing/here`, { headers });
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toEqual({ message: "Unknown", code: 0 });
    const me = await fetch(`${api.restUrl}/v10/users/@me`, { headers: { authorization: "Bot wrong" } });
    expect(me.status).toBe(401);

    const stranger = new Client({ intents: INTENTS, rest: { api: api.restUrl } });
    clients.push(stranger);
    await expect(stranger.login("not-the-token")).rejects.toMatchObject({ code: "TokenInvalid" });
  });

  it("strips message content without the MessageContent intent, except mentions and DMs", async () => {
    const api = await start();
    const client = await login(api, {
      intents: [GatewayIntentBits.Guilds, GatewayIntentBits.GuildMessages, GatewayIntentBits.DirectMessages],
    });
    expect((await receive(client, api, discordMessage("guild-text"))).content).toBe("");
    expect((await receive(client, api, discordMessage("guild-mention"))).content).toContain("summarise");
    expect((await receive(client, api, discordMessage("dm-text"))).content).toBe("hey, are you there?");
  });

  it("heartbeats, resumes after op 7 RECONNECT and keeps dispatching", async () => {
    const api = await start({ heartbeatIntervalMs: 100 });
    const client = await login(api);
    await eventually(() => client.ws.ping >= 0, "a heartbeat acknowledged (ping measured)");

    const resumed = once(client, Events.ShardResume);
    api.requestReconnect();
    await resumed;
    expect(api.identifies).toHaveLength(1);
    expect(api.connections).toBe(1);
    const message = await receive(client, api, discordMessage("guild-text", { content: "after resume" }));
    expect(message.content).toBe("after resume");
  });

  it("leaves no connection behind after client.destroy()", async () => {
    const api = await start();
    const client = await login(api);
    await client.destroy();
    clients.length = 0;
    await eventually(
      () => api.connections === 0,
      () => `no connection left (${api.connections} open)`,
    );
    expect(api.dispatch("MESSAGE_CREATE", discordMessage("guild-text"))).toBe(0);
  });
});

describe("createFakeDiscordApi gateway protocol", () => {
  it("speaks zlib-stream when asked (compress=zlib-stream), answering heartbeats", async () => {
    const api = await start();
    const socket = new WebSocket(`${api.gatewayUrl}?v=10&encoding=json&compress=zlib-stream`);
    const inflate = createInflate();
    const payloads: { op: number; t: string | null; s: number | null; d: unknown }[] = [];
    const next = () =>
      new Promise<(typeof payloads)[number]>((resolve) => {
        const poll = () => {
          const payload = payloads.shift();
          if (payload === undefined) setTimeout(poll, 5);
          else resolve(payload);
        };
        poll();
      });
    socket.on("message", (data: Buffer, isBinary: boolean) => {
      expect(isBinary).toBe(true);
      expect([...data.subarray(-4)]).toEqual([0, 0, 0xff, 0xff]);
      inflate.write(data);
      inflate.flush(zlibConstants.Z_SYNC_FLUSH, () => {
        const text = String(inflate.read() ?? "");
        if (text !== "") payloads.push(JSON.parse(text));
      });
    });
    await once(socket, "open");
    expect(await next()).toMatchObject({ op: 10, d: { heartbeat_interval: 41_250 } });
    socket.send(JSON.stringify({ op: 1, d: null }));
    expect((await next()).op).toBe(11);
    socket.send(
      JSON.stringify({ op: 2, d: { token: api.token, intents: 1, properties: {}, shard: [0, 1] } }),
    );
    expect(await next()).toMatchObject({ op: 0, t: "READY", s: 1 });
    expect(await next()).toMatchObject({ op: 0, t: "GUILD_CREATE", s: 2, d: { id: api.guild.id } });
    api.dispatch("THREAD_UPDATE", { ...api.guild.thread, name: "renamed" });
    expect(await next()).toMatchObject({ op: 0, t: "THREAD_UPDATE", s: 3, d: { name: "renamed" } });
    expect(api.channel(api.guild.thread.id)?.name).toBe("renamed");
    socket.close();
    await once(socket, "close");
    inflate.close();
  });

  it("closes with 4004 on a wrong token", async () => {
    const api = await start();
    const socket = new WebSocket(`${api.gatewayUrl}?v=10&encoding=json`);
    await once(socket, "message");
    socket.send(JSON.stringify({ op: 2, d: { token: "wrong", intents: 0, properties: {} } }));
    const [code] = (await once(socket, "close")) as [number];
    expect(code).toBe(4004);
  });
});

describe("discordMessage", () => {
  it("hands out recorded payloads as fresh copies with new snowflakes", () => {
    const a = discordMessage("thread-text", { content: "changed" });
    const b = discordMessage("thread-text");
    expect(a.id).not.toBe(b.id);
    expect(BigInt(String(b.id))).toBeGreaterThan(BigInt(String(a.id)));
    expect(a.content).toBe("changed");
    expect(b.content).toBe("can you draft the release notes here?");
    expect(b.channel_id).toBe("1300000000000000400");
    expect(Date.parse(String(b.timestamp))).toBeGreaterThan(Date.now() - 5000);
    (b.author as { username: string }).username = "mutated";
    expect((discordMessage("thread-text").author as { username: string }).username).toBe("alice_example");
    expect(discordMessage("dm-text")).not.toHaveProperty("guild_id");
    expect(discordMessage("other-bot-text").author).toMatchObject({ bot: true });
  });
});
