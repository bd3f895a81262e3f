import { parseMethodParams } from "@sessions/core";
import type { GatewayContext } from "../context.js";
import { allowedDelivery } from "../delivery/targets.js";
import type { ChatHistoryPayload, HistoryWireMessage } from "../gateway.js";
import { JsonTexts } from "../known-json.js";
import { abortSessionRuns } from "../runs/abort.js";
import { budgetOf, rootBudget } from "../runs/budget.js";
import { refuseWhenBusy } from "../runs/queue-modes.js";
import { startRun } from "../runs/start.js";
import { isFinal } from "../runs/wait.js";
import { ensureEntry, operatorKey } from "../sessions/entries.js";
import { keptMessages } from "../store/kept-records.js";
import type { RunRecord, StoredMessage } from "../store/types.js";
import { toolContextFor } from "../tools/tool-context.js";
import {
  decodeHistoryCursor,
  encodeHistoryCursor,
  foreignHistoryCursor,
  refuseCursorWithOffset,
  staleHistoryCursor,
} from "./cursors.js";

type SendStatus = "started" | "in_flight" | "ok" | "error";

/** How a repeated `chat.send` reports the run its key already made. */
const repeatStatus = (run: RunRecord): SendStatus =>
  isFinal(run.status) ? (run.status === "ok" ? "ok" : "error") : "in_flight";

/**
 * A transcript message for the wire: ours (`ts`, `seq`) plus the same values where OpenClaw readers look. The store's
 * reads are fresh copies the caller owns, so the fields are added in place (a second copy of each message was a
 * seventh of a history call's time).
 */
function wireMessage(message: StoredMessage): HistoryWireMessage {
  const wire = message as HistoryWireMessage;
  wire.timestamp = message.ts;
  wire.__openclaw =
    message.runId === undefined ? { seq: message.seq } : { seq: message.seq, runId: message.runId };
  return wire;
}

/** The wire text of messages a store keeps (see `keptMessages`), made the first time each is read. */
const wireTexts = new WeakMap<StoredMessage, string>();

/** A kept message's wire text: what `wireMessage` makes of a copy of it, serialized. */
function wireText(message: StoredMessage): string {
  let text = wireTexts.get(message);
  if (text === undefined) {
    // Spread, then set: the same fields in the same order as `wireMessage` gives its copy.
    text = JSON.stringify(wireMessage({ ...message }));
    wireTexts.set(message, text);
  }
  return text;
}

/** Messages read for a `chat.history` answer. */
interface HistoryRead {
  /** How many were read. */
  readonly length: number;
  /** The sequence number of the `i`th read. */
  seq(i: number): number | undefined;
  /** Those from the `skip`th on, as the answer gives them (their texts, for the wire only: see `dispatch`). */
  answer(skip: number): HistoryWireMessage[];
}

/**
 * Reads messages for `chat.history`. For an answer that is only sent (`wire`), a store that keeps them lends them:
 * the answer is their wire texts, made once per message, with no copy of any message.
 */
async function readForHistory(
  ctx: GatewayContext,
  key: string,
  options: { limit: number; beforeSeq: number },
  wire: boolean,
): Promise<HistoryRead> {
  const kept = wire ? await keptMessages(ctx.store, key, options) : undefined;
  if (kept !== undefined)
    return {
      length: kept.length,
      seq: (i) => kept[i]?.seq,
      answer: (skip) => new JsonTexts(kept.slice(skip).map(wireText)) as unknown as HistoryWireMessage[],
    };
  const read = options.beforeSeq <= 1 ? [] : await ctx.store.readMessages(key, options);
  return {
    length: read.length,
    seq: (i) => read[i]?.seq,
    answer: (skip) => (skip === 0 ? read : read.slice(skip)).map(wireMessage),
  };
}

/** The page before a history cursor; the cursor's transcript must still be the session's. */
async function historyBefore(
  ctx: GatewayContext,
  key: string,
  cursor: string,
  limit: number,
  wire: boolean,
): Promise<ChatHistoryPayload> {
  const { sessionId, beforeSeq } = decodeHistoryCursor(cursor);
  // One more than the page, to know whether older ones exist (cost ∝ limit, not transcript length).
  const read = await readForHistory(ctx, key, { limit: limit + 1, beforeSeq }, wire);
  const total = await ctx.store.countMessages(key);
  // Checked after the read: sessionIds never come back, so a session that has the cursor's id now had it all along
  // and the messages read are its own.
  const entry = await ctx.store.getEntry(key);
  if (entry?.sessionId !== sessionId) {
    const [owner] = await ctx.store.findEntriesBySessionId(sessionId);
    throw owner === undefined ? staleHistoryCursor(key) : foreignHistoryCursor(key, owner.key);
  }
  const hasMore = read.length > limit;
  const skip = hasMore ? 1 : 0;
  const oldest = read.seq(skip);
  return {
    sessionKey: key,
    sessionId,
    messages: read.answer(skip),
    totalMessages: total,
    hasMore,
    // Sequence numbers run from 1 without gaps: the messages from `oldest` on are the ones before the next page.
    nextOffset: hasMore && oldest !== undefined ? total - oldest + 1 : null,
    nextCursor:
      hasMore && oldest !== undefined ? encodeHistoryCursor({ sessionId, beforeSeq: oldest }) : null,
  };
}

/** `chat.*`: a session's transcript, a user turn into it, and stopping its runs. */
export const chatMethods = {
  /** The newest page, or the one before `cursor` (which appends never shift) or `offset` (which they do). */
  async "chat.history"(ctx: GatewayContext, params: unknown, wire = false): Promise<ChatHistoryPayload> {
    const p = parseMethodParams("chat.history", params);
    refuseCursorWithOffset(p);
    const key = operatorKey(ctx, p.sessionKey, "sessionKey");
    const limit = p.limit ?? 200;
    if (p.cursor !== undefined) return historyBefore(ctx, key, p.cursor, limit, wire);
    const entry = await ctx.store.getEntry(key);
    // As OpenClaw: a session that does not exist (yet) has an empty history, not an error.
    if (entry === undefined) {
      return {
        sessionKey: key,
        messages: [],
        totalMessages: 0,
        hasMore: false,
        nextOffset: null,
        nextCursor: null,
      };
    }
    const offset = p.offset ?? 0;
    const total = await ctx.store.countMessages(key);
    const beforeSeq = total - offset + 1;
    const read = await readForHistory(ctx, key, { limit, beforeSeq }, wire);
    const hasMore = total - offset - read.length > 0;
    const oldest = read.seq(0);
    return {
      sessionKey: key,
      sessionId: entry.sessionId,
      messages: read.answer(0),
      totalMessages: total,
      hasMore,
      nextOffset: hasMore ? offset + read.length : null,
      nextCursor:
        hasMore && oldest !== undefined
          ? encodeHistoryCursor({ sessionId: entry.sessionId, beforeSeq: oldest })
          : null,
    };
  },

  async "chat.send"(ctx: GatewayContext, params: unknown): Promise<{ runId: string; status: SendStatus }> {
    const p = parseMethodParams("chat.send", params);
    const key = operatorKey(ctx, p.sessionKey, "sessionKey");
    // As `agent`: a repeat that could change something first returns here, any other in `startRun`.
    let entry = await ctx.store.getEntry(key);
    if (entry === undefined || p.deliver === true) {
      const existing = await ctx.store.findRunByIdempotencyKey(p.idempotencyKey);
      if (existing !== undefined) return { runId: existing.runId, status: repeatStatus(existing) };
    }
    // Queue mode `reject`: a busy session refuses the message before anything is written (a repeat is answered).
    const repeat = await refuseWhenBusy(ctx, key, entry, p.idempotencyKey);
    if (repeat !== undefined) return { runId: repeat.runId, status: repeatStatus(repeat) };
    entry ??= await ensureEntry(ctx, key);
    const deliverTo =
      p.deliver === true
        ? allowedDelivery(ctx, entry, key, undefined, `Session ${key} has no delivery context to deliver to`)
        : undefined;
    // As OpenClaw, the run's id is the idempotency key, unless another run already has that id.
    const { run, created } = await startRun(ctx, {
      preferredRunId: p.idempotencyKey,
      sessionKey: key,
      kind: "chat",
      cause: { kind: "request", method: "chat.send" },
      ...(p.traceparent === undefined ? {} : { traceparent: p.traceparent }),
      input: { role: "user", content: p.message, ts: ctx.clock.now() },
      idempotencyKey: p.idempotencyKey,
      ...(deliverTo === undefined ? {} : { deliverTo }),
      tools: toolContextFor(ctx, entry, key, false),
      ...(p.timeoutMs ? { timeoutMs: p.timeoutMs } : {}),
      ...budgetOf(rootBudget(ctx, key, entry, p.budget, ctx.clock.now())),
      userMessage: true,
    });
    // A concurrent retry with the same key got here second: report the run like a repeat would.
    return { runId: run.runId, status: created ? "started" : repeatStatus(run) };
  },

  async "chat.abort"(
    ctx: GatewayContext,
    params: unknown,
  ): Promise<{ ok: true; aborted: boolean; runIds: string[] }> {
    const p = parseMethodParams("chat.abort", params);
    const runIds = await abortSessionRuns(ctx, operatorKey(ctx, p.sessionKey, "sessionKey"), p.runId);
    return { ok: true as const, aborted: runIds.length > 0, runIds };
  },
};
