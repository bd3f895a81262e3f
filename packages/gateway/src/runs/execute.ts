import { SessionsError } from "@sessions/core";
import type { DeliveryTarget } from "../adapter.js";
import type { GatewayContext } from "../context.js";
import type { AgentRunEvent } from "../runner/types.js";
import { touchEntry } from "../sessions/entries.js";
import type { RunRecord, StoredMessage } from "../store/types.js";
import { buildTools } from "../tools/build.js";
import { emitFinal, emitRunnerEvent, emitStart } from "./run-events.js";
import { RunAborted, RunTimeout } from "./run-table.js";
import type { RunSpec } from "./start.js";

/**
 * Runs one queued run on its lane: marks it running, hands the runner the history window and tools, records the
 * reply and usage, queues the reply's delivery, records the end and wakes waiters, then starts `onSettled`.
 */
export async function executeRun(
  ctx: GatewayContext,
  queued: RunRecord,
  spec: RunSpec,
  input: StoredMessage,
  controller: AbortController,
): Promise<RunRecord> {
  const { store, clock } = ctx;
  const release = spec.subagentSlot ? await ctx.runs.subagentSlots.acquire() : undefined;
  let timer: unknown;
  let run: RunRecord = { ...queued, status: "running", startedAt: clock.now() };
  try {
    if (ctx.tasks.closed) throw new SessionsError("unavailable", "gateway closed before the run started");
    if (controller.signal.aborted) throw controller.signal.reason;
    const latest = await store.getRun(queued.runId);
    if (latest !== undefined && latest.status !== "queued") return latest;
    await store.putRun(run);
    emitStart(ctx, run);
    if (spec.timeoutMs !== undefined && spec.timeoutMs > 0) {
      const seconds = Math.round(spec.timeoutMs / 1000);
      timer = clock.setTimeout(() => controller.abort(new RunTimeout(seconds)), spec.timeoutMs);
    }
    const entry = await store.getEntry(spec.sessionKey);
    const history = await store.readMessages(spec.sessionKey, {
      limit: ctx.historyWindow,
      beforeSeq: input.seq + 1,
    });
    const tools = spec.tools === null ? [] : buildTools(ctx, spec.tools, run.runId);
    const aborted = new Promise<never>((_, reject) => {
      if (controller.signal.aborted) reject(controller.signal.reason);
      controller.signal.addEventListener("abort", () => reject(controller.signal.reason), { once: true });
    });
    aborted.catch(() => {});
    const model = spec.model ?? entry?.model;
    const thinking = spec.thinking ?? entry?.thinkingLevel;
    const result = await Promise.race([
      ctx.runner.run({
        runId: run.runId,
        agentId: run.agentId,
        sessionKey: spec.sessionKey,
        kind: spec.kind,
        ...(model === undefined ? {} : { model }),
        ...(thinking === undefined ? {} : { thinking }),
        messages: history,
        input,
        system: spec.system ?? [],
        tools,
        signal: controller.signal,
        emit: (event: AgentRunEvent) => emitRunnerEvent(ctx, run, event),
      }),
      aborted,
    ]);
    const reply = typeof result?.reply === "string" ? result.reply : "";
    if (reply.trim() !== "") {
      await store.appendMessage(spec.sessionKey, {
        role: "assistant",
        content: reply,
        ts: clock.now(),
        runId: run.runId,
      });
    }
    run = { ...run, status: "ok", endedAt: clock.now(), reply };
    const usage = result?.usage;
    if (usage !== undefined) run.usage = usage;
    await touchEntry(ctx, spec.sessionKey, {
      ...(usage?.inputTokens === undefined
        ? {}
        : { inputTokens: (entry?.inputTokens ?? 0) + usage.inputTokens }),
      ...(usage?.outputTokens === undefined
        ? {}
        : { outputTokens: (entry?.outputTokens ?? 0) + usage.outputTokens }),
      ...(usage?.totalTokens === undefined
        ? {}
        : { totalTokens: (entry?.totalTokens ?? 0) + usage.totalTokens }),
      ...(entry?.abortedLastRun ? { abortedLastRun: false } : {}),
      systemSent: true,
    });
  } catch (error) {
    const reason = controller.signal.aborted ? controller.signal.reason : error;
    const endedAt = clock.now();
    if (reason instanceof RunTimeout) run = { ...run, status: "timeout", error: reason.message, endedAt };
    else if (reason instanceof RunAborted)
      run = { ...run, status: "aborted", error: reason.message, endedAt };
    else
      run = {
        ...run,
        status: "error",
        error: error instanceof Error ? error.message : String(error),
        endedAt,
      };
    if (run.status === "aborted") await touchEntry(ctx, spec.sessionKey, { abortedLastRun: true });
  } finally {
    if (timer !== undefined) clock.clearTimeout(timer);
    ctx.runs.unregister(queued.runId);
    release?.();
  }
  // The reply is queued before the run is recorded as ok, so a crash in between cannot lose it.
  if (run.status === "ok" && run.reply && run.deliverTo?.channel && run.deliverTo.to) {
    await ctx.outbox.enqueue({
      idempotencyKey: `reply:${run.runId}`,
      kind: "reply",
      sessionKey: run.sessionKey,
      runId: run.runId,
      target: run.deliverTo as DeliveryTarget,
      text: run.reply,
    });
  }
  await store.putRun(run);
  emitFinal(ctx, run);
  ctx.runs.settle(run);
  if (spec.onSettled !== undefined) ctx.tasks.track(spec.onSettled(run));
  return run;
}
