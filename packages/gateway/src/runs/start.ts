import { randomUUID } from "node:crypto";
import { type DeliveryContext, parseSessionKey, SessionsError, type TranscriptMessage } from "@sessions/core";
import type { GatewayContext } from "../context.js";
import { touchEntry } from "../sessions/entries.js";
import type { RunKind, RunRecord } from "../store/types.js";
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
 * Records the input message and a queued run, then queues it on its session's lane. With an idempotency key, a
 * repeat returns the first run (`created: false`) instead of starting another.
 */
export async function startRun(
  ctx: GatewayContext,
  spec: RunSpec,
): Promise<{ run: RunRecord; created: boolean }> {
  if (ctx.tasks.closed)
    throw new SessionsError("unavailable", "The gateway is closing", { retryAfterMs: 1000 });
  const { store } = ctx;
  const create = async (): Promise<{ run: RunRecord; created: boolean }> => {
    if (spec.idempotencyKey !== undefined) {
      const existing = await store.findRunByIdempotencyKey(spec.idempotencyKey);
      if (existing !== undefined) return { run: existing, created: false };
    }
    const runId = spec.runId ?? randomUUID();
    const stored = await store.appendMessage(spec.sessionKey, { ...spec.input, runId });
    const run: RunRecord = {
      runId,
      sessionKey: spec.sessionKey,
      agentId: parseSessionKey(spec.sessionKey)?.agentId ?? "main",
      kind: spec.kind,
      status: "queued",
      createdAt: ctx.clock.now(),
      inputSeq: stored.seq,
    };
    if (spec.idempotencyKey !== undefined) run.idempotencyKey = spec.idempotencyKey;
    if (spec.deliverTo !== undefined) run.deliverTo = spec.deliverTo;
    if (spec.followUp !== undefined) run.followUp = spec.followUp;
    await store.putRun(run);
    await touchEntry(ctx, spec.sessionKey);
    const controller = ctx.runs.register(runId, spec.sessionKey);
    ctx.tasks.track(
      ctx.runs.lanes.run(spec.sessionKey, () => executeRun(ctx, run, spec, stored, controller)),
    );
    return { run, created: true };
  };
  // Check-then-create under one lock per key, so concurrent retries of one request make one run.
  return spec.idempotencyKey === undefined
    ? create()
    : ctx.locks.idempotency.run(spec.idempotencyKey, create);
}
