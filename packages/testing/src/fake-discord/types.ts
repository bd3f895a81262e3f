// The public shape of the fake Discord: what tests read and call.

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
  /** The HTTP status the fake answered with. */
  status?: number | undefined;
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
   * The messages of a channel or thread as it shows them now, oldest first: edits applied (`edited` once one was),
   * deleted ones gone. The bot's sends and the messages the fake dispatched or learnt.
   */
  messages(channelId: string): { id: string; authorId: string; content: string; edited: boolean }[];
  /**
   * Sends a DISPATCH (op 0, `t` = `event`, increasing `s`) to every identified connection whose intents cover it
   * (message events need GuildMessages or DirectMessages; without MessageContent, guild messages lose their content
   * unless they mention the bot). The fake also learns from it (threads, channels, messages, DM channels).
   * Returns how many connections it was sent to.
   */
  dispatch(event: string, data: unknown): number;
  /**
   * Makes the next `times` matching REST calls fail (default: 429, retry after 1 s, per-route bucket), after
   * letting `after` matching calls through (default 0).
   */
  failNext(
    route: DiscordRouteMatcher,
    times: number,
    failure?: DiscordFailure,
    options?: { after?: number | undefined },
  ): void;
  /** Sends op 7 RECONNECT to every connection; discord.js reconnects and RESUMEs (RESUMED is sent back). */
  requestReconnect(): void;
  /** Stops both servers and closes every connection. */
  close(): Promise<void>;
}
