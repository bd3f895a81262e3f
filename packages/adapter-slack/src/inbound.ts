import type { InboundMessage } from "@sessions/core";
import { unescapeMrkdwn } from "./mrkdwn.js";

/** Slack's `channel_type`: public channel, private channel, DM, multi-person DM. */
export type SlackChannelType = "channel" | "group" | "im" | "mpim";

/** The fields of a Slack `message` / `app_mention` event the adapter reads. */
export interface SlackMessageEvent {
  type: string;
  subtype?: string | undefined;
  channel?: string | undefined;
  channel_type?: string | undefined;
  user?: string | undefined;
  bot_id?: string | undefined;
  text?: string | undefined;
  ts?: string | undefined;
  thread_ts?: string | undefined;
  hidden?: boolean | undefined;
}

/** A Slack message as the gateway receives it: `accountId` is the workspace (team) id. */
export interface SlackInbound extends InboundMessage {
  channel: "slack";
  accountId: string;
}

/**
 * What `resolveSlackMessage` (and `adapter.resolveInbound`) needs to know besides the event: where it came from,
 * who the bot is, and the adapter's settings. The adapter fills it from bolt's event context and its own config.
 */
export interface ResolveContext {
  /** The workspace the event came from. */
  teamId: string;
  /** The bot's user id in that workspace (mentions, own messages). */
  botUserId?: string | undefined;
  /** `im` (direct message), `mpim` (group DM), `channel` or `group` (private channel): decides the chat type. */
  channelType: SlackChannelType;
  /** The event was an `app_mention`. */
  viaAppMention?: boolean | undefined;
  /** The message is in a thread the bot opened or was mentioned in: no mention needed there. */
  threadEngaged?: boolean | undefined;
  /** Outside DMs, only messages that mention the bot are answered (the adapter's `requireMention`). */
  requireMention: boolean;
  /** Slack user ids whose messages carry `isOwner` (owner-only commands such as `/send`). */
  owners: ReadonlySet<string>;
  /** The agent that answers (default: the gateway's default agent). */
  agentId?: string | undefined;
  /** The sender's display name (from `users.info`), for the session's display name. */
  senderName?: string | undefined;
  /** The channel's name (from `conversations.info`), for the session's display name. */
  conversationName?: string | undefined;
  /** The workspace's name, for the session's display name. */
  teamName?: string | undefined;
}

/** Message subtypes that are people writing; everything else (edits, joins, deletions, bot posts) is ignored. */
const HANDLED_SUBTYPES = new Set(["file_share", "thread_broadcast"]);

/** Why a message is not handed to the gateway before anything is looked up, or `undefined` when it may be. */
export function ignoredReason(event: SlackMessageEvent, botUserId?: string): string | undefined {
  if (event.type !== "message" && event.type !== "app_mention") return `event type ${event.type}`;
  if (event.subtype !== undefined && !HANDLED_SUBTYPES.has(event.subtype)) return `subtype ${event.subtype}`;
  if (event.hidden === true) return "hidden message";
  if (event.bot_id !== undefined) return "a bot's message";
  if (typeof event.user !== "string" || event.user === "") return "no sender";
  if (botUserId !== undefined && event.user === botUserId) return "the bot's own message";
  if (typeof event.channel !== "string" || event.channel === "") return "no channel";
  if (typeof event.ts !== "string" || event.ts === "") return "no ts";
  return undefined;
}

/** `<@U123>` or `<@U123|name>` for the given user. */
function mentionPattern(userId: string): RegExp {
  return new RegExp(`<@${userId.replace(/[^A-Za-z0-9]/g, "")}(?:\\|[^>]*)?>`, "g");
}

/** The thread a message belongs to (`thread_ts`), not counting a thread's own root message. */
export function threadOf(event: SlackMessageEvent): string | undefined {
  return typeof event.thread_ts === "string" && event.thread_ts !== "" && event.thread_ts !== event.ts
    ? event.thread_ts
    : undefined;
}

/** The chat type the key model uses for a Slack conversation. */
export function chatTypeOf(channelType: SlackChannelType): InboundMessage["chatType"] {
  if (channelType === "im") return "direct";
  if (channelType === "mpim") return "group";
  return "channel";
}

/**
 * The inbound message for one Slack message, or why it is ignored. Channels (public and private) are
 * `channel`, multi-person DMs `group`, DMs `direct`; a thread reply carries the thread's `thread_ts` as its
 * `threadId`. In channels and multi-person DMs with `requireMention`, only messages that mention the bot (or
 * continue a thread it is engaged in) pass; the mention itself is removed from the text.
 */
export function resolveSlackMessage(
  event: SlackMessageEvent,
  ctx: ResolveContext,
): { inbound: SlackInbound; mentioned: boolean } | { ignored: string } {
  const reason = ignoredReason(event, ctx.botUserId);
  if (reason !== undefined) return { ignored: reason };
  const channel = event.channel as string;
  const user = event.user as string;
  const ts = event.ts as string;
  const raw = typeof event.text === "string" ? event.text : "";
  const mention = ctx.botUserId === undefined ? undefined : mentionPattern(ctx.botUserId);
  const mentioned = ctx.viaAppMention === true || mention?.test(raw) === true;
  const threadId = threadOf(event);
  const gated = ctx.requireMention && ctx.channelType !== "im";
  if (gated && !mentioned && !(threadId !== undefined && ctx.threadEngaged === true)) {
    return { ignored: "not mentioned" };
  }
  const stripped = mention === undefined ? raw : raw.replace(mentionPattern(ctx.botUserId as string), " ");
  const text = unescapeMrkdwn(stripped.replace(/[ \t]{2,}/g, " ")).trim();
  if (text === "") return { ignored: "no text" };
  const chatType = chatTypeOf(ctx.channelType);
  const displayName =
    chatType === "direct"
      ? (ctx.senderName ?? user)
      : chatType === "group"
        ? (ctx.conversationName ?? "group DM")
        : `${ctx.teamName === undefined ? "" : `${ctx.teamName} `}#${ctx.conversationName ?? channel}`;
  const inbound: SlackInbound = {
    channel: "slack",
    accountId: ctx.teamId,
    chatType,
    peerId: chatType === "direct" ? user : channel,
    senderId: user,
    isOwner: ctx.owners.has(user),
    to: `channel:${channel}`,
    text,
    messageId: `${channel}:${ts}`,
    displayName,
    ...(ctx.senderName === undefined ? {} : { senderName: ctx.senderName }),
    ...(threadId === undefined ? {} : { threadId, threadKind: "thread" as const, parentId: channel }),
    ...(ctx.agentId === undefined ? {} : { agentId: ctx.agentId }),
  };
  return { inbound, mentioned };
}
