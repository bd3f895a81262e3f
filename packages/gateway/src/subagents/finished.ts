import { formatSubagentAnnounce, isAnnounceSkip, normalizeDeliveryContext } from "@sessions/core";
import { interSession } from "../a2a/provenance.js";
import type { DeliveryTarget } from "../adapter.js";
import { unbind } from "../bindings/expiry.js";
import type { GatewayContext } from "../context.js";
import type { LifecycleHooks } from "../lifecycle.js";
import { BudgetExceeded, deadlineNotice, isBudgetExceeded, stoppedAtDeadline } from "../runs/budget.js";
import { causedBy } from "../runs/cause.js";
import { runAndWait } from "../runs/run-and-wait.js";
import { deleteSession, touchEntry } from "../sessions/entries.js";
import type { DeliveryRecord, RunRecord, StoredEntry, SubagentRecord } from "../store/types.js";
import { isToolMessage, toolResultText } from "../transcript.js";

const ANNOUNCE_PREFIX = "subagent-announce:";

function outcomeOf(run: RunRecord): NonNullable<SubagentRecord["outcome"]> {
  if (run.status === "ok") return "ok";
  if (run.status === "timeout") return "timeout";
  if (run.status === "error" || run.status === "aborted") return "error";
  return "unknown";
}

/**
 * A spawned child's run ending (here, or taken over from a gateway that is gone) starts its announce; a `delete`
 * child goes once that announce is delivered or given up.
 */
export function followSubagents(ctx: GatewayContext): Partial<LifecycleHooks> {
  return {
    ended(run, followUps) {
      if (followUps && run.kind === "subagent") ctx.tasks.track(subagentFinished(ctx, run.sessionKey, run));
    },
    deliveryFinal(delivery) {
      if (delivery.kind === "subagent_announce") ctx.tasks.track(cleanupAfterAnnounce(ctx, delivery));
    },
  };
}

/** SPEC 6: the child's announce step, normalised, posted to the requester; then cleanup or archive. */
export async function subagentFinished(ctx: GatewayContext, childKey: string, run: RunRecord): Promise<void> {
  const { store, clock } = ctx;
  const record = await store.getSubagent(childKey);
  if (record === undefined || record.status === "done" || ctx.tasks.closed) return;
  const outcome = outcomeOf(run);
  const endedAt = run.endedAt ?? clock.now();
  await store.putSubagent({
    ...record,
    status: "announcing",
    endedAt,
    outcome,
    ...(run.error ? { error: run.error } : {}),
  });
  const child = await store.getEntry(childKey);
  let announceReply = "";
  let silent = false;
  // The tree's budget stopped the child, or leaves no run for its announce step: the requester is told so.
  let notice = stoppedAtDeadline(run) ? deadlineNotice(run) : undefined;
  if (child !== undefined && notice === undefined) {
    const announce = await runAndWait(ctx, {
      sessionKey: childKey,
      kind: "subagent_announce",
      ...causedBy(run, { kind: "follow_up", runId: run.runId, step: "subagent_announce" }),
      input: {
        role: "user",
        content: `Announce step: the run ended with status ${outcome}${run.error ? ` (${run.error})` : ""}. Summarise for the requester as "Result:" and "Notes:" sections, or reply ANNOUNCE_SKIP to stay silent.`,
        ts: clock.now(),
      },
      system: ["Sub-agent announce step. Reply ANNOUNCE_SKIP to stay silent."],
      tools: null,
    }).catch((error: unknown) => {
      if (isBudgetExceeded(error)) return error;
      throw error;
    });
    if (announce instanceof BudgetExceeded) notice = announce.notice;
    else {
      announceReply = announce.status === "ok" ? (announce.reply ?? "") : "";
      silent = announce.status === "ok" && isAnnounceSkip(announceReply);
    }
    // Closing mid-announce: the record stays "announcing" and the next start announces.
    if (ctx.tasks.closed) return;
  }
  if (notice !== undefined)
    announceReply = `${notice}${run.reply ? `\n\nIts last reply:\n${run.reply}` : ""}`;
  const deliveryId = silent ? undefined : await announceToRequester(ctx, record, child, run, announceReply);
  if (record.mode === "run") {
    for (const binding of await store.listThreadBindings({ sessionKey: childKey }))
      await unbind(ctx, binding, "ended");
  }
  const done: SubagentRecord = {
    ...record,
    status: "done",
    endedAt,
    outcome,
    ...(run.error ? { error: run.error } : {}),
    ...(deliveryId === undefined ? {} : { announceDeliveryId: deliveryId }),
  };
  if (record.cleanup === "keep" && record.mode === "run")
    done.archiveAt = endedAt + ctx.config.agents.defaults.subagents.archiveAfterMinutes * 60_000;
  await store.putSubagent(done);
  if (done.archiveAt !== undefined) ctx.timers.archive.schedule(done.archiveAt);
  if (record.cleanup === "delete") {
    const delivery = deliveryId === undefined ? undefined : await store.getDelivery(deliveryId);
    // A queued announce keeps the child until it is delivered (see `cleanupAfterAnnounce`).
    if (delivery === undefined || delivery.status !== "queued") await deleteSession(ctx, childKey);
  }
}

/** Writes the announce into the requester's transcript and queues it to the thread or the requester's chat. */
async function announceToRequester(
  ctx: GatewayContext,
  record: SubagentRecord,
  child: StoredEntry | undefined,
  run: RunRecord,
  announceReply: string,
): Promise<string | undefined> {
  const { store, clock } = ctx;
  const childKey = record.childKey;
  const reply = announceReply.trim() !== "" ? announceReply : (run.reply ?? "");
  const lastTool =
    child === undefined
      ? undefined
      : (await store.readMessages(childKey, { limit: 20 })).reverse().find(isToolMessage);
  const transcriptPath = child === undefined ? undefined : store.transcriptPath?.(child.sessionId);
  const text = formatSubagentAnnounce({
    outcome: { status: outcomeOf(run), ...(run.error ? { error: run.error } : {}) },
    reply,
    ...(lastTool === undefined ? {} : { fallbackResult: toolResultText(lastTool) }),
    stats: {
      runtimeMs: (run.endedAt ?? clock.now()) - (run.startedAt ?? run.createdAt),
      ...(child?.inputTokens === undefined ? {} : { inputTokens: child.inputTokens }),
      ...(child?.outputTokens === undefined ? {} : { outputTokens: child.outputTokens }),
      ...(child?.totalTokens === undefined ? {} : { totalTokens: child.totalTokens }),
      ...(run.usage?.costUsd === undefined ? {} : { costUsd: run.usage.costUsd }),
      sessionKey: childKey,
      ...(child === undefined ? {} : { sessionId: child.sessionId }),
      ...(transcriptPath === undefined ? {} : { transcriptPath }),
    },
  });
  const requester = await store.getEntry(record.requesterKey);
  if (requester !== undefined) {
    await store.appendMessage(record.requesterKey, {
      role: "user",
      content: text,
      ts: clock.now(),
      provenance: interSession(childKey, undefined, "sessions_spawn", run.hops),
    });
    await touchEntry(ctx, record.requesterKey);
  }
  const binding = (await store.listThreadBindings({ sessionKey: childKey }))[0];
  const target =
    binding !== undefined
      ? { channel: binding.channel, to: binding.to, accountId: binding.accountId, threadId: binding.threadId }
      : normalizeDeliveryContext(requester?.deliveryContext);
  if (target?.channel === undefined || target.to === undefined) return undefined;
  const delivery = await ctx.outbox.enqueue({
    idempotencyKey: `${ANNOUNCE_PREFIX}${childKey}`,
    kind: "subagent_announce",
    sessionKey: record.requesterKey,
    runId: run.runId,
    target: target as DeliveryTarget,
    text,
  });
  return delivery.id;
}

/** After a `cleanup: "delete"` child's announce is delivered (or gave up), the child goes. */
async function cleanupAfterAnnounce(ctx: GatewayContext, delivery: DeliveryRecord): Promise<void> {
  const childKey = delivery.idempotencyKey.slice(ANNOUNCE_PREFIX.length);
  const record = await ctx.store.getSubagent(childKey);
  if (record?.cleanup === "delete" && record.status === "done") await deleteSession(ctx, childKey);
}
