import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { createDeflate, constants as zlibConstants } from "node:zlib";
import { type WebSocket, WebSocketServer } from "ws";
import { discordSnowflake, discordTimestamp } from "./discord-fixtures.js";

/** A raw Discord user object (snake_case, as on the wire). */
export interface DiscordUserData {
  id: string;
  username: string;
  discriminator: string;
  global_name: string | null;
  avatar: string | null;
  bot?: boolean | undefined;
  [key: string]: unknown;
}

/** A raw Discord channel object (guild channel, thread or DM). */
export interface DiscordChannelData {
  id: string;
  type: number;
  [key: string]: unknown;
}

/** One REST call the fake received. */
export interface DiscordCall {
  /** Upper case: `GET`, `POST`, `PATCH`, `PUT`, `DELETE`. */
  method: string;
  /** Without the `/api/v10` prefix and the query string, e.g. `/channels/1300000000000000200/messages`. */
  path: string;
  /** The JSON body (`payload_json` for multipart uploads), `undefined` when there was none. */
  body: unknown;
  /** The query string, when there was one. */
  query?: Record<string, string> | undefined;
  /** Uploaded files of a multipart request. */
  files?: { field: string; name: string; contentType: string; size: number }[] | undefined;
}

/** How `failNext` fails a call. */
export interface DiscordFailure {
  /** HTTP status (default 429). */
  status?: number | undefined;
  /** 429 only: seconds to wait, fractions allowed (default 1); sent as `retry_after` and `retry-after`. */
  retryAfterSeconds?: number | undefined;
  /** 429 only: a global rate limit (`global: true`, `x-ratelimit-global`) instead of a per-route one. */
  global?: boolean | undefined;
  /** Non-429 only: Discord's JSON error code (default 0) and message (default derived from the status). */
  code?: number | undefined;
  message?: string | undefined;
}

/**
 * Which calls `failNext` fails: `"POST /channels/:id/messages"` (method and path pattern; `:name` matches one
 * segment), `"/channels/:id/typing"` (any method), a RegExp tested against `"POST /channels/123/messages"`, or
 * a predicate.
 */
export type DiscordRouteMatcher = string | RegExp | ((call: DiscordCall) => boolean);

/** The fake's one guild and its channels (live state). */
export interface FakeDiscordGuild {
  readonly id: string;
  readonly name: string;
  /** The text channel "general" (type 0), live state. */
  readonly general: DiscordChannelData;
  /** The forum channel "ideas" (type 15), live state. */
  readonly forum: DiscordChannelData;
  /** The public thread "release-planning" in "general" (type 11), sent in GUILD_CREATE `threads`. */
  readonly thread: DiscordChannelData;
}

/** Options of `createFakeDiscordApi`. */
export interface FakeDiscordOptions {
  token?: string | undefined;
  /** HELLO's `heartbeat_interval` (default 41 250 ms); discord.js sends its first heartbeat after a random share. */
  heartbeatIntervalMs?: number | undefined;
  /**
   * Send the bot's own messages back as MESSAGE_CREATE (and edits as MESSAGE_UPDATE), as Discord does
   * (default true): a bot sees its own messages and must ignore them.
   */
  echoOwnMessages?: boolean | undefined;
}

/** A fake Discord (REST and gateway WebSocket on 127.0.0.1), from `createFakeDiscordApi`. */
export interface FakeDiscordApi {
  /** Pass as `new Client({ rest: { api: restUrl } })`; discord.js calls `${restUrl}/v10/...`. */
  readonly restUrl: string;
  /** The gateway URL `GET /gateway/bot` hands out (also the `resume_gateway_url`). */
  readonly gatewayUrl: string;
  readonly token: string;
  /** The bot user (`client.user` after login); its id is also the application id. */
  readonly botUser: DiscordUserData;
  /** "alice_example", the human author of the fixtures, a member of the guild. */
  readonly user: DiscordUserData;
  /** "CI Bot", another bot in the guild (author of the "other-bot-text" fixture). */
  readonly otherBot: DiscordUserData;
  readonly guild: FakeDiscordGuild;
  /** The DM channel between the bot and `user` (type 1). */
  readonly dmChannel: DiscordChannelData;
  /** Every REST call, in order (failed and rejected ones included). */
  readonly calls: DiscordCall[];
  /** The `d` of every IDENTIFY received (token, intents, properties, shard, …). */
  readonly identifies: Record<string, unknown>[];
  /** Open gateway connections. */
  readonly connections: number;
  /** REST calls of one method, optionally only those whose path matches (`"/channels/:id/messages"` or a RegExp). */
  callsOf(method: string, pathPattern?: string | RegExp): DiscordCall[];
  /** The current state of a channel or thread the fake knows. */
  channel(id: string): DiscordChannelData | undefined;
  /**
   * Sends a DISPATCH (op 0, `t` = `event`, increasing `s`) to every identified connection whose intents cover it
   * (message events need GuildMessages or DirectMessages; without MessageContent, guild messages lose their content
   * unless they mention the bot). The fake also learns from it (threads, channels, messages, DM channels).
   * Returns how many connections it was sent to.
   */
  dispatch(event: string, data: unknown): number;
  /** Makes the next `times` matching REST calls fail (default: 429, retry after 1 s, per-route bucket). */
  failNext(route: DiscordRouteMatcher, times: number, failure?: DiscordFailure): void;
  /** Sends op 7 RECONNECT to every connection; discord.js reconnects and RESUMEs (RESUMED is sent back). */
  requestReconnect(): void;
  /** Stops both servers and closes every connection. */
  close(): Promise<void>;
}

const IDS = {
  bot: "1300000000000000001",
  guild: "1300000000000000100",
  botRole: "1300000000000000110",
  category: "1300000000000000150",
  general: "1300000000000000200",
  forum: "1300000000000000300",
  thread: "1300000000000000400",
  dm: "1300000000000000500",
  alice: "1200000000000000001",
  otherBot: "1200000000000000002",
} as const;

const INTENTS = { Guilds: 1, GuildMessages: 1 << 9, DirectMessages: 1 << 12, MessageContent: 1 << 15 };
const GUILD_EVENTS = /^(GUILD_|CHANNEL_|THREAD_)/;
const MESSAGE_EVENTS = new Set(["MESSAGE_CREATE", "MESSAGE_UPDATE", "MESSAGE_DELETE", "MESSAGE_DELETE_BULK"]);

const CHANNEL_TYPES = {
  text: 0,
  dm: 1,
  category: 4,
  announcement: 5,
  publicThread: 11,
  privateThread: 12,
  forum: 15,
};
const THREAD_TYPES = new Set([10, 11, 12]);
const SENDABLE_TYPES = new Set([0, 1, 2, 3, 5, 10, 11, 12, 13]);

function bit(n: number): bigint {
  return 1n << BigInt(n);
}
// ViewChannel, SendMessages, ManageMessages, EmbedLinks, AttachFiles, ReadMessageHistory, AddReactions,
// ManageThreads, CreatePublicThreads, CreatePrivateThreads, SendMessagesInThreads.
const BOT_PERMISSIONS = [10, 11, 13, 14, 15, 16, 6, 34, 35, 36, 38]
  .reduce((acc, n) => acc | bit(n), 0n)
  .toString();
const EVERYONE_PERMISSIONS = "2248473465835073";

function user(id: string, username: string, globalName: string | null, discriminator = "0"): DiscordUserData {
  return {
    id,
    username,
    discriminator,
    global_name: globalName,
    avatar: null,
    public_flags: 0,
    avatar_decoration_data: null,
    collectibles: null,
    primary_guild: null,
    clan: null,
  };
}

function member(
  userData: DiscordUserData | null,
  roles: string[],
  joinedAt: string,
): Record<string, unknown> {
  return {
    ...(userData === null ? {} : { user: userData }),
    roles,
    nick: null,
    avatar: null,
    banner: null,
    premium_since: null,
    joined_at: joinedAt,
    deaf: false,
    mute: false,
    flags: 0,
    pending: false,
    communication_disabled_until: null,
  };
}

function patternToRegExp(pattern: string): RegExp {
  const source = pattern
    .split(/(:[A-Za-z_]\w*)/)
    .map((part) => (part.startsWith(":") ? "([^/]+)" : part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")))
    .join("");
  return new RegExp(`^${source}$`);
}

type Json = Record<string, unknown>;
interface RestResult {
  status: number;
  body?: unknown;
  headers?: Record<string, string> | undefined;
  /** Runs after the response is written (gateway events caused by the call). */
  after?: (() => void) | undefined;
}
type RouteHandler = (ids: string[], body: Json, query: URLSearchParams) => RestResult;

interface GatewaySession {
  id: string;
  seq: number;
  intents: number;
  connection: GatewayConnection | null;
}
interface GatewayConnection {
  socket: WebSocket;
  session: GatewaySession | null;
  send(payload: Json): void;
}

function error(status: number, code: number, message: string, extra: Json = {}): RestResult {
  return { status, body: { message, code, ...extra } };
}
const unknownChannel = () => error(404, 10003, "Unknown Channel");
const unknownMessage = () => error(404, 10008, "Unknown Message");
const invalidForm = (field: string, code: string, message: string) =>
  error(400, 50035, "Invalid Form Body", { errors: { [field]: { _errors: [{ code, message }] } } });

/**
 * A fake Discord API on 127.0.0.1 that a real discord.js 14 `Client` logs in to: REST under `restUrl` (the gateway
 * lookup, users, the application, guild and channel reads, messages, typing, threads, channel edits, reactions)
 * and the gateway WebSocket (HELLO, IDENTIFY → READY + GUILD_CREATE, heartbeats, RESUME, zlib-stream when asked).
 * It holds one guild with a category, the text channel "general", the forum "ideas" and the thread
 * "release-planning", plus a DM channel with "alice_example"; records every REST call; dispatches events on
 * demand; and fails calls on demand with Discord's 429 (headers included) or any other error.
 */
export async function createFakeDiscordApi(options: FakeDiscordOptions = {}): Promise<FakeDiscordApi> {
  const token =
    options.token ??
    `${Buffer.from(IDS.bot).toString("base64url")}.GfAkE0.sessions-fake-discord-token-0000000000`;
  const heartbeatInterval = options.heartbeatIntervalMs ?? 41_250;
  const echoOwnMessages = options.echoOwnMessages ?? true;
  const calls: DiscordCall[] = [];
  const identifies: Record<string, unknown>[] = [];
  const failures: { matches: (call: DiscordCall) => boolean; times: number; failure: DiscordFailure }[] = [];
  const sessions = new Map<string, GatewaySession>();
  const connections = new Set<GatewayConnection>();
  const channels = new Map<string, DiscordChannelData>();
  const messages = new Map<string, Json>();
  const createdAt = "2024-11-01T12:00:00.000000+00:00";

  const botUser: DiscordUserData = { ...user(IDS.bot, "Sessions Test Bot", null, "4821"), bot: true };
  const alice = user(IDS.alice, "alice_example", "Alice");
  const otherBot: DiscordUserData = { ...user(IDS.otherBot, "CI Bot", null, "7731"), bot: true };
  const users = new Map([botUser, alice, otherBot].map((u) => [u.id, u]));
  const members = new Map<string, Json>([
    [botUser.id, member(botUser, [IDS.botRole], createdAt)],
    [alice.id, member(alice, [], "2024-11-02T10:00:00.000000+00:00")],
    [otherBot.id, member(otherBot, [], "2024-11-03T08:30:00.000000+00:00")],
  ]);
  const roles: Json[] = [
    {
      id: IDS.guild,
      name: "@everyone",
      description: null,
      permissions: EVERYONE_PERMISSIONS,
      position: 0,
      color: 0,
      colors: { primary_color: 0, secondary_color: null, tertiary_color: null },
      hoist: false,
      managed: false,
      mentionable: false,
      icon: null,
      unicode_emoji: null,
      flags: 0,
    },
    {
      id: IDS.botRole,
      name: "Sessions Test Bot",
      description: null,
      permissions: BOT_PERMISSIONS,
      position: 1,
      color: 0,
      colors: { primary_color: 0, secondary_color: null, tertiary_color: null },
      hoist: false,
      managed: true,
      mentionable: false,
      icon: null,
      unicode_emoji: null,
      flags: 0,
      tags: { bot_id: IDS.bot },
    },
  ];
  const guildInfo = {
    id: IDS.guild,
    name: "Sessions Test Guild",
    icon: null,
    description: null,
    splash: null,
    discovery_splash: null,
    banner: null,
    features: [],
    owner_id: IDS.alice,
    application_id: null,
    region: "deprecated",
    afk_channel_id: null,
    afk_timeout: 300,
    system_channel_id: IDS.general,
    system_channel_flags: 0,
    widget_enabled: false,
    widget_channel_id: null,
    verification_level: 1,
    default_message_notifications: 1,
    mfa_level: 0,
    explicit_content_filter: 2,
    max_presences: null,
    max_members: 25_000_000,
    max_stage_video_channel_users: 50,
    max_video_channel_users: 25,
    vanity_url_code: null,
    premium_tier: 0,
    premium_subscription_count: 0,
    preferred_locale: "en-US",
    rules_channel_id: null,
    safety_alerts_channel_id: null,
    public_updates_channel_id: null,
    hub_type: null,
    premium_progress_bar_enabled: false,
    latest_onboarding_question_id: null,
    nsfw: false,
    nsfw_level: 0,
    incidents_data: null,
    inventory_settings: null,
    embedded_activities: [],
    emojis: [],
    stickers: [],
  };

  const guildChannel = (id: string, type: number, name: string, position: number, extra: Json = {}) =>
    ({
      id,
      type,
      guild_id: IDS.guild,
      name,
      position,
      flags: 0,
      parent_id: IDS.category,
      permission_overwrites: [],
      nsfw: false,
      ...extra,
    }) satisfies DiscordChannelData;
  const category = guildChannel(IDS.category, CHANNEL_TYPES.category, "Text Channels", 0, {
    parent_id: null,
  });
  const general = guildChannel(IDS.general, CHANNEL_TYPES.text, "general", 0, {
    topic: "Day-to-day chat",
    last_message_id: null,
    last_pin_timestamp: null,
    rate_limit_per_user: 0,
    default_auto_archive_duration: 1440,
    default_thread_rate_limit_per_user: 0,
  });
  const forum = guildChannel(IDS.forum, CHANNEL_TYPES.forum, "ideas", 1, {
    topic: "One post per idea",
    last_message_id: null,
    rate_limit_per_user: 0,
    default_auto_archive_duration: 4320,
    default_thread_rate_limit_per_user: 0,
    default_reaction_emoji: null,
    default_sort_order: null,
    default_forum_layout: 0,
    available_tags: [
      { id: "1300000000000000310", name: "feature", moderated: false, emoji_id: null, emoji_name: null },
    ],
    template: "",
  });
  const thread = newThread(general, "release-planning", {
    id: IDS.thread,
    owner_id: IDS.alice,
    message_count: 4,
    total_message_sent: 4,
    member_count: 2,
    includeMember: false,
  });
  const dmChannel: DiscordChannelData = {
    id: IDS.dm,
    type: CHANNEL_TYPES.dm,
    last_message_id: null,
    flags: 0,
    recipients: [alice],
  };
  for (const c of [category, general, forum, thread, dmChannel]) channels.set(c.id, c);

  function newThread(
    parent: DiscordChannelData,
    name: string,
    opts: {
      id?: string | undefined;
      type?: number | undefined;
      owner_id?: string | undefined;
      autoArchiveDuration?: number | undefined;
      rateLimitPerUser?: number | undefined;
      appliedTags?: unknown;
      invitable?: unknown;
      message_count?: number | undefined;
      total_message_sent?: number | undefined;
      member_count?: number | undefined;
      includeMember?: boolean | undefined;
    } = {},
  ): DiscordChannelData {
    const id = opts.id ?? discordSnowflake();
    const type = opts.type ?? CHANNEL_TYPES.publicThread;
    const now = discordTimestamp();
    return {
      id,
      type,
      guild_id: IDS.guild,
      parent_id: parent.id,
      owner_id: opts.owner_id ?? IDS.bot,
      name,
      last_message_id: null,
      rate_limit_per_user: opts.rateLimitPerUser ?? 0,
      flags: 0,
      message_count: opts.message_count ?? 0,
      total_message_sent: opts.total_message_sent ?? 0,
      member_count: opts.member_count ?? 1,
      thread_metadata: {
        archived: false,
        archive_timestamp: now,
        auto_archive_duration:
          opts.autoArchiveDuration ?? (parent.default_auto_archive_duration as number | undefined) ?? 1440,
        locked: false,
        create_timestamp: now,
        ...(type === CHANNEL_TYPES.privateThread ? { invitable: opts.invitable ?? true } : {}),
      },
      ...(parent.type === CHANNEL_TYPES.forum ? { applied_tags: opts.appliedTags ?? [] } : {}),
      ...(opts.includeMember === false
        ? {}
        : {
            member: { id, user_id: IDS.bot, join_timestamp: now, flags: 1, muted: false, mute_config: null },
          }),
    };
  }

  function isThread(c: DiscordChannelData): boolean {
    return THREAD_TYPES.has(c.type);
  }

  function guildCreatePayload(): Json {
    const all = [...channels.values()].filter((c) => c.guild_id === IDS.guild);
    const active = all.filter(
      (c) => isThread(c) && !(c.thread_metadata as { archived?: boolean | undefined }).archived,
    );
    return {
      ...guildInfo,
      roles,
      unavailable: false,
      lazy: true,
      large: false,
      joined_at: createdAt,
      member_count: members.size,
      members: [...members.values()],
      channels: all.filter((c) => !isThread(c)).map(({ guild_id: _omit, ...c }) => c),
      threads: active,
      presences: [],
      voice_states: [],
      stage_instances: [],
      guild_scheduled_events: [],
      soundboard_sounds: [],
      activity_instances: [],
      version: Date.now(),
    };
  }

  // --- messages --------------------------------------------------------------------------------------------------

  function gatewayMessage(message: Json, channel: DiscordChannelData): Json {
    if (channel.guild_id === undefined) return { ...message, channel_type: channel.type };
    const { user: _user, ...botMember } = members.get(IDS.bot) ?? {};
    return { ...message, guild_id: channel.guild_id, member: botMember, channel_type: channel.type };
  }

  function mentionsIn(content: string): Json[] {
    const ids = new Set([...content.matchAll(/<@!?(\d+)>/g)].map((m) => m[1] ?? ""));
    return [...ids].flatMap((id) => {
      const u = users.get(id);
      return u === undefined ? [] : [u];
    });
  }

  function createMessage(
    channel: DiscordChannelData,
    body: Json,
    files: DiscordCall["files"],
    id: string = discordSnowflake(),
  ): RestResult | Json {
    const content = typeof body.content === "string" ? body.content : "";
    const embeds = Array.isArray(body.embeds) ? body.embeds : [];
    const components = Array.isArray(body.components) ? body.components : [];
    const hasSticker = Array.isArray(body.sticker_ids) && body.sticker_ids.length > 0;
    if (
      content === "" &&
      embeds.length === 0 &&
      components.length === 0 &&
      !files?.length &&
      !hasSticker &&
      !body.poll
    ) {
      return error(400, 50006, "Cannot send an empty message");
    }
    if (content.length > 2000) {
      return invalidForm("content", "BASE_TYPE_MAX_LENGTH", "Must be 2000 or fewer in length.");
    }
    const reference = body.message_reference as
      | { message_id?: string | undefined; channel_id?: string | undefined }
      | undefined;
    let referenced: Json | null = null;
    if (reference?.message_id !== undefined) {
      referenced = messages.get(reference.message_id) ?? null;
      const failIfMissing = (body.message_reference as { fail_if_not_exists?: boolean | undefined })
        .fail_if_not_exists;
      if (referenced === null && failIfMissing !== false) {
        return invalidForm("message_reference", "MESSAGE_REFERENCE_UNKNOWN_MESSAGE", "Unknown message");
      }
    }
    const message: Json = {
      type: reference === undefined ? 0 : 19,
      channel_id: channel.id,
      content,
      attachments: (files ?? []).map((f) => {
        const attachmentId = discordSnowflake();
        const url = `https://cdn.discordapp.com/attachments/${channel.id}/${attachmentId}/${f.name}`;
        return {
          id: attachmentId,
          filename: f.name,
          size: f.size,
          url,
          proxy_url: url,
          content_type: f.contentType,
        };
      }),
      embeds,
      mentions: mentionsIn(content),
      mention_roles: [],
      pinned: false,
      mention_everyone: false,
      tts: body.tts === true,
      timestamp: discordTimestamp(),
      edited_timestamp: null,
      flags: typeof body.flags === "number" ? body.flags : 0,
      components,
      id,
      author: botUser,
      ...(body.nonce === undefined ? {} : { nonce: body.nonce }),
      ...(reference === undefined
        ? {}
        : {
            message_reference: {
              type: 0,
              channel_id: reference.channel_id ?? channel.id,
              message_id: reference.message_id,
              ...(channel.guild_id === undefined ? {} : { guild_id: channel.guild_id }),
            },
            referenced_message: referenced === null ? null : stripGatewayFields(referenced),
          }),
    };
    messages.set(id, gatewayMessage(message, channel));
    channel.last_message_id = id;
    if (isThread(channel)) {
      channel.message_count = ((channel.message_count as number | undefined) ?? 0) + 1;
      channel.total_message_sent = ((channel.total_message_sent as number | undefined) ?? 0) + 1;
    }
    return message;
  }

  function stripGatewayFields(message: Json): Json {
    const { guild_id: _g, member: _m, channel_type: _t, ...rest } = message;
    return rest;
  }

  // --- gateway ---------------------------------------------------------------------------------------------------

  function sendDispatch(session: GatewaySession, event: string, data: unknown) {
    if (session.connection === null) return;
    session.seq++;
    session.connection.send({ op: 0, t: event, s: session.seq, d: data });
  }

  function visibleTo(session: GatewaySession, event: string, data: unknown): unknown | undefined {
    const intents = session.intents;
    if (MESSAGE_EVENTS.has(event)) {
      const message = (data ?? {}) as Json;
      const inGuild = message.guild_id !== undefined;
      if ((intents & (inGuild ? INTENTS.GuildMessages : INTENTS.DirectMessages)) === 0) return undefined;
      const author = message.author as { id?: string | undefined } | undefined;
      const mentionsBot = (message.mentions as { id?: string | undefined }[] | undefined)?.some(
        (m) => m.id === IDS.bot,
      );
      if (
        inGuild &&
        (intents & INTENTS.MessageContent) === 0 &&
        author !== undefined &&
        author.id !== IDS.bot &&
        mentionsBot !== true
      ) {
        return { ...message, content: "", embeds: [], attachments: [], components: [] };
      }
      return data;
    }
    if (GUILD_EVENTS.test(event) && (intents & INTENTS.Guilds) === 0) return undefined;
    return data;
  }

  function broadcast(event: string, data: unknown): number {
    let sent = 0;
    for (const session of sessions.values()) {
      if (session.connection === null) continue;
      const visible = visibleTo(session, event, data);
      if (visible === undefined) continue;
      sendDispatch(session, event, visible);
      sent++;
    }
    return sent;
  }

  function learn(event: string, data: unknown) {
    if (typeof data !== "object" || data === null) return;
    const d = data as Json;
    switch (event) {
      case "MESSAGE_CREATE": {
        const channelId = String(d.channel_id);
        if (!channels.has(channelId) && d.guild_id === undefined && d.author !== undefined) {
          channels.set(channelId, {
            id: channelId,
            type: CHANNEL_TYPES.dm,
            last_message_id: d.id,
            flags: 0,
            recipients: [d.author],
          });
        }
        const channel = channels.get(channelId);
        if (channel !== undefined) channel.last_message_id = d.id;
        messages.set(String(d.id), structuredClone(d));
        break;
      }
      case "MESSAGE_DELETE":
        messages.delete(String(d.id));
        break;
      case "CHANNEL_CREATE":
      case "THREAD_CREATE":
        if (typeof d.id === "string" && typeof d.type === "number") {
          const { newly_created: _n, ...channel } = d;
          channels.set(d.id, structuredClone(channel) as DiscordChannelData);
        }
        break;
      case "CHANNEL_UPDATE":
      case "THREAD_UPDATE": {
        const existing = channels.get(String(d.id));
        if (existing !== undefined) Object.assign(existing, structuredClone(d));
        break;
      }
      case "CHANNEL_DELETE":
      case "THREAD_DELETE":
        channels.delete(String(d.id));
        break;
    }
  }

  function makeSender(socket: WebSocket, compress: boolean): (payload: Json) => void {
    if (!compress) {
      return (payload) => {
        if (socket.readyState === socket.OPEN) socket.send(JSON.stringify(payload));
      };
    }
    // zlib-stream: one deflate context per connection, every payload flushed with Z_SYNC_FLUSH (ends in 00 00 ff ff).
    const deflate = createDeflate();
    const chunks: Buffer[] = [];
    deflate.on("data", (chunk: Buffer) => chunks.push(chunk));
    socket.once("close", () => deflate.close());
    let queue = Promise.resolve();
    return (payload) => {
      queue = queue.then(
        () =>
          new Promise<void>((resolve) => {
            if (socket.readyState !== socket.OPEN) {
              resolve();
              return;
            }
            deflate.write(JSON.stringify(payload));
            deflate.flush(zlibConstants.Z_SYNC_FLUSH, () => {
              const frame = Buffer.concat(chunks.splice(0));
              if (socket.readyState === socket.OPEN) socket.send(frame);
              resolve();
            });
          }),
      );
    };
  }

  function onGatewayConnection(socket: WebSocket, req: IncomingMessage) {
    const query = new URL(req.url ?? "/", "http://127.0.0.1").searchParams;
    const connection: GatewayConnection = {
      socket,
      session: null,
      send: makeSender(socket, query.get("compress") === "zlib-stream"),
    };
    connections.add(connection);
    socket.on("close", () => {
      connections.delete(connection);
      if (connection.session !== null && connection.session.connection === connection) {
        connection.session.connection = null;
      }
    });
    socket.on("error", () => {});
    socket.on("message", (raw) => {
      let payload: { op?: unknown; d?: unknown };
      try {
        payload = JSON.parse(String(raw)) as { op?: unknown; d?: unknown };
      } catch {
        socket.close(4002, "Error while decoding payload.");
        return;
      }
      onGatewayPayload(connection, payload.op, (payload.d ?? null) as Json | number | null);
    });
    connection.send({
      op: 10,
      d: { heartbeat_interval: heartbeatInterval, _trace: ['["gateway-fake",{"micros":0}]'] },
      s: null,
      t: null,
    });
  }

  function onGatewayPayload(connection: GatewayConnection, op: unknown, d: Json | number | null) {
    const { socket } = connection;
    const data = (typeof d === "object" && d !== null ? d : {}) as Json;
    switch (op) {
      case 1: // HEARTBEAT
        connection.send({ op: 11, d: null, s: null, t: null });
        return;
      case 2: {
        // IDENTIFY
        if (connection.session !== null) {
          socket.close(4005, "Already authenticated.");
          return;
        }
        if (data.token !== token) {
          socket.close(4004, "Authentication failed.");
          return;
        }
        identifies.push(structuredClone(data));
        const session: GatewaySession = {
          id: randomUUID().replaceAll("-", ""),
          seq: 0,
          intents: typeof data.intents === "number" ? data.intents : 0,
          connection,
        };
        connection.session = session;
        sessions.set(session.id, session);
        sendDispatch(session, "READY", {
          v: 10,
          user_settings: {},
          user: { ...botUser, verified: true, mfa_enabled: false, email: null, flags: 0 },
          guilds: [{ id: IDS.guild, unavailable: true }],
          session_id: session.id,
          session_type: "normal",
          resume_gateway_url: gatewayUrl,
          shard: Array.isArray(data.shard) ? data.shard : [0, 1],
          application: { id: IDS.bot, flags: 8_945_664 },
          private_channels: [],
          relationships: [],
          presences: [],
          guild_join_requests: [],
          geo_ordered_rtc_regions: ["rotterdam", "frankfurt", "milan", "madrid", "london"],
          auth: {},
          _trace: ['["gateway-fake",{"micros":0}]'],
        });
        sendDispatch(session, "GUILD_CREATE", guildCreatePayload());
        return;
      }
      case 6: {
        // RESUME
        const session = sessions.get(String(data.session_id));
        if (data.token !== token) {
          socket.close(4004, "Authentication failed.");
          return;
        }
        if (session === undefined) {
          connection.send({ op: 9, d: false, s: null, t: null });
          return;
        }
        if (session.connection !== null && session.connection !== connection)
          session.connection.socket.close(4009);
        session.connection = connection;
        connection.session = session;
        sendDispatch(session, "RESUMED", { _trace: ['["gateway-fake",{"micros":0}]'] });
        return;
      }
      case 8: {
        // REQUEST_GUILD_MEMBERS
        if (connection.session === null) {
          socket.close(4003, "Not authenticated.");
          return;
        }
        const wanted = Array.isArray(data.user_ids) ? data.user_ids.map(String) : null;
        const list = [...members.values()].filter(
          (m) => wanted === null || wanted.includes((m.user as DiscordUserData).id),
        );
        sendDispatch(connection.session, "GUILD_MEMBERS_CHUNK", {
          guild_id: IDS.guild,
          members: list,
          chunk_index: 0,
          chunk_count: 1,
          not_found: [],
          ...(data.nonce === undefined ? {} : { nonce: data.nonce }),
        });
        return;
      }
      default:
        // PRESENCE_UPDATE, VOICE_STATE_UPDATE and the rest: accepted, ignored.
        if (connection.session === null) socket.close(4003, "Not authenticated.");
    }
  }

  // --- REST ------------------------------------------------------------------------------------------------------

  function requireChannel(id: string): DiscordChannelData | RestResult {
    return channels.get(id) ?? unknownChannel();
  }

  function isResult(value: unknown): value is RestResult {
    return typeof value === "object" && value !== null && "status" in value && !("id" in value);
  }

  function publicChannel(c: DiscordChannelData): DiscordChannelData {
    if (!isThread(c)) return c;
    const { member: _member, ...rest } = c;
    return rest as DiscordChannelData;
  }

  function threadCreated(threadData: DiscordChannelData, message?: Json): RestResult {
    channels.set(threadData.id, threadData);
    return {
      status: 201,
      body: message === undefined ? threadData : { ...threadData, message },
      after() {
        broadcast("THREAD_CREATE", { ...threadData, newly_created: true });
        const parent = channels.get(String(threadData.parent_id));
        if (message !== undefined && echoOwnMessages)
          broadcast("MESSAGE_CREATE", messages.get(String(message.id)));
        if (parent !== undefined && parent.type === CHANNEL_TYPES.forum)
          parent.last_message_id = threadData.id;
      },
    };
  }

  function threadOptions(body: Json) {
    return {
      ...(typeof body.auto_archive_duration === "number"
        ? { autoArchiveDuration: body.auto_archive_duration }
        : {}),
      ...(typeof body.rate_limit_per_user === "number" ? { rateLimitPerUser: body.rate_limit_per_user } : {}),
      ...(body.applied_tags === undefined ? {} : { appliedTags: body.applied_tags }),
      ...(body.invitable === undefined ? {} : { invitable: body.invitable }),
    };
  }

  function validThreadName(body: Json): RestResult | undefined {
    if (typeof body.name !== "string" || body.name.length === 0) {
      return invalidForm("name", "BASE_TYPE_REQUIRED", "This field is required");
    }
    if (body.name.length > 100) {
      return invalidForm("name", "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 100 in length.");
    }
    return undefined;
  }

  let currentFiles: DiscordCall["files"];

  const routes: [method: string, pattern: RegExp, handler: RouteHandler][] = [
    [
      "GET",
      patternToRegExp("/gateway/bot"),
      () => ({
        status: 200,
        body: {
          url: gatewayUrl,
          shards: 1,
          session_start_limit: { total: 1000, remaining: 999, reset_after: 14_400_000, max_concurrency: 1 },
        },
      }),
    ],
    ["GET", patternToRegExp("/gateway"), () => ({ status: 200, body: { url: gatewayUrl } })],
    [
      "GET",
      patternToRegExp("/users/@me"),
      () => ({
        status: 200,
        body: { ...botUser, verified: true, mfa_enabled: false, locale: "en-US", flags: 0 },
      }),
    ],
    [
      "GET",
      patternToRegExp("/users/:user"),
      ([id = ""]) => {
        const u = users.get(id);
        return u === undefined ? error(404, 10013, "Unknown User") : { status: 200, body: u };
      },
    ],
    [
      "POST",
      patternToRegExp("/users/@me/channels"),
      (_ids, body) => {
        const recipient = users.get(String(body.recipient_id));
        if (recipient === undefined)
          return invalidForm("recipient_id", "NUMBER_TYPE_COERCE", "Value is not snowflake.");
        const existing = [...channels.values()].find(
          (c) => c.type === CHANNEL_TYPES.dm && (c.recipients as DiscordUserData[])[0]?.id === recipient.id,
        );
        if (existing !== undefined) return { status: 200, body: existing };
        const dm: DiscordChannelData = {
          id: discordSnowflake(),
          type: CHANNEL_TYPES.dm,
          last_message_id: null,
          flags: 0,
          recipients: [recipient],
        };
        channels.set(dm.id, dm);
        return { status: 200, body: dm };
      },
    ],
    ["GET", patternToRegExp("/applications/@me"), () => ({ status: 200, body: application() })],
    ["GET", patternToRegExp("/oauth2/applications/@me"), () => ({ status: 200, body: application() })],
    [
      "GET",
      patternToRegExp("/guilds/:guild"),
      ([id = ""]) =>
        id === IDS.guild
          ? { status: 200, body: { ...guildInfo, roles } }
          : error(404, 10004, "Unknown Guild"),
    ],
    [
      "GET",
      patternToRegExp("/guilds/:guild/channels"),
      ([id = ""]) =>
        id === IDS.guild
          ? { status: 200, body: [...channels.values()].filter((c) => c.guild_id === id && !isThread(c)) }
          : error(404, 10004, "Unknown Guild"),
    ],
    [
      "GET",
      patternToRegExp("/guilds/:guild/threads/active"),
      ([id = ""]) => {
        if (id !== IDS.guild) return error(404, 10004, "Unknown Guild");
        const active = [...channels.values()].filter(
          (c) =>
            c.guild_id === id &&
            isThread(c) &&
            !(c.thread_metadata as { archived?: boolean | undefined }).archived,
        );
        return { status: 200, body: { threads: active.map(publicChannel), members: [] } };
      },
    ],
    [
      "GET",
      patternToRegExp("/guilds/:guild/members/:user"),
      ([guildId = "", userId = ""]) => {
        if (guildId !== IDS.guild) return error(404, 10004, "Unknown Guild");
        const m = members.get(userId);
        return m === undefined ? error(404, 10007, "Unknown Member") : { status: 200, body: m };
      },
    ],
    [
      "GET",
      patternToRegExp("/channels/:channel"),
      ([id = ""]) => {
        const channel = requireChannel(id);
        return isResult(channel) ? channel : { status: 200, body: publicChannel(channel) };
      },
    ],
    [
      "PATCH",
      patternToRegExp("/channels/:channel"),
      ([id = ""], body) => {
        const channel = requireChannel(id);
        if (isResult(channel)) return channel;
        if (isThread(channel)) {
          const meta = channel.thread_metadata as Json;
          if (typeof body.archived === "boolean" && body.archived !== meta.archived) {
            meta.archived = body.archived;
            meta.archive_timestamp = discordTimestamp();
          }
          if (typeof body.locked === "boolean") meta.locked = body.locked;
          if (typeof body.auto_archive_duration === "number")
            meta.auto_archive_duration = body.auto_archive_duration;
          if (typeof body.invitable === "boolean" && channel.type === CHANNEL_TYPES.privateThread) {
            meta.invitable = body.invitable;
          }
          for (const key of ["name", "rate_limit_per_user", "applied_tags", "flags"]) {
            if (body[key] !== undefined) channel[key] = body[key];
          }
        } else {
          for (const key of [
            "name",
            "topic",
            "nsfw",
            "rate_limit_per_user",
            "position",
            "parent_id",
            "flags",
          ]) {
            if (body[key] !== undefined) channel[key] = body[key];
          }
        }
        const updated = publicChannel(channel);
        return {
          status: 200,
          body: updated,
          after: () => broadcast(isThread(channel) ? "THREAD_UPDATE" : "CHANNEL_UPDATE", updated),
        };
      },
    ],
    [
      "DELETE",
      patternToRegExp("/channels/:channel"),
      ([id = ""]) => {
        const channel = requireChannel(id);
        if (isResult(channel)) return channel;
        channels.delete(id);
        const gone = publicChannel(channel);
        return {
          status: 200,
          body: gone,
          after: () =>
            broadcast(
              isThread(channel) ? "THREAD_DELETE" : "CHANNEL_DELETE",
              isThread(channel)
                ? { id, guild_id: channel.guild_id, parent_id: channel.parent_id, type: channel.type }
                : gone,
            ),
        };
      },
    ],
    [
      "GET",
      patternToRegExp("/channels/:channel/messages"),
      ([id = ""], _body, query) => {
        const channel = requireChannel(id);
        if (isResult(channel)) return channel;
        const limit = Math.min(Number(query.get("limit") ?? 50) || 50, 100);
        const list = [...messages.values()]
          .filter((m) => m.channel_id === id)
          .sort((a, b) => (BigInt(String(b.id)) > BigInt(String(a.id)) ? 1 : -1))
          .slice(0, limit)
          .map(stripGatewayFields);
        return { status: 200, body: list };
      },
    ],
    [
      "POST",
      patternToRegExp("/channels/:channel/messages"),
      ([id = ""], body) => {
        const channel = requireChannel(id);
        if (isResult(channel)) return channel;
        if (!SENDABLE_TYPES.has(channel.type)) {
          return error(400, 50008, "Cannot send messages in a non-text channel");
        }
        const unarchived = isThread(channel) && (channel.thread_metadata as Json).archived === true;
        if (unarchived) {
          if ((channel.thread_metadata as Json).locked === true)
            return error(403, 50083, "Thread is archived");
          (channel.thread_metadata as Json).archived = false;
          (channel.thread_metadata as Json).archive_timestamp = discordTimestamp();
        }
        const message = createMessage(channel, body, currentFiles);
        if (isResult(message)) return message;
        return {
          status: 200,
          body: message,
          after() {
            if (unarchived) broadcast("THREAD_UPDATE", publicChannel(channel));
            if (echoOwnMessages) broadcast("MESSAGE_CREATE", messages.get(String(message.id)));
          },
        };
      },
    ],
    [
      "GET",
      patternToRegExp("/channels/:channel/messages/:message"),
      ([channelId = "", messageId = ""]) => {
        const message = messages.get(messageId);
        if (!channels.has(channelId)) return unknownChannel();
        return message === undefined || message.channel_id !== channelId
          ? unknownMessage()
          : { status: 200, body: stripGatewayFields(message) };
      },
    ],
    [
      "PATCH",
      patternToRegExp("/channels/:channel/messages/:message"),
      ([channelId = "", messageId = ""], body) => {
        const message = messages.get(messageId);
        if (!channels.has(channelId)) return unknownChannel();
        if (message === undefined || message.channel_id !== channelId) return unknownMessage();
        if ((message.author as DiscordUserData).id !== IDS.bot) {
          return error(403, 50005, "Cannot edit a message authored by another user");
        }
        for (const key of ["content", "embeds", "components", "flags", "attachments"]) {
          if (body[key] !== undefined) message[key] = body[key];
        }
        if (typeof message.content === "string" && message.content.length > 2000) {
          return invalidForm("content", "BASE_TYPE_MAX_LENGTH", "Must be 2000 or fewer in length.");
        }
        message.edited_timestamp = discordTimestamp();
        if (typeof message.content === "string") message.mentions = mentionsIn(message.content);
        const snapshot = structuredClone(message);
        return {
          status: 200,
          body: stripGatewayFields(snapshot),
          after: () => {
            if (echoOwnMessages) broadcast("MESSAGE_UPDATE", snapshot);
          },
        };
      },
    ],
    [
      "DELETE",
      patternToRegExp("/channels/:channel/messages/:message"),
      ([channelId = "", messageId = ""]) => {
        const message = messages.get(messageId);
        const channel = channels.get(channelId);
        if (channel === undefined) return unknownChannel();
        if (message === undefined || message.channel_id !== channelId) return unknownMessage();
        messages.delete(messageId);
        return {
          status: 204,
          after: () =>
            broadcast("MESSAGE_DELETE", {
              id: messageId,
              channel_id: channelId,
              ...(channel.guild_id === undefined ? {} : { guild_id: channel.guild_id }),
            }),
        };
      },
    ],
    [
      "POST",
      patternToRegExp("/channels/:channel/typing"),
      ([id = ""]) => (channels.has(id) ? { status: 204 } : unknownChannel()),
    ],
    [
      "POST",
      patternToRegExp("/channels/:channel/threads"),
      ([id = ""], body) => {
        const parent = requireChannel(id);
        if (isResult(parent)) return parent;
        const invalid = validThreadName(body);
        if (invalid !== undefined) return invalid;
        if (parent.type === CHANNEL_TYPES.forum) {
          const starter = (body.message ?? {}) as Json;
          const threadData = newThread(parent, String(body.name), threadOptions(body));
          channels.set(threadData.id, threadData);
          const message = createMessage(threadData, starter, currentFiles, threadData.id);
          if (isResult(message)) {
            channels.delete(threadData.id);
            return message;
          }
          return threadCreated(threadData, message);
        }
        if (parent.type !== CHANNEL_TYPES.text && parent.type !== CHANNEL_TYPES.announcement) {
          return error(400, 50024, "Cannot execute action on this channel type");
        }
        const type =
          parent.type === CHANNEL_TYPES.announcement
            ? 10
            : body.type === CHANNEL_TYPES.privateThread
              ? CHANNEL_TYPES.privateThread
              : CHANNEL_TYPES.publicThread;
        return threadCreated(newThread(parent, String(body.name), { ...threadOptions(body), type }));
      },
    ],
    [
      "POST",
      patternToRegExp("/channels/:channel/messages/:message/threads"),
      ([channelId = "", messageId = ""], body) => {
        const parent = requireChannel(channelId);
        if (isResult(parent)) return parent;
        if (parent.type !== CHANNEL_TYPES.text && parent.type !== CHANNEL_TYPES.announcement) {
          return error(400, 50024, "Cannot execute action on this channel type");
        }
        const message = messages.get(messageId);
        if (message === undefined || message.channel_id !== channelId) return unknownMessage();
        if (channels.has(messageId))
          return error(400, 160004, "A thread has already been created for this message");
        const invalid = validThreadName(body);
        if (invalid !== undefined) return invalid;
        const type = parent.type === CHANNEL_TYPES.announcement ? 10 : CHANNEL_TYPES.publicThread;
        return threadCreated(
          newThread(parent, String(body.name), { ...threadOptions(body), type, id: messageId }),
        );
      },
    ],
    [
      "PUT",
      patternToRegExp("/channels/:channel/thread-members/:user"),
      ([id = ""]) => (channels.has(id) ? { status: 204 } : unknownChannel()),
    ],
    [
      "DELETE",
      patternToRegExp("/channels/:channel/thread-members/:user"),
      ([id = ""]) => (channels.has(id) ? { status: 204 } : unknownChannel()),
    ],
    [
      "PUT",
      patternToRegExp("/channels/:channel/messages/:message/reactions/:emoji/@me"),
      ([channelId = "", messageId = ""]) =>
        !channels.has(channelId)
          ? unknownChannel()
          : messages.has(messageId)
            ? { status: 204 }
            : unknownMessage(),
    ],
    [
      "DELETE",
      patternToRegExp("/channels/:channel/messages/:message/reactions/:emoji/@me"),
      ([channelId = "", messageId = ""]) =>
        !channels.has(channelId)
          ? unknownChannel()
          : messages.has(messageId)
            ? { status: 204 }
            : unknownMessage(),
    ],
  ];

  function application(): Json {
    return {
      id: IDS.bot,
      name: "Sessions Test Bot",
      icon: null,
      description: "",
      summary: "",
      type: null,
      bot: botUser,
      bot_public: false,
      bot_require_code_grant: false,
      verify_key: "0".repeat(64),
      flags: 8_945_664,
      owner: alice,
      team: null,
      tags: [],
      approximate_guild_count: 1,
      install_params: null,
      redirect_uris: [],
      interactions_endpoint_url: null,
      role_connections_verification_url: null,
      integration_types_config: {},
    };
  }

  function failureResponse(failure: DiscordFailure): RestResult {
    const status = failure.status ?? 429;
    if (status !== 429) {
      return error(status, failure.code ?? 0, failure.message ?? `${status}: ${defaultMessage(status)}`);
    }
    const seconds = failure.retryAfterSeconds ?? 1;
    const global = failure.global === true;
    const reset = (Date.now() / 1000 + seconds).toFixed(3);
    return {
      status: 429,
      body: {
        message: "You are being rate limited.",
        retry_after: seconds,
        global,
        ...(global ? {} : { code: 0 }),
      },
      headers: {
        "retry-after": String(seconds),
        "x-ratelimit-scope": global ? "global" : "user",
        ...(global
          ? { "x-ratelimit-global": "true" }
          : {
              "x-ratelimit-limit": "5",
              "x-ratelimit-remaining": "0",
              "x-ratelimit-reset": reset,
              "x-ratelimit-reset-after": seconds.toFixed(3),
              "x-ratelimit-bucket": "fake0bucket0hash",
            }),
      },
    };
  }

  function defaultMessage(status: number): string {
    const messagesByStatus: Record<number, string> = {
      400: "Bad Request",
      401: "Unauthorized",
      403: "Forbidden",
      404: "Not Found",
      500: "Internal Server Error",
      502: "Bad Gateway",
      503: "Service Unavailable",
    };
    return messagesByStatus[status] ?? "Error";
  }

  function reply(res: ServerResponse, result: RestResult) {
    if (result.status === 204 || result.body === undefined) {
      res.writeHead(result.status, result.headers ?? {}).end();
    } else {
      res
        .writeHead(result.status, { "content-type": "application/json", ...result.headers })
        .end(JSON.stringify(result.body));
    }
    result.after?.();
  }

  async function readBody(
    req: IncomingMessage,
  ): Promise<{ body: unknown; files?: DiscordCall["files"] | undefined } | { invalid: true }> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks);
    if (raw.length === 0) return { body: undefined };
    const contentType = req.headers["content-type"] ?? "";
    try {
      if (contentType.startsWith("multipart/form-data")) {
        const form = await new Response(raw, { headers: { "content-type": contentType } }).formData();
        const files: NonNullable<DiscordCall["files"]> = [];
        let body: Json = {};
        for (const [field, value] of form.entries()) {
          if (typeof value === "string") {
            if (field === "payload_json") body = { ...body, ...(JSON.parse(value) as Json) };
            else body[field] = value;
          } else {
            files.push({ field, name: value.name, contentType: value.type, size: value.size });
          }
        }
        return { body, files };
      }
      return { body: JSON.parse(raw.toString("utf8")) as unknown };
    } catch {
      return { invalid: true };
    }
  }

  async function onRequest(req: IncomingMessage, res: ServerResponse) {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    const method = (req.method ?? "GET").toUpperCase();
    const versioned = /^\/api\/v\d+(\/.*)$/.exec(url.pathname);
    const path = versioned?.[1] ?? url.pathname;
    const read = await readBody(req);
    const call: DiscordCall = { method, path, body: "invalid" in read ? undefined : read.body };
    if (url.search !== "") call.query = Object.fromEntries(url.searchParams);
    if ("files" in read && read.files !== undefined) call.files = read.files;
    calls.push(call);

    if (versioned === null) {
      reply(res, error(404, 0, "Unknown"));
      return;
    }
    if (path !== "/gateway" && req.headers.authorization !== `Bot ${token}`) {
      reply(res, error(401, 0, "401: Unauthorized"));
      return;
    }
    if ("invalid" in read) {
      reply(res, error(400, 50109, "The request body contains invalid JSON."));
      return;
    }
    const failure = failures.find((f) => f.times > 0 && f.matches(call));
    if (failure !== undefined) {
      failure.times--;
      reply(res, failureResponse(failure.failure));
      return;
    }
    for (const [routeMethod, pattern, handler] of routes) {
      if (routeMethod !== method) continue;
      const match = pattern.exec(path);
      if (match === null) continue;
      const body = typeof call.body === "object" && call.body !== null ? (call.body as Json) : {};
      currentFiles = call.files;
      try {
        reply(res, handler(match.slice(1), body, url.searchParams));
      } finally {
        currentFiles = undefined;
      }
      return;
    }
    reply(res, error(404, 0, "Unknown"));
  }

  const server: Server = createServer((req, res) => {
    onRequest(req, res).catch(() => {
      if (!res.headersSent) reply(res, error(500, 0, "500: Internal Server Error (fake crashed)"));
    });
  });
  const wss = new WebSocketServer({ server, path: "/gateway" });
  wss.on("connection", onGatewayConnection);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  const gatewayUrl = `ws://127.0.0.1:${port}/gateway`;

  function toMatcher(route: DiscordRouteMatcher): (call: DiscordCall) => boolean {
    if (typeof route === "function") return route;
    if (route instanceof RegExp) return (call) => route.test(`${call.method} ${call.path}`);
    const spaced = /^([A-Za-z]+)\s+(\/.*)$/.exec(route);
    const method = spaced?.[1]?.toUpperCase();
    const pattern = patternToRegExp(spaced?.[2] ?? route);
    return (call) => (method === undefined || call.method === method) && pattern.test(call.path);
  }

  return {
    restUrl: `http://127.0.0.1:${port}/api`,
    gatewayUrl,
    token,
    botUser,
    user: alice,
    otherBot,
    guild: { id: IDS.guild, name: guildInfo.name, general, forum, thread },
    dmChannel,
    calls,
    identifies,
    get connections() {
      return connections.size;
    },
    callsOf(method, pathPattern) {
      const upper = method.toUpperCase();
      const pattern = typeof pathPattern === "string" ? patternToRegExp(pathPattern) : pathPattern;
      return calls.filter((c) => c.method === upper && (pattern === undefined || pattern.test(c.path)));
    },
    channel: (id) => channels.get(id),
    dispatch(event, data) {
      learn(event, data);
      return broadcast(event, data);
    },
    failNext(route, times, failure = {}) {
      failures.push({ matches: toMatcher(route), times, failure });
    },
    requestReconnect() {
      for (const connection of connections) connection.send({ op: 7, d: null, s: null, t: null });
    },
    async close() {
      for (const connection of connections) connection.socket.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
