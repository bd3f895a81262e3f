// Discord's wire vocabulary for the fake: ids, intents, channel types, permission bits, raw users and members,
// route patterns and REST error bodies (Discord's JSON error shape and its 429 headers).
import type { DiscordFailure, DiscordUserData } from "./types.js";

export const IDS = {
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

export const INTENTS = { Guilds: 1, GuildMessages: 1 << 9, DirectMessages: 1 << 12, MessageContent: 1 << 15 };
export const GUILD_EVENTS = /^(GUILD_|CHANNEL_|THREAD_)/;
export const MESSAGE_EVENTS = new Set([
  "MESSAGE_CREATE",
  "MESSAGE_UPDATE",
  "MESSAGE_DELETE",
  "MESSAGE_DELETE_BULK",
]);

export const CHANNEL_TYPES = {
  text: 0,
  dm: 1,
  category: 4,
  announcement: 5,
  publicThread: 11,
  privateThread: 12,
  forum: 15,
};
export const THREAD_TYPES = new Set([10, 11, 12]);
export const SENDABLE_TYPES = new Set([0, 1, 2, 3, 5, 10, 11, 12, 13]);

function bit(n: number): bigint {
  return 1n << BigInt(n);
}
// ViewChannel, SendMessages, ManageMessages, EmbedLinks, AttachFiles, ReadMessageHistory, AddReactions,
// ManageThreads, CreatePublicThreads, CreatePrivateThreads, SendMessagesInThreads.
export const BOT_PERMISSIONS = [10, 11, 13, 14, 15, 16, 6, 34, 35, 36, 38]
  .reduce((acc, n) => acc | bit(n), 0n)
  .toString();
export const EVERYONE_PERMISSIONS = "2248473465835073";

export function user(
  id: string,
  username: string,
  globalName: string | null,
  discriminator = "0",
): DiscordUserData {
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

export function member(
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

export function patternToRegExp(pattern: string): RegExp {
  const source = pattern
    .split(/(:[A-Za-z_]\w*)/)
    .map((part) => (part.startsWith(":") ? "([^/]+)" : part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")))
    .join("");
  return new RegExp(`^${source}$`);
}

export type Json = Record<string, unknown>;
export interface RestResult {
  status: number;
  body?: unknown;
  headers?: Record<string, string> | undefined;
  /** Runs after the response is written (gateway events caused by the call). */
  after?: (() => void) | undefined;
}
/** A REST route: the path's `:params`, the JSON body, the query and the uploaded files of a multipart request. */
export type RouteHandler = (
  ids: string[],
  body: Json,
  query: URLSearchParams,
  files: { field: string; name: string; contentType: string; size: number }[] | undefined,
) => RestResult;
export type Route = [method: string, pattern: RegExp, handler: RouteHandler];

export function error(status: number, code: number, message: string, extra: Json = {}): RestResult {
  return { status, body: { message, code, ...extra } };
}
export const unknownChannel = () => error(404, 10003, "Unknown Channel");
export const unknownMessage = () => error(404, 10008, "Unknown Message");
export const invalidForm = (field: string, code: string, message: string) =>
  error(400, 50035, "Invalid Form Body", { errors: { [field]: { _errors: [{ code, message }] } } });

export function isResult(value: unknown): value is RestResult {
  return typeof value === "object" && value !== null && "status" in value && !("id" in value);
}

/** The response `failNext` answers with: Discord's 429 body and headers, or its JSON error. */
export function failureResponse(failure: DiscordFailure): RestResult {
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
