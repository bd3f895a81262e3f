import {
  type ChannelAdapterV1,
  chunkMessage,
  createChunkSender,
  type DeliveryReceipt,
  type DeliveryTarget,
  type InboundGateway,
  type InboundMessage,
  type Logger,
  type OutboundMessage,
  routeInbound,
  SessionsError,
  silentLogger,
} from "@sessions/core";
import type { Bot, Context } from "grammy";
import type { Message } from "grammy/types";
import { createTelegramStream } from "./stream.js";

/** Telegram's cap on one message's text. */
export const TELEGRAM_MAX_MESSAGE_LENGTH = 4096;
/** The General topic of a forum: messages to it are sent without `message_thread_id`. */
export const GENERAL_TOPIC_ID = 1;

/** Options of `createTelegramAdapter`. */
export interface TelegramAdapterConfig {
  /** Your grammY bot (point `client.apiRoot` at a fake server in tests). */
  bot: Bot;
  /** Which bot account this is, for several bots on one gateway (default `default`). */
  accountId?: string | undefined;
  /** Telegram user ids allowed to run owner-only commands such as `/send on|off|inherit`. */
  ownerIds?: readonly (number | string)[] | undefined;
  /** The agent that answers (default: the gateway's default agent). */
  agentId?: string | undefined;
  /** Show "typing…" while a run is in progress (default true). */
  typing?: boolean | undefined;
  /** Where the adapter reports what it drops (refused inbound messages). Default: quiet. */
  logger?: Logger | undefined;
  /**
   * The least time between two updates of a reply streaming into one chat, in ms (default 1,000). Whether replies
   * stream is the gateway's `channels.telegram.streaming` (default `partial`, as in OpenClaw).
   */
  streamIntervalMs?: number | undefined;
  /** Stream into private chats as drafts (`sendMessageDraft`) rather than an edited message (default true). */
  streamDrafts?: boolean | undefined;
}

/** The facts the adapter reads from a Telegram message before handing it to the gateway. */
export interface TelegramInbound extends InboundMessage {
  channel: "telegram";
}

export interface TelegramAdapter extends ChannelAdapterV1 {
  readonly channel: "telegram";
  /** Routes the bot's messages into a gateway (`gateway.receive`) and registers the adapter's delivery side. */
  attach(gateway: InboundGateway): void;
  /** The inbound message for one Telegram message, or `null` for messages the bot ignores. */
  resolveInbound(message: Message): TelegramInbound | null;
  /**
   * The bot's long polling, for `gateway.holdConnection(adapter.connection)` in place of `bot.start()`: then
   * exactly one gateway of those sharing a store polls (`telegram:<bot id>`), and another takes over when it dies.
   * `start` resolves once polling runs; `stop` ends it (confirming the updates handled so far to Telegram). When
   * polling stops by itself (grammY gives up on `409 Conflict`, another poller on this token, and on
   * `401 Unauthorized`, a revoked token), it is logged and reported to `lost`: the gateway then gives the lease back.
   */
  readonly connection: {
    /** The lease name: `telegram:<bot id>`. */
    readonly name: string;
    /**
     * Starts long polling (`bot.start()`); resolves once it runs, rejects when the Bot API refuses the token.
     * `lost(error)` is called if polling later stops by itself (409 Conflict, 401 Unauthorized, a middleware error).
     */
    start(lost?: (error: unknown) => void): Promise<void>;
    /** Stops long polling (`bot.stop()`), confirming the updates handled so far. */
    stop(): Promise<void>;
  };
}

function displayName(message: Message): string | undefined {
  const chat = message.chat;
  if (chat.type === "private")
    return [chat.first_name, chat.last_name].filter(Boolean).join(" ") || undefined;
  return chat.title;
}

/**
 * `to` as the gateway stores it may carry a peer-kind prefix (`group:-100…` from a key-derived announce target);
 * Telegram only wants the numeric chat id (or a public `@username`).
 * @throws SessionsError `invalid_params` (field `to`) for anything else.
 */
export function telegramChatId(to: string): string {
  const id = String(to ?? "")
    .trim()
    .replace(/^(group|channel|chat|user):/, "");
  if (!/^(-?\d+|@[A-Za-z]\w{3,31})$/.test(id)) {
    throw new SessionsError("invalid_params", `Not a Telegram chat id: ${JSON.stringify(to)}`, {
      field: "to",
    });
  }
  return id;
}

function toSessionsError(error: unknown): SessionsError {
  const e = error as {
    error_code?: number | undefined;
    description?: string | undefined;
    parameters?: { retry_after?: number | undefined } | undefined;
    message?: string | undefined;
  };
  if (typeof e?.error_code === "number") {
    if (e.error_code === 429) {
      const seconds = e.parameters?.retry_after ?? 1;
      return new SessionsError("rate_limited", `Telegram rate limit: ${e.description ?? "429"}`, {
        retryAfterMs: seconds * 1000,
        cause: error,
      });
    }
    if (e.error_code >= 400 && e.error_code < 500) {
      // Chat not found, bot blocked, bad request: retrying will not help.
      return new SessionsError(
        "invalid_params",
        `Telegram refused the message: ${e.description ?? e.error_code}`,
        {
          cause: error,
        },
      );
    }
  }
  return new SessionsError("unavailable", `Telegram unreachable: ${e?.message ?? String(error)}`, {
    cause: error,
  });
}

/** A sessions channel adapter for a grammY bot: inbound routing, chunked delivery, forum topics, typing. */
export function createTelegramAdapter(config: TelegramAdapterConfig): TelegramAdapter {
  const { bot } = config;
  if (bot === null || typeof bot !== "object" || typeof bot.api?.sendMessage !== "function") {
    throw new SessionsError("invalid_config", "createTelegramAdapter: bot must be a grammY Bot", {
      field: "bot",
    });
  }
  const accountId = config.accountId ?? "default";
  const logger = (config.logger ?? silentLogger).child("telegram");
  const owners = new Set((config.ownerIds ?? []).map(String));
  // Chunks already sent per idempotency key, so an outbox retry after a partial failure does not repeat them.
  const sendChunks = createChunkSender(toSessionsError);

  function resolveInbound(message: Message): TelegramInbound | null {
    const text = message.text ?? message.caption;
    if (text === undefined || message.from === undefined) return null;
    if (message.from.is_bot) return null;
    const chat = message.chat;
    const isForumTopic =
      chat.type === "supergroup" && chat.is_forum === true && message.is_topic_message === true;
    const threadId =
      isForumTopic && message.message_thread_id !== undefined ? String(message.message_thread_id) : undefined;
    const inbound: TelegramInbound = {
      channel: "telegram",
      accountId,
      chatType: chat.type === "private" ? "direct" : chat.type === "channel" ? "channel" : "group",
      peerId: chat.type === "private" ? String(message.from.id) : String(chat.id),
      senderId: String(message.from.id),
      senderName: [message.from.first_name, message.from.last_name].filter(Boolean).join(" "),
      isOwner: owners.has(String(message.from.id)),
      to: String(chat.id),
      text,
      messageId: `${chat.id}:${message.message_id}`,
      ...(threadId === undefined
        ? {}
        : { threadId, threadKind: "topic" as const, parentId: String(chat.id) }),
      ...(displayName(message) === undefined ? {} : { displayName: displayName(message) as string }),
      ...(config.agentId === undefined ? {} : { agentId: config.agentId }),
    };
    return inbound;
  }

  function threadOptions(threadId: string | undefined): { message_thread_id?: number } {
    if (threadId === undefined) return {};
    const id = Number(threadId);
    return Number.isInteger(id) && id !== GENERAL_TOPIC_ID ? { message_thread_id: id } : {};
  }

  async function deliver(
    target: DeliveryTarget,
    message: OutboundMessage,
    options: { idempotencyKey: string },
  ): Promise<DeliveryReceipt> {
    const chatId = telegramChatId(target.to);
    const chunks = chunkMessage(message.text, TELEGRAM_MAX_MESSAGE_LENGTH);
    // Plain text (no parse_mode): model output can never break Telegram's Markdown parser.
    return sendChunks(options.idempotencyKey, chunks, () => async (chunk) => {
      const sent = await bot.api.sendMessage(chatId, chunk, {
        ...threadOptions(target.threadId),
        link_preview_options: { is_disabled: true },
      });
      return String(sent.message_id);
    });
  }

  const adapter: TelegramAdapter = {
    specVersion: 1,
    channel: "telegram",
    aliases: ["tg"],
    capabilities: {
      threads: true,
      typing: config.typing !== false,
      maxMessageLength: TELEGRAM_MAX_MESSAGE_LENGTH,
    },
    deliver,
    stream: createTelegramStream({
      bot,
      intervalMs: config.streamIntervalMs ?? 1000,
      defaultMode: "partial",
      maxMessageLength: TELEGRAM_MAX_MESSAGE_LENGTH,
      drafts: config.streamDrafts !== false,
      chatId: telegramChatId,
      threadOptions,
      toError: toSessionsError,
    }),
    async createThread(request) {
      const chatId = telegramChatId(request.parent.to);
      const current = threadOptions(request.parent.threadId).message_thread_id;
      try {
        // Spawned from inside a forum topic: the sub-agent takes over that topic instead of opening another.
        if (current !== undefined) {
          await bot.api.sendMessage(chatId, `Working on this here (session ${request.sessionKey}).`, {
            message_thread_id: current,
          });
          return { threadId: String(current), to: chatId };
        }
        const topic = await bot.api.createForumTopic(chatId, request.name.slice(0, 128) || "sub-agent");
        await bot.api.sendMessage(chatId, `Working on this here (session ${request.sessionKey}).`, {
          message_thread_id: topic.message_thread_id,
        });
        return { threadId: String(topic.message_thread_id), to: chatId };
      } catch (error) {
        throw toSessionsError(error);
      }
    },
    async sendTyping(target) {
      try {
        await bot.api.sendChatAction(telegramChatId(target.to), "typing", threadOptions(target.threadId));
      } catch {
        // "typing…" is best effort.
      }
    },
    resolveInbound,
    connection: {
      // One poller per bot is what Telegram allows: the bot id (the token's first part) names the lease.
      name: `telegram:${String(bot.token ?? "").split(":")[0] || accountId}`,
      start: (lost) =>
        new Promise<void>((resolve, reject) => {
          // Started by the app already (grammY ignores a second start, and would never call onStart).
          if (bot.isRunning()) return resolve();
          let running = false;
          bot
            .start({
              onStart: () => {
                running = true;
                resolve();
              },
            })
            .catch((error: unknown) => {
              if (!running) return reject(error);
              // grammY stops polling for good on 409 (another getUpdates on this token) and 401 (token revoked).
              logger.error("telegram polling stopped", { error: String(error) });
              lost?.(error);
            });
        }),
      stop: () => bot.stop(),
    },
    attach(gateway) {
      // Channel posts have no sender to answer and replies would broadcast to every subscriber: not handled.
      bot.on(["channel_post", "edited_channel_post"], (ctx: Context) => {
        const post = ctx.channelPost ?? ctx.editedChannelPost;
        logger.info("ignoring a channel post: channels are not handled", {
          chatId: post?.chat.id,
          messageId: post?.message_id,
        });
      });
      bot.on("message", async (ctx: Context) => {
        const message = ctx.message;
        if (message === undefined) return;
        const inbound = resolveInbound(message);
        if (inbound === null) return;
        // Telegram shows "typing" for about five seconds.
        await routeInbound(gateway, inbound, {
          logger,
          typing: config.typing !== false,
          sendTyping: adapter.sendTyping,
          typingIntervalMs: 4500,
        });
      });
    },
  };
  return adapter;
}
