import { assistantMessage } from "@sessions/core";
import type { GatewayContext } from "../context.js";
import type { AgentRunEvent } from "../runner/types.js";
import type { RunRecord } from "../store/types.js";

type EventContext = Pick<GatewayContext, "runs" | "clock" | "emit" | "listening">;

/** No one hears events now: they are not built (nor numbered). */
const unheard = (ctx: EventContext) => ctx.listening?.() === false;

export function emitStart(ctx: EventContext, run: RunRecord): void {
  if (unheard(ctx)) return;
  ctx.emit({
    type: "agent",
    runId: run.runId,
    seq: ctx.runs.nextSeq(run.runId),
    stream: "lifecycle",
    ts: ctx.clock.now(),
    data: { phase: "start" },
  });
}

/** A runner's streamed output as `chat` deltas and `agent` assistant/tool events. */
export function emitRunnerEvent(ctx: EventContext, run: RunRecord, event: AgentRunEvent): void {
  if (unheard(ctx)) return;
  if (event.type === "text-delta") {
    ctx.emit({
      type: "chat",
      runId: run.runId,
      sessionKey: run.sessionKey,
      seq: ctx.runs.nextSeq(run.runId),
      state: "delta",
      deltaText: event.text,
    });
    ctx.emit({
      type: "agent",
      runId: run.runId,
      seq: ctx.runs.nextSeq(run.runId),
      stream: "assistant",
      ts: ctx.clock.now(),
      data: { text: event.text },
    });
  } else {
    ctx.emit({
      type: "agent",
      runId: run.runId,
      seq: ctx.runs.nextSeq(run.runId),
      stream: "tool",
      ts: ctx.clock.now(),
      data: event,
    });
  }
}

/** A call of the run refused by its tree's guards (hop limit, loop): operators and subscribers see why. */
export function emitGuard(
  ctx: EventContext,
  runId: string,
  refusal: { code: string; limit: number; chain: readonly string[]; error: string },
): void {
  if (unheard(ctx)) return;
  ctx.emit({
    type: "agent",
    runId,
    seq: ctx.runs.nextSeq(runId),
    stream: "guard",
    ts: ctx.clock.now(),
    data: { code: refusal.code, limit: refusal.limit, chain: [...refusal.chain], error: refusal.error },
  });
}

/** The end of a run: the lifecycle end first (stream readers that stop at the final chat event still see it). */
export function emitFinal(ctx: EventContext, run: RunRecord): void {
  if (unheard(ctx)) {
    ctx.runs.forgetSeq(run.runId);
    return;
  }
  const state = run.status === "ok" ? "final" : run.status === "aborted" ? "aborted" : "error";
  ctx.emit({
    type: "agent",
    runId: run.runId,
    seq: ctx.runs.nextSeq(run.runId),
    stream: "lifecycle",
    ts: ctx.clock.now(),
    data: {
      phase: run.status === "ok" ? "end" : "error",
      status: run.status,
      ...(run.error ? { error: run.error } : {}),
      // Taken into another run of its session (queue modes collect, steer, interrupt): that run answers for it.
      ...(run.mergedInto ? { mergedInto: run.mergedInto } : {}),
    },
  });
  ctx.emit({
    type: "chat",
    runId: run.runId,
    sessionKey: run.sessionKey,
    seq: ctx.runs.nextSeq(run.runId),
    state,
    // OpenClaw's shape: { role: "assistant", content: [{ type: "text", text }] }.
    ...(run.reply ? { message: assistantMessage(run.reply) } : {}),
    ...(run.error ? { errorMessage: run.error } : {}),
  });
  ctx.runs.forgetSeq(run.runId);
}
