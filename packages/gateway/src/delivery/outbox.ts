import {
  describeSendPolicyDecision,
  explainSendPolicy,
  type Logger,
  type SendPolicyConfig,
  SessionsError,
} from "@sessions/core";
import type { ChannelAdapterV1, DeliveryTarget } from "../adapter.js";
import { type Clock, createDeadlineTimer } from "../clock.js";
import type { EnqueueDelivery, Outbox, RecordedDelivery } from "../context.js";
import type { DeliveryAttemptInfo } from "../lifecycle.js";
import { timeOrderedId } from "../store/time-ordered-id.js";
import type { DeliveryRecord, SessionStore, StoreOps } from "../store/types.js";
import { untilStored } from "../store/until-stored.js";
import { deliverStreamed } from "./stream-final.js";

/** Retry policy of the delivery outbox (`GatewayOptions.outbox`). */
export interface OutboxOptions {
  /** Attempts before a delivery is marked `failed` (default 6). */
  maxAttempts?: number | undefined;
  /** First retry delay; doubles per attempt with ±20% jitter (default 1,000 ms). */
  baseDelayMs?: number | undefined;
  maxDelayMs?: number | undefined;
  /** An adapter call that has not settled after this long counts as a failed attempt (default 30,000 ms). */
  attemptTimeoutMs?: number | undefined;
}

export interface OutboxDeps {
  store: SessionStore;
  clock: Clock;
  logger: Logger;
  adapters: ReadonlyMap<string, ChannelAdapterV1>;
  sendPolicy: () => SendPolicyConfig;
  onFinal: (record: DeliveryRecord) => void;
  /** Told of every attempt made (sent, refused by the send policy, failed), with its times and outcome. */
  onAttempt?: ((record: DeliveryRecord, attempt: DeliveryAttemptInfo) => void) | undefined;
  /** This gateway instance: it claims deliveries under this name (see `SessionStore.claimDeliveries`). */
  owner: string;
  options?: OutboxOptions | undefined;
}

function withTimeout<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new SessionsError("timeout", message)), ms);
    timer.unref?.();
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** What recording an attempt's outcome is, for the warning when the store makes it wait. */
const RECORDING: Readonly<Record<DeliveryRecord["status"], string>> = {
  queued: "scheduling a delivery's retry",
  delivered: "recording a sent delivery",
  suppressed: "recording a suppressed delivery",
  failed: "recording a failed delivery",
};

/**
 * The durable outbox: every delivery is persisted before it is sent, retried with backoff, deduplicated by its
 * idempotency key, replayed after a restart, and ends `delivered`, `suppressed` (send policy) or `failed`.
 */
export function createOutbox(deps: OutboxDeps): Outbox {
  const { store, clock, logger } = deps;
  const maxAttempts = deps.options?.maxAttempts ?? 6;
  const baseDelay = deps.options?.baseDelayMs ?? 1000;
  const maxDelay = deps.options?.maxDelayMs ?? 5 * 60_000;
  const attemptTimeout = deps.options?.attemptTimeoutMs ?? 30_000;
  const inFlight = new Set<string>();
  // The pieces of streamed replies already edited or posted, by delivery id: a retry resumes after them.
  const streamProgress = new Map<string, string[]>();
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

  const leaseMs = attemptTimeout * 2;
  /** This gateway's claim on `record` lapses before an attempt begun now surely ends (with a tenth to spare). */
  const claimEnding = (record: DeliveryRecord) =>
    record.leaseOwner === deps.owner &&
    (record.leaseUntil ?? Number.POSITIVE_INFINITY) - clock.now() < attemptTimeout + attemptTimeout / 10;
  const heldByOther = (record: DeliveryRecord) =>
    record.leaseOwner !== undefined &&
    record.leaseOwner !== deps.owner &&
    (record.leaseUntil ?? 0) > clock.now();

  /**
   * One store step of an attempt, waiting out a store outage (a database restarting) instead of dropping the
   * attempt: a dropped one stays claimed by this gateway, and so unsent, until its claim lapses.
   */
  const stored = <T>(id: string, step: () => Promise<T>, what: string) =>
    untilStored(step, {
      clock,
      stop: () => stopped,
      onRetry: (error, attempt) => {
        if (attempt === 1)
          logger.warn(`the store is unavailable; ${what} when it is back`, { id, error: error.message });
      },
    });

  async function finish(
    record: DeliveryRecord,
    patch: Partial<DeliveryRecord>,
    startedAt: number,
  ): Promise<DeliveryRecord> {
    // The claim ends with the attempt: a retry is claimed afresh when it is due, by whichever gateway comes first.
    const { leaseOwner: _owner, leaseUntil: _until, ...unleased } = record;
    const next = { ...unleased, ...patch, updatedAt: clock.now() };
    // Fenced: when this gateway stalled past its claim and another took the delivery over, its outcome stands.
    const finished = await stored(
      record.id,
      () => store.finishDelivery(next, deps.owner),
      RECORDING[next.status],
    );
    if (!finished) {
      logger.warn("discarded a delivery outcome: another gateway took the delivery over", {
        id: record.id,
        discarded: next.status,
      });
      return next;
    }
    deps.onAttempt?.(next, {
      startedAt,
      endedAt: next.updatedAt,
      outcome: next.status === "queued" ? "retry" : next.status,
      ...(next.status === "delivered" ? { receipt: next.receipt } : { error: next.lastError }),
    });
    if (next.status !== "queued") deps.onFinal(next);
    return next;
  }

  async function attempt(id: string): Promise<void> {
    if (inFlight.has(id) || stopped) return;
    inFlight.add(id);
    try {
      const record = await stored(id, () => store.getDelivery(id), "sending a delivery");
      if (record === undefined || record.status !== "queued" || heldByOther(record)) return;
      if (claimEnding(record)) {
        // The store was out of reach for most of the claim: an attempt now could still be under way when the claim
        // lapses and another gateway sends it too. Left for whoever claims it next (this one included).
        logger.warn("withheld a delivery whose claim is about to lapse", { id });
        schedule(record.leaseUntil ?? clock.now());
        return;
      }
      const startedAt = clock.now();
      if (record.kind !== "notice") {
        const entry = await stored(id, () => store.getEntry(record.sessionKey), "sending a delivery");
        const explanation = explainSendPolicy({
          policy: deps.sendPolicy(),
          entry,
          key: record.sessionKey,
          channel: record.channel,
        });
        if (explanation.decision === "deny") {
          await finish(
            record,
            { status: "suppressed", lastError: describeSendPolicyDecision(explanation) },
            startedAt,
          );
          return;
        }
      }
      const adapter = deps.adapters.get(record.channel);
      if (adapter === undefined) {
        await finish(
          record,
          {
            status: "failed",
            attempts: record.attempts + 1,
            lastError: `No channel adapter for "${record.channel}"`,
          },
          startedAt,
        );
        return;
      }
      const target: DeliveryTarget = { channel: record.channel, to: record.to };
      if (record.accountId !== undefined) target.accountId = record.accountId;
      if (record.threadId !== undefined) target.threadId = record.threadId;
      let receipt: Awaited<ReturnType<typeof adapter.deliver>>;
      try {
        const { stream } = record;
        receipt = await withTimeout(
          stream === undefined
            ? adapter.deliver(
                target,
                { text: record.text, kind: record.kind, sessionKey: record.sessionKey },
                { idempotencyKey: record.idempotencyKey },
              )
            : deliverStreamed(adapter, { ...record, stream }, target, streamProgress),
          attemptTimeout,
          `the ${record.channel} adapter did not answer within ${attemptTimeout} ms`,
        );
      } catch (error) {
        const tries = record.attempts + 1;
        const permanent = SessionsError.isInstance(error) && error.code === "invalid_params";
        const message = error instanceof Error ? error.message : String(error);
        if (permanent || tries >= maxAttempts) {
          streamProgress.delete(id);
          logger.warn("delivery failed", { id, channel: record.channel, attempts: tries, error: message });
          await finish(record, { status: "failed", attempts: tries, lastError: message }, startedAt);
          return;
        }
        const retryAfter = SessionsError.isInstance(error) ? error.retryAfterMs : undefined;
        const delay = typeof retryAfter === "number" && retryAfter >= 0 ? retryAfter : backoff(tries);
        await finish(
          record,
          { attempts: tries, lastError: message, nextAttemptAt: clock.now() + delay },
          startedAt,
        );
        schedule(clock.now() + delay);
        return;
      }
      // Sent: recorded as delivered once the store answers (a database restarting), never sent again meanwhile.
      await finish(
        record,
        {
          status: "delivered",
          attempts: record.attempts + 1,
          receipt: Array.isArray(receipt?.messageIds) ? receipt.messageIds.map(String) : [],
        },
        startedAt,
      );
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
    const now = clock.now();
    const claimed = await store.claimDeliveries({ owner: deps.owner, now, ttlMs: leaseMs, limit: 100 });
    for (const record of claimed) void track(record.id);
    // A full claim means more may be due behind it; otherwise wake for the next one not yet due.
    if (claimed.length === 100) schedule(now + 10);
    const next = (await store.listQueuedDeliveries(100)).find((record) => record.nextAttemptAt > now);
    if (next !== undefined) schedule(next.nextAttemptAt);
  }

  /** The record a new delivery is stored as: claimed by this gateway, not yet sent. */
  function draft(input: EnqueueDelivery): DeliveryRecord {
    const now = clock.now();
    const fresh: DeliveryRecord = {
      id: input.id ?? timeOrderedId(),
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
    if (input.runId !== undefined) fresh.runId = input.runId;
    if (input.target.accountId !== undefined) fresh.accountId = input.target.accountId;
    if (input.target.threadId !== undefined) fresh.threadId = input.target.threadId;
    if (input.suppressedReason !== undefined) fresh.lastError = input.suppressedReason;
    if (input.stream !== undefined) fresh.stream = input.stream;
    if (fresh.status === "queued") {
      fresh.leaseOwner = deps.owner;
      fresh.leaseUntil = now + leaseMs;
    }
    return fresh;
  }

  /** After the unit that enqueued a drafted delivery committed: a new one starts sending (or is reported). */
  function committed({ record: stored, created }: { record: DeliveryRecord; created: boolean }): void {
    if (created && stored.status === "queued") void track(stored.id);
    if (created && stored.status !== "queued") deps.onFinal(stored);
  }

  /** Writes a delivery through `tx` (the store itself by default), claimed by this gateway, not yet sent. */
  async function record(input: EnqueueDelivery, tx: StoreOps = store): Promise<RecordedDelivery> {
    const enqueued = await tx.enqueueDelivery(draft(input));
    return { record: enqueued.record, committed: () => committed(enqueued) };
  }

  return {
    /** Stores a delivery and starts sending it (deduplicated by its idempotency key). */
    async enqueue(input: EnqueueDelivery): Promise<DeliveryRecord> {
      const recorded = await record(input);
      recorded.committed();
      return recorded.record;
    },
    record,
    draft,
    committed,
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
