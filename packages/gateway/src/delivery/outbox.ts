import { randomUUID } from "node:crypto";
import {
  describeSendPolicyDecision,
  explainSendPolicy,
  type Logger,
  type SendPolicyConfig,
  SessionsError,
} from "@sessions/core";
import type { ChannelAdapterV1, DeliveryTarget } from "../adapter.js";
import { type Clock, createDeadlineTimer } from "../clock.js";
import type { DeliveryKind, DeliveryRecord, SessionStore } from "../store/types.js";

export interface OutboxOptions {
  /** Attempts before a delivery is marked `failed` (default 6). */
  maxAttempts?: number;
  /** First retry delay; doubles per attempt with ±20% jitter (default 1,000 ms). */
  baseDelayMs?: number;
  maxDelayMs?: number;
  /** An adapter call that has not settled after this long counts as a failed attempt (default 30,000 ms). */
  attemptTimeoutMs?: number;
}

export interface OutboxDeps {
  store: SessionStore;
  clock: Clock;
  logger: Logger;
  adapters: ReadonlyMap<string, ChannelAdapterV1>;
  sendPolicy: () => SendPolicyConfig;
  onFinal: (record: DeliveryRecord) => void;
  options?: OutboxOptions;
}

export interface EnqueueDelivery {
  idempotencyKey: string;
  kind: DeliveryKind;
  sessionKey: string;
  runId?: string;
  target: DeliveryTarget;
  text: string;
  /** Recorded as `suppressed` right away (with this reason) instead of being sent. */
  suppressedReason?: string;
}

function withTimeout<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new SessionsError("timeout", message)), ms);
    timer.unref?.();
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/**
 * The durable outbox: every delivery is persisted before it is sent, retried with backoff, deduplicated by its
 * idempotency key, replayed after a restart, and ends `delivered`, `suppressed` (send policy) or `failed`.
 */
export function createOutbox(deps: OutboxDeps) {
  const { store, clock, logger } = deps;
  const maxAttempts = deps.options?.maxAttempts ?? 6;
  const baseDelay = deps.options?.baseDelayMs ?? 1000;
  const maxDelay = deps.options?.maxDelayMs ?? 5 * 60_000;
  const attemptTimeout = deps.options?.attemptTimeoutMs ?? 30_000;
  const inFlight = new Set<string>();
  const attempts = new Set<Promise<void>>();
  let stopped = false;
  const timer = createDeadlineTimer(clock, () => {
    pump().catch((error) => logger.error("outbox pump failed", { error: String(error) }));
  });
  const schedule = (at: number) => timer.schedule(at);

  function backoff(attempt: number): number {
    const raw = Math.min(maxDelay, baseDelay * 2 ** Math.max(0, attempt - 1));
    return Math.round(raw * (0.8 + Math.random() * 0.4));
  }

  async function finish(record: DeliveryRecord, patch: Partial<DeliveryRecord>): Promise<DeliveryRecord> {
    const next = { ...record, ...patch, updatedAt: clock.now() };
    await store.putDelivery(next);
    if (next.status !== "queued") deps.onFinal(next);
    return next;
  }

  async function attempt(id: string): Promise<void> {
    if (inFlight.has(id) || stopped) return;
    inFlight.add(id);
    try {
      const record = await store.getDelivery(id);
      if (record === undefined || record.status !== "queued") return;
      if (record.kind !== "notice") {
        const entry = await store.getEntry(record.sessionKey);
        const explanation = explainSendPolicy({
          policy: deps.sendPolicy(),
          entry,
          key: record.sessionKey,
          channel: record.channel,
        });
        if (explanation.decision === "deny") {
          await finish(record, { status: "suppressed", lastError: describeSendPolicyDecision(explanation) });
          return;
        }
      }
      const adapter = deps.adapters.get(record.channel);
      if (adapter === undefined) {
        await finish(record, {
          status: "failed",
          attempts: record.attempts + 1,
          lastError: `No channel adapter for "${record.channel}"`,
        });
        return;
      }
      const target: DeliveryTarget = { channel: record.channel, to: record.to };
      if (record.accountId !== undefined) target.accountId = record.accountId;
      if (record.threadId !== undefined) target.threadId = record.threadId;
      try {
        const receipt = await withTimeout(
          adapter.deliver(
            target,
            { text: record.text, kind: record.kind, sessionKey: record.sessionKey },
            { idempotencyKey: record.idempotencyKey },
          ),
          attemptTimeout,
          `the ${record.channel} adapter did not answer within ${attemptTimeout} ms`,
        );
        await finish(record, {
          status: "delivered",
          attempts: record.attempts + 1,
          receipt: Array.isArray(receipt?.messageIds) ? receipt.messageIds.map(String) : [],
        });
      } catch (error) {
        const tries = record.attempts + 1;
        const permanent = SessionsError.isInstance(error) && error.code === "invalid_params";
        const message = error instanceof Error ? error.message : String(error);
        if (permanent || tries >= maxAttempts) {
          logger.warn("delivery failed", { id, channel: record.channel, attempts: tries, error: message });
          await finish(record, { status: "failed", attempts: tries, lastError: message });
          return;
        }
        const retryAfter = SessionsError.isInstance(error) ? error.retryAfterMs : undefined;
        const delay = typeof retryAfter === "number" && retryAfter >= 0 ? retryAfter : backoff(tries);
        await finish(record, { attempts: tries, lastError: message, nextAttemptAt: clock.now() + delay });
        schedule(clock.now() + delay);
      }
    } finally {
      inFlight.delete(id);
    }
  }

  function track(id: string): Promise<void> {
    const p = attempt(id).catch((error) =>
      logger.error("outbox attempt crashed", { id, error: String(error) }),
    );
    attempts.add(p);
    void p.finally(() => attempts.delete(p));
    return p;
  }

  async function pump(): Promise<void> {
    if (stopped) return;
    const queued = await store.listQueuedDeliveries(100);
    const now = clock.now();
    for (const record of queued) {
      if (record.nextAttemptAt <= now) void track(record.id);
      else {
        schedule(record.nextAttemptAt);
        break;
      }
    }
    // A full page that is all due means more may be waiting behind it; otherwise the timer above covers it.
    const last = queued[queued.length - 1];
    if (queued.length === 100 && last !== undefined && last.nextAttemptAt <= now) schedule(now + 10);
  }

  return {
    async enqueue(input: EnqueueDelivery): Promise<DeliveryRecord> {
      const now = clock.now();
      const record: DeliveryRecord = {
        id: randomUUID(),
        idempotencyKey: input.idempotencyKey,
        kind: input.kind,
        sessionKey: input.sessionKey,
        channel: input.target.channel,
        to: input.target.to,
        text: input.text,
        status: input.suppressedReason === undefined ? "queued" : "suppressed",
        attempts: 0,
        nextAttemptAt: now,
        createdAt: now,
        updatedAt: now,
      };
      if (input.runId !== undefined) record.runId = input.runId;
      if (input.target.accountId !== undefined) record.accountId = input.target.accountId;
      if (input.target.threadId !== undefined) record.threadId = input.target.threadId;
      if (input.suppressedReason !== undefined) record.lastError = input.suppressedReason;
      const { record: stored, created } = await store.enqueueDelivery(record);
      if (created && stored.status === "queued") void track(stored.id);
      if (created && stored.status !== "queued") deps.onFinal(stored);
      return stored;
    },
    /** Replays everything queued (at start, after a restart). */
    replay: pump,
    /** Waits for attempts under way, at most `timeoutMs`. */
    async drain(timeoutMs = attemptTimeout): Promise<void> {
      const deadline = Date.now() + timeoutMs;
      while (attempts.size > 0 && Date.now() < deadline) {
        await Promise.race([
          Promise.allSettled([...attempts]),
          new Promise((resolve) => setTimeout(resolve, Math.max(1, deadline - Date.now())).unref?.()),
        ]);
      }
    },
    stop() {
      stopped = true;
      timer.stop();
    },
  };
}

export type Outbox = ReturnType<typeof createOutbox>;
