// The fake Discord's REST routes for messages (list, send, fetch, edit, delete), typing, threads (in a channel, on
// a message, forum posts), thread members and reactions.

import { discordTimestamp } from "../discord-fixtures.js";
import type { DiscordRestContext } from "./rest-routes.js";
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
  type RestResult,
  type Route,
  SENDABLE_TYPES,
  unknownChannel,
  unknownMessage,
} from "./wire.js";

export function discordMessageRoutes(state: DiscordState, context: DiscordRestContext): Route[] {
  const {
    channels,
    messages,
    newThread,
    isThread,
    createMessage,
    stripGatewayFields,
    mentionsIn,
    requireChannel,
    publicChannel,
  } = state;
  const { broadcast, echoOwnMessages } = context;

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
  return [
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
      ([id = ""], body, _query, files) => {
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
        const message = createMessage(channel, body, files);
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
        // Refused before anything changes: a message Discord refused to edit keeps its content.
        if (typeof body.content === "string" && body.content.length > 2000) {
          return invalidForm("content", "BASE_TYPE_MAX_LENGTH", "Must be 2000 or fewer in length.");
        }
        for (const key of ["content", "embeds", "components", "flags", "attachments"]) {
          if (body[key] !== undefined) message[key] = body[key];
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
      ([id = ""], body, _query, files) => {
        const parent = requireChannel(id);
        if (isResult(parent)) return parent;
        const invalid = validThreadName(body);
        if (invalid !== undefined) return invalid;
        if (parent.type === CHANNEL_TYPES.forum) {
          const starter = (body.message ?? {}) as Json;
          const threadData = newThread(parent, String(body.name), threadOptions(body));
          channels.set(threadData.id, threadData);
          const message = createMessage(threadData, starter, files, threadData.id);
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
}
