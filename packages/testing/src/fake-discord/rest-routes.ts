// The fake Discord's REST routes for the gateway lookup, users, the application, the guild and channels (reads,
// edits, deletes). Messages, threads and reactions are in rest-messages.ts.

import { discordSnowflake, discordTimestamp } from "../discord-fixtures.js";
import { application } from "./guild-data.js";
import type { DiscordState } from "./state.js";
import type { DiscordChannelData, DiscordUserData } from "./types.js";
import {
  CHANNEL_TYPES,
  error,
  IDS,
  invalidForm,
  isResult,
  type Json,
  patternToRegExp,
  type Route,
} from "./wire.js";

/** What the REST routes need besides the state: the gateway to dispatch to, and the fake's options. */
export interface DiscordRestContext {
  broadcast(event: string, data: unknown): number;
  echoOwnMessages: boolean;
  gatewayUrl: string;
}

export function discordRestRoutes(state: DiscordState, context: DiscordRestContext): Route[] {
  const {
    channels,
    users,
    members,
    roles,
    guildInfo,
    botUser,
    alice,
    isThread,
    requireChannel,
    publicChannel,
  } = state;
  const { broadcast, gatewayUrl } = context;
  return [
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
    ["GET", patternToRegExp("/applications/@me"), () => ({ status: 200, body: application(botUser, alice) })],
    [
      "GET",
      patternToRegExp("/oauth2/applications/@me"),
      () => ({ status: 200, body: application(botUser, alice) }),
    ],
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
  ];
}
