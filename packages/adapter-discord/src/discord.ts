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
import { ChannelType, type Client, Events, type Message, Routes } from "discord.js";
import { createDiscordStream } from "./stream.js";
import { parseDiscordTarget } from "./target.js";

export { parseDiscordTarget } from "./target.js";

/** Discord's cap on one message's content. */
export const DISCORD_MAX_MESSAGE_LENGTH = 2000;

/** Options of `createDiscordAdapter`. */
export interface DiscordAdapterConfig {
  /** Your discord.js client (intents: Guilds, GuildMessages, MessageContent, DirectMessages; partials: Channel). */
  client: Client;
  /** Which bot account this is, for several bots on one gateway (default `default`). */
  accountId?: string | undefined;
  /** Discord user ids allowed to run owner-only commands such as `/send on|off|inherit`. */
  ownerIds?: readonly string[] | undefined;
  /** The agent that answers (default: the gateway's default agent). */
  agentId?: string | undefined;
  /** Show "typing…" while a run is in progress (default true). */
  typing?: boolean | undefined;
  /** Where the adapter reports what it drops (refused inbound messages). Default: quiet. */
  logger?: Logger | undefined;
  /**
   * The least time between two edits of a reply streaming into one channel, in ms (default 1,000). Whether replies
   * stream is the gateway's `channels.discord.streaming` (default `off`, as in OpenClaw).
   */
  streamIntervalMs?: number | undefined;
  /** Auto-archive of threads the adapter creates, in minutes (default 1440). */
  threadAutoArchiveMinutes?: 60 | 1440 | 4320 | 10080 | undefined;
  /**
   * The bot token, for `adapter.connection` (default: the client's, e.g. from `DISCORD_TOKEN`). Given, the
   * client's REST calls use it at once, so a gateway that does not hold the gateway socket still delivers.
   */
  token?: string | undefined;
}

export interface DiscordInbound extends InboundMessage {
  channel: "discord";
}

export interface DiscordAdapter extends ChannelAdapterV1 {
  readonly channel: "discord";
  /** Routes the client's messages into a gateway and reports archived/deleted threads to it. */
  attach(gateway: InboundGateway): void;
  /** The inbound message for one Discord message, or `null` for messages the bot ignores. */
  resolveInbound(message: Message): DiscordInbound | null;
  /**
   * The gateway socket, for `gateway.holdConnection(adapter.connection)` in place of `client.login(token)`: then
   * exactly one gateway of those sharing a store holds it (`discord:<accountId>`), and another logs in when that one
   * dies. Every gateway still delivers over REST. `start` logs in; `stop` closes the socket.
   */
  readonly connection: {
    /** The lease name: `discord:<accountId>`. */
    readonly name: string;
    /**
     * Logs in (`client.login(token)`) and resolves once the client is ready; does nothing when it already is.
     * Throws `SessionsError` `invalid_config` (field `token`) when the adapter has no token to log in with.
     */
    start(): Promise<void>;
    /** Closes the gateway socket (`client.destroy()`); REST delivery keeps working on this gateway. */
    stop(): Promise<void>;
  };
}

function toSessionsError(error: unknown): SessionsError {
  const e = error as {
    status?: number | undefined;
    retryAfter?: number | undefined;
    timeToReset?: number | undefined;
    message?: string | undefined;
    name?: string | undefined;
  };
  // discord.js throws RateLimitError (name "RateLimitError[route]") when the client rejects on rate limits.
  const rateLimited =
    (typeof e?.name === "string" && e.name.startsWith("RateLimitError")) || e?.status === 429;
  if (rateLimited) {
    const ms =
      typeof e.retryAfter === "number"
        ? e.retryAfter
        : typeof e.timeToReset === "number"
          ? e.timeToReset
          : 1000;
    return new SessionsError("rate_limited", `Discord rate limit: ${e.message || "429"}`, {
      retryAfterMs: ms,
      cause: error,
    });
  }
  if (typeof e?.status === "number" && e.status >= 400 && e.status < 500) {
    // Unknown channel, missing access or permissions: retrying will not help.
    return new SessionsError("invalid_params", `Discord refused the message: ${e.message ?? e.status}`, {
      cause: error,
    });
  }
  return new SessionsError("unavailable", `Discord unreachable: ${e?.message ?? String(error)}`, {
    cause: error,
  });
}

/** A sessions channel adapter for a discord.js client: inbound routing, chunked delivery, threads, typing. */
export function createDiscordAdapter(config: DiscordAdapterConfig): DiscordAdapter {
  const { client } = config;
  if (
    client === null ||
    typeof client !== "object" ||
    typeof client.on !== "function" ||
    client.channels === undefined
  ) {
    throw new SessionsError("invalid_config", "createDiscordAdapter: client must be a discord.js Client", {
      field: "client",
    });
  }
  const accountId = config.accountId ?? "default";
  const logger = (config.logger ?? silentLogger).child("discord");
  if (client.options.rest?.rejectOnRateLimit === undefined) {
    logger.warn(
      "discord.js waits out rate limits itself; pass rest: { rejectOnRateLimit: () => true } so the outbox retries at retryAfterMs",
    );
  }
  const owners = new Set((config.ownerIds ?? []).map(String));
  const token = config.token ?? client.token ?? undefined;
  if (config.token !== undefined) client.rest.setToken(config.token);
  const sendChunks = createChunkSender(toSessionsError);

  function resolveInbound(message: Message): DiscordInbound | null {
    if (message.author.bot || message.author.id === client.user?.id || message.system) return null;
    const text = message.content;
    if (typeof text !== "string" || text.trim() === "") return null;
    const channel = message.channel;
    const base = {
      channel: "discord" as const,
      accountId,
      senderId: message.author.id,
      senderName: message.member?.displayName ?? message.author.globalName ?? message.author.username,
      isOwner: owners.has(message.author.id),
      text,
      messageId: message.id,
      ...(config.agentId === undefined ? {} : { agentId: config.agentId }),
    };
    if (channel.type === ChannelType.DM) {
      return {
        ...base,
        chatType: "direct",
        peerId: message.author.id,
        to: `user:${message.author.id}`,
        displayName: message.author.username,
      };
    }
    if (channel.type === ChannelType.GroupDM) {
      return {
        ...base,
        chatType: "group",
        peerId: channel.id,
        to: `channel:${channel.id}`,
        ...(channel.name ? { displayName: channel.name } : {}),
      };
    }
    const guildName = message.guild?.name;
    if (channel.isThread()) {
      const parentId = channel.parentId ?? channel.id;
      return {
        ...base,
        chatType: "channel",
        peerId: parentId,
        threadId: channel.id,
        threadKind: "thread",
        parentId,
        to: `channel:${parentId}`,
        displayName: `${guildName ? `${guildName} ` : ""}#${channel.parent?.name ?? "thread"} › ${channel.name}`,
      };
    }
    return {
      ...base,
      chatType: "channel",
      peerId: channel.id,
      to: `channel:${channel.id}`,
      displayName: `${guildName ? `${guildName} ` : ""}#${"name" in channel && channel.name ? channel.name : channel.id}`,
    };
  }

  function restTarget(channelId: string) {
    return {
      async send(body: { content: string; allowedMentions: { parse: [] } }): Promise<{ id: string }> {
        const posted = (await client.rest.post(Routes.channelMessages(channelId), {
          body: { content: body.content, allowed_mentions: body.allowedMentions },
        })) as { id: string };
        return { id: posted.id };
      },
      async sendTyping(): Promise<void> {
        await client.rest.post(Routes.channelTyping(channelId));
      },
    };
  }

  async function textTarget(target: DeliveryTarget) {
    const { kind, id } = parseDiscordTarget(target.to);
    if (kind === "user") return client.users.createDM(id);
    // A gateway that does not hold the socket has no guild cache (discord.js cannot type a guild channel
    // without its guild): it posts over REST alone.
    if (!client.isReady()) return restTarget(target.threadId ?? id);
    const channel = await client.channels.fetch(target.threadId ?? id);
    if (channel === null || !channel.isSendable()) {
      throw new SessionsError(
        "invalid_params",
        `Discord channel ${target.threadId ?? id} cannot receive messages`,
        {
          field: "to",
        },
      );
    }
    return channel;
  }

  async function deliver(
    target: DeliveryTarget,
    message: OutboundMessage,
    options: { idempotencyKey: string },
  ): Promise<DeliveryReceipt> {
    const chunks = chunkMessage(message.text, DISCORD_MAX_MESSAGE_LENGTH);
    return sendChunks(options.idempotencyKey, chunks, async () => {
      const channel = await textTarget(target);
      // No mention parsing: model output must never ping @everyone or roles.
      return async (chunk) => (await channel.send({ content: chunk, allowedMentions: { parse: [] } })).id;
    });
  }

  const adapter: DiscordAdapter = {
    specVersion: 1,
    channel: "discord",
    capabilities: {
      threads: true,
      typing: config.typing !== false,
      maxMessageLength: DISCORD_MAX_MESSAGE_LENGTH,
    },
    deliver,
    stream: createDiscordStream({
      client,
      intervalMs: config.streamIntervalMs ?? 1000,
      defaultMode: "off",
      maxMessageLength: DISCORD_MAX_MESSAGE_LENGTH,
      toError: toSessionsError,
    }),
    async createThread(request) {
      const { id } = parseDiscordTarget(request.parent.to);
      try {
        // Spawned from inside a thread or forum post: the new thread goes under the same parent channel.
        const fetched = await client.channels.fetch(request.parent.threadId ?? id);
        const parent = fetched?.isThread() ? fetched.parent : fetched;
        if (
          parent === null ||
          parent === undefined ||
          (parent.type !== ChannelType.GuildText && parent.type !== ChannelType.GuildAnnouncement)
        ) {
          throw new SessionsError(
            "invalid_params",
            `Discord channel ${parent?.id ?? id} cannot hold threads`,
            {
              field: "to",
            },
          );
        }
        const thread = await parent.threads.create({
          name: request.name.slice(0, 100) || "sub-agent",
          autoArchiveDuration: config.threadAutoArchiveMinutes ?? 1440,
        });
        await thread.send({
          content: `Working on this here (session \`${request.sessionKey}\`).`,
          allowedMentions: { parse: [] },
        });
        return { threadId: thread.id, to: `channel:${parent.id}` };
      } catch (error) {
        throw SessionsError.isInstance(error) ? error : toSessionsError(error);
      }
    },
    async sendTyping(target) {
      const channel = await textTarget(target).catch(() => undefined);
      await channel?.sendTyping().catch(() => undefined);
    },
    resolveInbound,
    connection: {
      name: `discord:${accountId}`,
      async start() {
        if (client.isReady()) return;
        if (token === undefined) {
          throw new SessionsError("invalid_config", "createDiscordAdapter: connection needs a token", {
            field: "token",
          });
        }
        const ready = new Promise<void>((resolve) => client.once(Events.ClientReady, () => resolve()));
        await client.login(token);
        await ready;
      },
      async stop() {
        await client.destroy();
        // destroy() forgets the token: REST delivery keeps working on this gateway.
        if (token !== undefined) client.rest.setToken(token);
      },
    },
    attach(gateway) {
      client.on(Events.MessageCreate, async (message) => {
        const inbound = resolveInbound(message);
        if (inbound === null) return;
        // Discord shows "typing" for about ten seconds.
        await routeInbound(gateway, inbound, {
          logger,
          typing: config.typing !== false,
          sendTyping: adapter.sendTyping,
          typingIntervalMs: 8000,
        });
      });
      const closed = (threadId: string) =>
        void gateway.threadClosed?.({ channel: "discord", accountId, threadId }).catch(() => false);
      client.on(Events.ThreadUpdate, (_old, thread) => {
        if (thread.archived) closed(thread.id);
      });
      client.on(Events.ThreadDelete, (thread) => closed(thread.id));
      // A thread the bot deletes itself arrives as a channel delete.
      client.on(Events.ChannelDelete, (channel) => {
        // discord.js types this event as non-thread channels, but it carries threads the bot deleted.
        const deleted = channel as { id: string; isThread(): boolean };
        if (deleted.isThread()) closed(deleted.id);
      });
    },
  };
  return adapter;
}
