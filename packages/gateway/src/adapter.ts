import type { DeliveryKind } from "./store/types.js";

/** Where a message goes on a platform. */
export interface DeliveryTarget {
  channel: string;
  to: string;
  accountId?: string;
  threadId?: string;
}

export interface OutboundMessage {
  text: string;
  kind: DeliveryKind;
  sessionKey: string;
}

export interface DeliveryReceipt {
  /** Platform message ids of what was sent (several when the text was chunked). */
  messageIds: string[];
}

export interface ChannelCapabilities {
  /** Can create or bind threads/topics for `sessions_spawn({ thread: true })`. */
  threads?: boolean;
  typing?: boolean;
  maxMessageLength?: number;
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
  readonly aliases?: readonly string[];
  readonly capabilities: ChannelCapabilities;
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
  }): Promise<{ threadId: string; to?: string }>;
  sendTyping?(target: DeliveryTarget): Promise<void>;
}
