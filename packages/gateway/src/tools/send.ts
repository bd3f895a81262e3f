import type { parseToolParams, SessionsSendResult } from "@sessions/core";
import { agentToAgentContext, interSession } from "../a2a/provenance.js";
import { announceDeliveryId, nothingAnnounced } from "../a2a/receipt.js";
import type { GatewayContext } from "../context.js";
import { remoteTarget } from "../remotes/remote-target.js";
import { isBudgetExceeded, stoppedAtDeadline } from "../runs/budget.js";
import { type ToolCall, toolCause } from "../runs/cause.js";
import { startRun } from "../runs/start.js";
import { isFinal, waitRun } from "../runs/wait.js";
import { channelFor } from "../sessions/entries.js";
import type { StoredEntry } from "../store/types.js";
import { budgetRefusal, type GuardRefusal, GuardRefused, guardTree, noteGuard } from "./guards.js";
import { displayKey, resolveTarget } from "./resolve.js";
import { type ToolContext, toolContextFor } from "./tool-context.js";

type SendParams = ReturnType<typeof parseToolParams<"sessions_send">>;

/** `sessions_send` (SPEC 5): a run in the target session, optionally waited for; reply-back and announce follow. */
export async function sendTool(
  ctx: GatewayContext,
  tool: ToolContext,
  params: SendParams & { sessionKey: string },
  call?: ToolCall,
): Promise<SessionsSendResult> {
  const resolved =
    (await remoteTarget(ctx, tool, params.sessionKey)) ??
    (await resolveTarget(ctx, tool, params.sessionKey, "send"));
  if (!("entry" in resolved)) return resolved;
  return sendTo(ctx, tool, resolved.entry, params, call);
}

/** `sessions_send` to `target`, a session the requester may send to. */
export async function sendTo(
  ctx: GatewayContext,
  tool: ToolContext,
  target: StoredEntry,
  params: Pick<SendParams, "message" | "timeoutSeconds">,
  call?: ToolCall,
): Promise<SessionsSendResult> {
  const sourceChannel = await channelFor(ctx, tool.requesterKey);
  const place = toolCause(call, "sessions_send", tool.traceparent);
  const started = await startRun(ctx, {
    sessionKey: target.key,
    kind: "inter_session",
    ...place,
    input: {
      role: "user",
      content: params.message,
      ts: ctx.clock.now(),
      provenance: interSession(tool.requesterKey, sourceChannel, "sessions_send", place.hops),
    },
    system: [agentToAgentContext(tool.requesterKey, sourceChannel, target.key)],
    tools: toolContextFor(ctx, target, target.key, false),
    followUp: {
      kind: "agent_to_agent",
      requesterKey: tool.requesterKey,
      requesterChannel: sourceChannel,
      request: params.message,
    },
    // Checked with the start, one start of the tree at a time: parallel sends of one step cannot both pass.
    guard: async () => {
      const refused = await guardTree(ctx, tool, call, target.key, "sessions_send");
      if (refused !== undefined) throw new GuardRefused(refused);
    },
  }).catch(async (error: unknown) => {
    let refusal: GuardRefusal;
    if (error instanceof GuardRefused) refusal = error.refusal;
    else if (isBudgetExceeded(error))
      refusal = await budgetRefusal(ctx, call, target.key, "sessions_send", error);
    else throw error;
    if (call !== undefined) noteGuard(ctx, call.run.runId, "sessions_send", refusal);
    return refusal;
  });
  if (!("run" in started)) return started;
  const { run } = started;
  const sessionKey = displayKey(ctx, tool, target.key);
  const pending = { id: announceDeliveryId(run.runId), status: "pending" as const };
  if (params.timeoutSeconds === 0) {
    return { runId: run.runId, status: "accepted", sessionKey, delivery: pending };
  }
  const waited = await waitRun(ctx, run.runId, params.timeoutSeconds * 1000);
  if (waited.status === "ok") {
    return {
      runId: run.runId,
      status: "ok",
      sessionKey,
      ...(waited.reply ? { reply: waited.reply } : {}),
      delivery: pending,
    };
  }
  if (waited.status === "timeout" && waited.endedAt === undefined) {
    return {
      runId: run.runId,
      status: "timeout",
      sessionKey,
      error: `No reply within ${params.timeoutSeconds}s; the run continues — read its result later with sessions_history`,
      delivery: pending,
    };
  }
  // What the follow-up decides from the run as recorded (a wait reports an aborted run as an error, say).
  const ended = await ctx.store.getRun(run.runId);
  const outcome = ended !== undefined && isFinal(ended.status) ? ended : waited;
  return {
    runId: run.runId,
    status: "error",
    sessionKey,
    error: waited.error ?? "run failed",
    // Stopped at its tree's budget deadline, the follow-up posts a notice under this id: it is still to come.
    // Otherwise the follow-up records this receipt as suppressed, with the same reason.
    delivery:
      ended !== undefined && stoppedAtDeadline(ended)
        ? pending
        : { ...pending, status: "suppressed", reason: nothingAnnounced(outcome) },
  };
}
