import type { Logger } from "./logger.js";
import type { QueueMode } from "./queue-mode.js";
import type { StreamingMode } from "./streaming.js";

/**
 * The versioned contract between a chat platform and the gateway: what an adapter hands in (`InboundMessage`),
 * what the gateway hands out (`ChannelAdapterV1.deliver`). Pure types, so adapters depend on core alone.
 */

/** Why a message goes out. */
export type DeliveryKind = "reply" | "announce" | "subagent_announce" | "notice";

/** Where a message goes on a platform. */
export interface DeliveryTarget {
  channel: string;
  to: string;
  accountId?: string | undefined;
  threadId?: string | undefined;
}

/** What the gateway asks an adapter to post: the text, why it goes out, and the session it comes from. */
export interface OutboundMessage {
  text: string;
  kind: DeliveryKind;
  sessionKey: string;
}

/** What an adapter reports after posting: the platform's message ids. */
export interface DeliveryReceipt {
  /** Platform message ids of what was sent (several when the text was chunked). */
  messageIds: string[];
}

/** What an adapter can do beyond posting text: threads, typing, its message size limit. */
export interface ChannelCapabilities {
  /** Can create or bind threads/topics for `sessions_spawn({ thread: true })`. */
  threads?: boolean | undefined;
  typing?: boolean | undefined;
  maxMessageLength?: number | undefined;
}

/**
 * What an adapter does to stream a reply into a chat while the model writes it (`ChannelAdapterV1.stream`). The
 * gateway decides what each message shows (`streamedParts`), paces the requests (`intervalMs`, and a
 * `rate_limited` error's `retryAfterMs`), records the messages it posted, and at the run's end edits them into the
 * reply through the outbox — so a crash mid-stream still ends with the reply once, not a second copy.
 */
export interface ChannelStreamV1 {
  /** The mode a channel streams in when `channels.<id>.streaming` (or its account's) does not say. */
  readonly defaultMode: StreamingMode;
  /** The least time between two requests into one conversation, in ms (the platform's edit rate). */
  readonly intervalMs: number;
  /** The most characters one message holds (what `deliver` chunks to). */
  readonly maxMessageLength: number;
  /** Posts a message and returns its platform id. */
  post(target: DeliveryTarget, text: string): Promise<string>;
  /** Replaces a posted message's text; the same text again must not fail. */
  edit(target: DeliveryTarget, messageId: string, text: string): Promise<void>;
  /** Removes a posted message; one already gone must not fail. */
  remove(target: DeliveryTarget, messageId: string): Promise<void>;
  /**
   * Shows `text` as a draft where the platform has them (Telegram's private chats): ephemeral, replaced by the
   * next draft of the same `streamId` and gone once a message is posted. Answers false where it has none (then
   * the gateway posts and edits messages instead).
   */
  draft?(target: DeliveryTarget, streamId: string, text: string): Promise<boolean>;
}

/**
 * The versioned contract between the gateway and a chat platform. New members arrive only as optional ones in
 * minor releases. `deliver` must be idempotent per `idempotencyKey` when it can be (the outbox retries); throw a
 * `SessionsError` with `retryAfterMs` for rate limits and `code: "invalid_params"` for permanent failures.
 */
export interface ChannelAdapterV1 {
  readonly specVersion: 1;
  /** The channel id sessions record (`discord`, `telegram`, …). */
  readonly channel: string;
  /** Extra names that normalise to this channel. */
  readonly aliases?: readonly string[] | undefined;
  readonly capabilities: ChannelCapabilities;
  /** Posts a message (chunked to the platform's limit); throws `rate_limited` with `retryAfterMs`, or `invalid_params` for refusals a retry cannot fix. */
  deliver(
    target: DeliveryTarget,
    message: OutboundMessage,
    options: { idempotencyKey: string },
  ): Promise<DeliveryReceipt>;
  /** Creates (or binds) a thread under `parent` for a session. */
  createThread?(request: {
    parent: DeliveryTarget;
    name: string;
    sessionKey: string;
  }): Promise<{ threadId: string; to?: string | undefined }>;
  /** Shows "typing…" in the target conversation. */
  sendTyping?(target: DeliveryTarget): Promise<void>;
  /** Streams replies as they are written (`channels.<id>.streaming`); without it, replies are posted whole. */
  readonly stream?: ChannelStreamV1 | undefined;
}

/** A platform message as an adapter hands it to `gateway.receive`: where it came from, who sent it, where replies go. */
export interface InboundMessage {
  /** The platform's parent conversation of a thread (recorded, not routed on). */
  parentId?: string | undefined;
  channel: string;
  accountId?: string | undefined;
  chatType: "direct" | "group" | "channel";
  /** The conversation: the user id for DMs, the group/channel id otherwise. */
  peerId: string;
  senderId: string;
  senderName?: string | undefined;
  isOwner?: boolean | undefined;
  threadId?: string | undefined;
  /** `topic` for Telegram forum topics; default `thread`. */
  threadKind?: "thread" | "topic" | undefined;
  /** Where replies go (`channel:<id>`, a chat id, …). */
  to: string;
  text: string;
  /** Platform message id: a redelivered message with the same id is not run twice. */
  messageId?: string | undefined;
  displayName?: string | undefined;
  agentId?: string | undefined;
  /** The W3C trace context the message arrived with (platform metadata): its runs join that trace (ignored if invalid). */
  traceparent?: string | undefined;
}

/** What `gateway.receive` answers: the session the message went to, and the run it started (none for a `/send` or `/queue` command, a duplicate, or a busy session refusing it). */
export interface ReceiveResult {
  sessionKey: string;
  runId?: string | undefined;
  /** Set when the message was the `/send` command. */
  command?: { mode: "allow" | "deny" | "inherit" | null; applied: boolean } | undefined;
  /** Set when the message was the `/queue` command (`mode: null`: usage was posted back). */
  queueCommand?: { mode: QueueMode | "reset" | null; applied: boolean } | undefined;
  /**
   * Set when the session's queue mode is `reject` and it was busy: nothing was recorded and no run started; tell
   * the sender to try again (after `retryAfterMs`).
   */
  rejected?: { code: "busy"; message: string; retryAfterMs: number } | undefined;
  duplicate?: boolean | undefined;
}

/** The part of a gateway an adapter talks to (structural, so adapters need not depend on the gateway). */
export interface InboundGateway {
  /** Routes a platform message into its session and starts a run. */
  receive(inbound: InboundMessage): Promise<ReceiveResult>;
  /** The platform archived or deleted a thread: its binding ends (optional for gateways without bindings). */
  threadClosed?(event: {
    channel: string;
    accountId?: string | undefined;
    threadId: string;
  }): Promise<boolean>;
  /** Waits for a run to end (server-side; never cancels it). */
  agentWait(params: {
    runId: string;
    timeoutMs?: number | undefined;
  }): Promise<{ status: "ok" | "error" | "timeout"; endedAt?: number | undefined }>;
}

/**
 * Shows "typing…" for a run: calls `send` now and again every `intervalMs` until the run ends, waiting on the
 * gateway (`agentWait`) rather than polling. Never throws; ends when the gateway cannot say.
 */
export async function keepTypingWhileRunning(
  gateway: Pick<InboundGateway, "agentWait">,
  runId: string,
  send: () => Promise<void>,
  intervalMs: number,
): Promise<void> {
  await send().catch(() => undefined);
  for (;;) {
    const waited = await gateway.agentWait({ runId, timeoutMs: intervalMs }).catch(() => undefined);
    if (waited === undefined || waited.status !== "timeout" || waited.endedAt !== undefined) return;
    await send().catch(() => undefined);
  }
}

/** Options of `routeInbound`: logging, and how to show "typing…" on the platform. */
export interface RouteInboundOptions {
  /** Where refused messages are reported. */
  logger: Logger;
  /** Show "typing…" while the run is in progress. */
  typing: boolean;
  /** Shows "typing…" in a conversation (the adapter's `sendTyping`). */
  sendTyping?: ((target: DeliveryTarget) => Promise<void>) | undefined;
  /** How long one "typing…" lasts on the platform. */
  typingIntervalMs: number;
}

/**
 * What every adapter does with a message: hand it to the gateway (a refusal is logged, never thrown into the
 * platform library's event loop) and show "typing…" until the run ends.
 */
export async function routeInbound(
  gateway: InboundGateway,
  inbound: InboundMessage,
  options: RouteInboundOptions,
): Promise<ReceiveResult | undefined> {
  let result: ReceiveResult;
  try {
    result = await gateway.receive(inbound);
  } catch (error) {
    options.logger.warn("inbound message refused", {
      error: error instanceof Error ? error.message : String(error),
    });
    return undefined;
  }
  const { sendTyping } = options;
  if (result.runId !== undefined && options.typing && sendTyping !== undefined) {
    const target: DeliveryTarget = {
      channel: inbound.channel,
      to: inbound.to,
      ...(inbound.accountId === undefined ? {} : { accountId: inbound.accountId }),
      ...(inbound.threadId === undefined ? {} : { threadId: inbound.threadId }),
    };
    void keepTypingWhileRunning(gateway, result.runId, () => sendTyping(target), options.typingIntervalMs);
  }
  return result;
}
