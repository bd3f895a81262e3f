import {
  type ChannelAdapterV1,
  createChunkSender,
  type DeliveryReceipt,
  type DeliveryTarget,
  type InboundGateway,
  type Logger,
  normalizeAccountId,
  type OutboundMessage,
  routeInbound,
  SessionsError,
  silentLogger,
} from "@sessions/core";
import type { App } from "@slack/bolt";
import { toSessionsError } from "./errors.js";
import {
  ignoredReason,
  type ResolveContext,
  resolveSlackMessage,
  type SlackChannelType,
  type SlackMessageEvent,
  threadOf,
} from "./inbound.js";
import { escapeMrkdwn } from "./mrkdwn.js";
import { SLACK_MAX_MESSAGE_LENGTH, splitForSlack } from "./split.js";
import { createSlackStream } from "./stream.js";
import { BoundedSet, MessagesInProgress } from "./threads.js";
import { type SlackBotToken, type SlackWorkspace, SlackWorkspaces } from "./workspaces.js";

/** What {@link createSlackAdapter} needs: your bolt `App` and how the bot behaves in channels. */
export interface SlackAdapterConfig {
  /** Your bolt `App`, in Socket Mode (`socketMode: true, appToken`) or HTTP mode (`signingSecret`). */
  app: App;
  /**
   * The bot token deliveries use per workspace: one token, or `(teamId) => token` for an app installed in several
   * workspaces (OAuth). Default: the app's own `token`. Tokens bolt authorised inbound events with are used too.
   */
  botToken?: SlackBotToken | undefined;
  /** Slack user ids allowed to run owner-only commands such as `/send on|off|inherit`. */
  ownerIds?: readonly string[] | undefined;
  /** The agent that answers (default: the gateway's default agent). */
  agentId?: string | undefined;
  /**
   * In channels and multi-person DMs, answer only messages that mention the bot (default true). Threads the bot
   * opened or was mentioned in continue without a mention. DMs never need one.
   */
  requireMention?: boolean | undefined;
  /** Look up channel and people names for session display names (`conversations.info`, `users.info`; default true). */
  lookupNames?: boolean | undefined;
  /** Where the adapter reports what it drops (ignored and refused messages). Default: quiet. */
  logger?: Logger | undefined;
  /**
   * The least time between two updates of a reply streaming into one conversation, in ms (default 1,000). Whether
   * replies stream is the gateway's `channels.slack.streaming` (default `partial`, as in OpenClaw).
   */
  streamIntervalMs?: number | undefined;
}

/** The adapter {@link createSlackAdapter} returns: a `ChannelAdapterV1` for the gateway plus `attach`. */
export interface SlackAdapter extends ChannelAdapterV1 {
  readonly channel: "slack";
  /** Routes the app's message and `app_mention` events into a gateway and reports archived channels to it. */
  attach(gateway: InboundGateway): void;
  /** The inbound message for one Slack message event, or why it is ignored. */
  resolveInbound(
    event: SlackMessageEvent,
    context: Omit<ResolveContext, "requireMention" | "owners" | "agentId">,
  ): ReturnType<typeof resolveSlackMessage>;
}

/**
 * `channel:C123` / `user:U123` / `C123` (any case, as keys store it) → the Slack conversation id.
 *
 * @throws SessionsError `invalid_params` (field `to`) when what is left is not a Slack id.
 */
export function slackChannelId(to: string): string {
  const id = to
    .trim()
    .replace(/^(channel|group|user|im):/i, "")
    .toUpperCase();
  if (!/^[A-Z0-9]+$/.test(id)) {
    throw new SessionsError("invalid_params", `Not a Slack conversation id: ${JSON.stringify(to)}`, {
      field: "to",
    });
  }
  return id;
}

interface EventContext {
  teamId?: string | undefined;
  botUserId?: string | undefined;
  botToken?: string | undefined;
}

const ARCHIVE_EVENTS = ["channel_archive", "group_archive", "channel_deleted", "group_deleted"] as const;

/**
 * A sessions channel adapter for a bolt app: channels, DMs and multi-person DMs as sessions, `thread_ts` threads
 * as thread sessions and bindings, mention gating, chunked and escaped delivery, several workspaces.
 *
 * @throws SessionsError `invalid_config`: field `app` when `app` is not a bolt `App`, field `botToken` when it is
 * neither a token nor a function. Delivery failures reach the outbox as `SessionsError`s (`rate_limited` with
 * `retryAfterMs`, `invalid_params` for unknown or archived channels, `unavailable` for network errors).
 * @example
 * ```ts
 * import { createSlackAdapter } from "@sessions/adapter-slack";
 * import { App } from "@slack/bolt";
 *
 * const app = new App({
 *   token: process.env.SLACK_BOT_TOKEN,
 *   appToken: process.env.SLACK_APP_TOKEN,
 *   socketMode: true,
 * });
 * const slack = createSlackAdapter({ app, ownerIds: ["U0123ALICE"] });
 * const gateway = createGateway({ runner, adapters: [slack] });
 * slack.attach(gateway);
 * await app.start();
 * ```
 */
export function createSlackAdapter(config: SlackAdapterConfig): SlackAdapter {
  const { app } = config;
  if (
    app === null ||
    typeof app !== "object" ||
    typeof app.event !== "function" ||
    app.client === undefined
  ) {
    throw new SessionsError("invalid_config", "createSlackAdapter: app must be a bolt App", { field: "app" });
  }
  const botToken = config.botToken;
  if (
    botToken !== undefined &&
    typeof botToken !== "function" &&
    (typeof botToken !== "string" || botToken === "")
  ) {
    throw new SessionsError("invalid_config", "createSlackAdapter: botToken must be a token or a function", {
      field: "botToken",
    });
  }
  const logger = (config.logger ?? silentLogger).child("slack");
  const owners = new Set((config.ownerIds ?? []).map(String));
  const requireMention = config.requireMention !== false;
  const workspaces = new SlackWorkspaces(app, botToken, logger);
  const inProgress = new MessagesInProgress();
  // Threads the bot opened or was mentioned in (`team|channel|thread_ts`), and messages already handed in.
  const engaged = new BoundedSet(10_000);
  const seen = new BoundedSet(10_000);
  // Chunks already sent per idempotency key, so an outbox retry after a partial failure does not repeat them.
  const sendChunks = createChunkSender(toSessionsError);

  const resolveInbound: SlackAdapter["resolveInbound"] = (event, context) =>
    resolveSlackMessage(event, {
      ...context,
      requireMention,
      owners,
      agentId: config.agentId,
    });

  async function post(
    ws: SlackWorkspace,
    channel: string,
    text: string,
    threadTs: string | undefined,
  ): Promise<string> {
    const sent = await ws.client.chat.postMessage({
      channel,
      text,
      ...(threadTs === undefined ? {} : { thread_ts: threadTs }),
      unfurl_links: false,
      unfurl_media: false,
    });
    return String(sent.ts);
  }

  async function deliver(
    target: DeliveryTarget,
    message: OutboundMessage,
    options: { idempotencyKey: string },
  ): Promise<DeliveryReceipt> {
    const chunks = splitForSlack(message.text, SLACK_MAX_MESSAGE_LENGTH);
    return sendChunks(options.idempotencyKey, chunks, async () => {
      const channel = slackChannelId(target.to);
      const ws = await workspaces.get(target.accountId);
      return (chunk) => post(ws, channel, chunk, target.threadId);
    });
  }

  async function handleMessage(
    gateway: InboundGateway,
    event: SlackMessageEvent,
    context: EventContext,
    viaAppMention: boolean,
  ): Promise<void> {
    const teamId = context.teamId;
    const reason = ignoredReason(event, context.botUserId);
    if (teamId === undefined || reason !== undefined) {
      logger.debug("ignored", { reason: reason ?? "no team", ts: event.ts });
      return;
    }
    const channel = event.channel as string;
    const key = `${teamId}|${channel}|${event.ts}`;
    // A mention arrives twice (`message` and `app_mention`), and Slack redelivers unacknowledged events.
    if (seen.has(key)) return;
    workspaces.learn(teamId, context.botToken);
    const ws = await workspaces.get(teamId).catch((error: unknown) => {
      logger.warn("no workspace for an event", { teamId, error: String(error) });
      return undefined;
    });
    const threadId = threadOf(event);
    const names = config.lookupNames !== false && ws !== undefined;
    // The conversation's type decides the chat type and whether a mention is needed; `app_mention` events lack it.
    let conversation: { type?: SlackChannelType | undefined; name?: string | undefined } = {};
    const known = event.channel_type as SlackChannelType | undefined;
    if (ws !== undefined && known === undefined) conversation = await workspaces.conversation(ws, channel);
    const facts = {
      teamId,
      botUserId: context.botUserId,
      channelType: known ?? conversation.type ?? "channel",
      viaAppMention,
      threadEngaged: threadId !== undefined && engaged.has(`${teamId}|${channel}|${threadId}`),
    };
    let resolved = resolveInbound(event, facts);
    // Names are looked up only for messages that pass (cached per channel and person).
    if (names && !("ignored" in resolved)) {
      if (known !== undefined && known !== "im") conversation = await workspaces.conversation(ws, channel);
      resolved = resolveInbound(event, {
        ...facts,
        senderName: await workspaces.userName(ws, event.user as string),
        conversationName: conversation.name,
        teamName: ws.teamName,
      });
    }
    if ("ignored" in resolved) {
      logger.debug("ignored", { reason: resolved.ignored, channel, ts: event.ts });
      return;
    }
    if (seen.has(key)) return;
    seen.add(key);
    if (resolved.mentioned && threadId !== undefined) engaged.add(`${teamId}|${channel}|${threadId}`);
    const normalizedTeam = normalizeAccountId(teamId);
    const pending =
      threadId === undefined ? inProgress.begin(normalizedTeam, channel, event.ts as string) : undefined;
    const result = await routeInbound(gateway, resolved.inbound, {
      logger,
      typing: false,
      typingIntervalMs: 0,
    });
    if (pending !== undefined) inProgress.follow(normalizedTeam, channel, pending, gateway, result?.runId);
  }

  const adapter: SlackAdapter = {
    specVersion: 1,
    channel: "slack",
    capabilities: { threads: true, typing: false, maxMessageLength: SLACK_MAX_MESSAGE_LENGTH },
    deliver,
    stream: createSlackStream({
      intervalMs: config.streamIntervalMs ?? 1000,
      defaultMode: "partial",
      maxMessageLength: SLACK_MAX_MESSAGE_LENGTH,
      workspace: (accountId) => workspaces.get(accountId),
      channelId: slackChannelId,
      toError: toSessionsError,
    }),
    async createThread(request) {
      try {
        const channel = slackChannelId(request.parent.to);
        const ws = await workspaces.get(request.parent.accountId);
        const team = normalizeAccountId(ws.teamId);
        // Under the message whose run spawned; inside a thread, that thread (Slack threads do not nest); else
        // under a new message naming the task.
        let threadTs = request.parent.threadId ?? inProgress.current(team, channel);
        if (threadTs === undefined) {
          threadTs = await post(
            ws,
            channel,
            escapeMrkdwn(request.name.slice(0, 200) || "sub-agent"),
            undefined,
          );
        }
        await post(
          ws,
          channel,
          escapeMrkdwn(`Working on this here (session ${request.sessionKey}).`),
          threadTs,
        );
        engaged.add(`${ws.teamId}|${channel}|${threadTs}`);
        return { threadId: threadTs, to: `channel:${channel}` };
      } catch (error) {
        throw toSessionsError(error, "the thread");
      }
    },
    resolveInbound,
    attach(gateway) {
      const onMessage =
        (viaAppMention: boolean) =>
        async (args: { event: unknown; context: EventContext; body: unknown }) => {
          const teamId = args.context.teamId ?? (args.body as { team_id?: string | undefined }).team_id;
          await handleMessage(
            gateway,
            args.event as SlackMessageEvent,
            { ...args.context, ...(teamId === undefined ? {} : { teamId }) },
            viaAppMention,
          ).catch((error: unknown) => logger.warn("slack event failed", { error: String(error) }));
        };
      app.event("message", onMessage(false));
      app.event("app_mention", onMessage(true));
      for (const name of ARCHIVE_EVENTS) {
        app.event(name, async ({ event, context, body }) => {
          const teamId = context.teamId ?? (body as { team_id?: string | undefined }).team_id;
          const channel = (event as { channel?: unknown }).channel;
          if (teamId === undefined || typeof channel !== "string") return;
          for (const thread of engaged.withPrefix(`${teamId}|${channel}|`)) {
            engaged.delete(thread);
            const threadId = thread.split("|")[2] as string;
            await gateway
              .threadClosed?.({ channel: "slack", accountId: teamId, threadId })
              .catch(() => false);
          }
        });
      }
    },
  };
  return adapter;
}
