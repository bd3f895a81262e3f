import { randomUUID } from "node:crypto";
import { type DeliveryContext, parseSessionKey, SessionsError, type TranscriptMessage } from "@sessions/core";
import type { GatewayContext } from "../context.js";
import type { RunKind, RunRecord, StoredMessage } from "../store/types.js";
import type { ToolContext } from "../tools/tool-context.js";
import { executeRun } from "./execute.js";

/** Everything needed to start a run; `tools: null` runs without tools (announce steps). */
export interface RunSpec {
  /** Set when the caller must know the id before the run exists (sub-agent records). */
  runId?: string;
  followUp?: RunRecord["followUp"];
  sessionKey: string;
  kind: RunKind;
  input: TranscriptMessage;
  idempotencyKey?: string;
  deliverTo?: DeliveryContext;
  system?: string[];
  tools: ToolContext | null;
  timeoutMs?: number;
  model?: string;
  thinking?: string;
  subagentSlot?: boolean;
  onSettled?: (run: RunRecord) => Promise<void>;
}

/**
 * Records a run as one unit of work — idempotency check, the input message, the run, the session touched — and
 * queues it on its session's lane. A repeated idempotency key returns the first run (`created: false`): a crash
 * can never leave the message without its run, so a retry after one finds either both or neither.
 */
export async function startRun(
  ctx: GatewayContext,
  spec: RunSpec,
): Promise<{ run: RunRecord; created: boolean }> {
  if (ctx.tasks.closed)
    throw new SessionsError("unavailable", "The gateway is closing", { retryAfterMs: 1000 });
  const create = async () => {
    // An idle lane starts the run at once: record it running now and save the write that would say so later.
    const startsNow = ctx.runs.lanes.isIdle(spec.sessionKey) && !spec.subagentSlot;
    const created = await ctx.store.transaction(async (tx) => {
      if (spec.idempotencyKey !== undefined) {
        const existing = await tx.findRunByIdempotencyKey(spec.idempotencyKey);
        if (existing !== undefined) return { run: existing, input: undefined, touched: false };
      }
      const now = ctx.clock.now();
      const entry = await tx.getEntry(spec.sessionKey);
      if (entry !== undefined) await tx.putEntry({ ...entry, updatedAt: now });
      const runId = spec.runId ?? randomUUID();
      const input = await tx.appendMessage(spec.sessionKey, { ...spec.input, runId });
      const run: RunRecord = {
        runId,
        sessionKey: spec.sessionKey,
        agentId: parseSessionKey(spec.sessionKey)?.agentId ?? "main",
        kind: spec.kind,
        status: startsNow ? "running" : "queued",
        createdAt: now,
        ...(startsNow ? { startedAt: now } : {}),
        inputSeq: input.seq,
        owner: ctx.owner,
      };
      if (spec.idempotencyKey !== undefined) run.idempotencyKey = spec.idempotencyKey;
      if (spec.deliverTo !== undefined) run.deliverTo = spec.deliverTo;
      if (spec.followUp !== undefined) run.followUp = spec.followUp;
      await tx.putRun(run);
      return { run, input, touched: entry !== undefined };
    });
    if (created.input === undefined) return { run: created.run, created: false };
    schedule(ctx, spec, created.run, created.input);
    if (created.touched) ctx.emit({ type: "sessions.changed", key: spec.sessionKey, reason: "updated" });
    return { run: created.run, created: true };
  };
  // Check-then-create under one lock per key, so concurrent retries of one request make one run.
  return spec.idempotencyKey === undefined
    ? create()
    : ctx.locks.idempotency.run(spec.idempotencyKey, create);
}

function schedule(ctx: GatewayContext, spec: RunSpec, run: RunRecord, input: StoredMessage): void {
  const controller = ctx.runs.register(run.runId, spec.sessionKey);
  ctx.onRunCreated?.(run);
  ctx.tasks.track(ctx.runs.lanes.run(spec.sessionKey, () => executeRun(ctx, run, spec, input, controller)));
}
