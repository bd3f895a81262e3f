import { isAnnounceSkip, isReplySkip, resolveAnnounceTarget } from "@sessions/core";
import type { GatewayContext } from "../context.js";
import type { LifecycleHooks } from "../lifecycle.js";
import { BudgetExceeded, deadlineNotice, isBudgetExceeded, stoppedAtDeadline } from "../runs/budget.js";
import { causedBy } from "../runs/cause.js";
import { runAndWait } from "../runs/run-and-wait.js";
import { channelFor } from "../sessions/entries.js";
import type { RunRecord } from "../store/types.js";
import { untilStored } from "../store/until-stored.js";
import { toolContextFor } from "../tools/tool-context.js";
import { agentToAgentContext, interSession } from "./provenance.js";
import { announceDeliveryId, nothingAnnounced } from "./receipt.js";

/** The reply-back loop and announce step follow every `sessions_send` run this gateway ends (or takes over). */
export function followAgentToAgent(ctx: GatewayContext): Partial<LifecycleHooks> {
  return {
    ended(run, followUps) {
      if (followUps && run.followUp?.kind === "agent_to_agent" && run.followUpDone !== true)
        ctx.tasks.track(followUpOf(ctx, run));
    },
  };
}

/**
 * The follow-up of a `sessions_send` run, which ends in an outcome whatever happens: when a step fails (the gateway
 * staying up), the announce is recorded suppressed with the failure as its reason and the follow-up marked done, so
 * the sender's receipt resolves instead of reading `pending` until a restart. An announce already queued stands (the
 * same delivery key). A closing gateway leaves it to the next start, which resumes it.
 */
async function followUpOf(ctx: GatewayContext, primary: RunRecord): Promise<void> {
  try {
    await agentToAgentFlow(ctx, primary);
  } catch (error) {
    if (ctx.tasks.closed) return;
    const message = error instanceof Error ? error.message : String(error);
    ctx.logger.error("the follow-up of a sessions_send failed", { runId: primary.runId, error: message });
    const settle = async () => {
      // The session's channel if it can still be read; the record is what matters.
      const channel = await channelFor(ctx, primary.sessionKey).catch(() => "unknown");
      // The outcome and "done" in one unit: whoever reads the receipt resolved finds the follow-up done too, and a
      // crash between them cannot leave one without the other.
      const recorded = await ctx.store.transaction(async (tx) => {
        const delivery = await ctx.outbox.record(
          suppressedAnnounce(primary, channel, `the announce step failed: ${message}`),
          tx,
        );
        const latest = await tx.getRun(primary.runId);
        if (latest !== undefined) await tx.putRun({ ...latest, followUpDone: true });
        return delivery;
      });
      recorded.committed();
    };
    await untilStored(settle, { clock: ctx.clock, stop: () => ctx.tasks.closed }).catch((failed: unknown) =>
      ctx.logger.error("could not record the failed follow-up", {
        runId: primary.runId,
        error: String(failed),
      }),
    );
  }
}

/** Runs the follow-up of a `sessions_send` run and marks it done (so a restart resumes it only if needed). */
export async function agentToAgentFlow(ctx: GatewayContext, primary: RunRecord): Promise<void> {
  const followUp = primary.followUp;
  if (followUp === undefined || ctx.tasks.closed) return;
  if (primary.status === "ok") {
    await replyBackAndAnnounce(
      ctx,
      followUp.requesterKey,
      followUp.requesterChannel,
      followUp.request,
      primary,
    );
  } else if (stoppedAtDeadline(primary)) {
    // Stopped by its tree's budget: where the announce would have gone is told so.
    await announceNotice(ctx, primary, deadlineNotice(primary));
  } else {
    // No reply-back and no announce: the receipt the sender holds says why.
    const channel = await channelFor(ctx, primary.sessionKey);
    await ctx.outbox.enqueue(suppressedAnnounce(primary, channel, nothingAnnounced(primary)));
  }
  if (ctx.tasks.closed) return;
  await markFollowUpDone(ctx, primary.runId);
}

/** Records that a `sessions_send` run's follow-up is done: a restart does not resume it. */
async function markFollowUpDone(ctx: GatewayContext, runId: string): Promise<void> {
  const latest = await ctx.store.getRun(runId);
  if (latest !== undefined) await ctx.store.putRun({ ...latest, followUpDone: true });
}

/** SPEC 5: reply-back ping-pong between the two sessions, then the announce step (target agent only). */
async function replyBackAndAnnounce(
  ctx: GatewayContext,
  requesterKey: string,
  requesterChannel: string,
  request: string,
  primary: RunRecord,
): Promise<void> {
  const { store, clock } = ctx;
  const targetKey = primary.sessionKey;
  const round1 = primary.reply ?? "";
  let latest = round1;
  const targetChannel = await channelFor(ctx, targetKey);
  const maxTurns = ctx.config.session.agentToAgent.maxPingPongTurns;
  if (round1.trim() !== "" && !isReplySkip(round1) && requesterKey !== targetKey) {
    for (let turn = 1; turn <= maxTurns && !ctx.tasks.closed; turn++) {
      const toRequester = turn % 2 === 1;
      const speaker = toRequester ? requesterKey : targetKey;
      const from = toRequester ? targetKey : requesterKey;
      const fromChannel = toRequester ? targetChannel : requesterChannel;
      const speakerEntry = await store.getEntry(speaker);
      if (speakerEntry === undefined) break;
      const run = await budgeted(
        runAndWait(ctx, {
          sessionKey: speaker,
          kind: "ping_pong",
          ...causedBy(primary, { kind: "follow_up", runId: primary.runId, step: "reply_back", turn }),
          input: {
            role: "user",
            content: latest,
            ts: clock.now(),
            provenance: interSession(from, fromChannel, "sessions_send", primary.hops),
          },
          system: [
            agentToAgentContext(from, fromChannel, speaker),
            `Reply-back turn ${turn} of at most ${maxTurns}. Reply REPLY_SKIP to end the conversation.`,
          ],
          tools: toolContextFor(ctx, speakerEntry, speaker, false),
        }),
      );
      if (run instanceof BudgetExceeded) {
        // The tree's budget is spent: no more turns, and no announce either.
        await announceNotice(ctx, primary, run.notice);
        return;
      }
      const reply = run.reply ?? "";
      if (run.status !== "ok" || reply.trim() === "" || isReplySkip(reply)) break;
      latest = reply;
    }
  }
  if (ctx.tasks.closed) return;
  if (ctx.remotes.of(targetKey) !== undefined) {
    // A remote agent's session has no chat here to announce into, and its agent no announce step.
    await ctx.outbox.enqueue(
      suppressedAnnounce(primary, targetChannel, "the target is a remote agent (A2A)"),
    );
    return;
  }
  const targetEntry = await store.getEntry(targetKey);
  if (targetEntry === undefined) {
    await ctx.outbox.enqueue(suppressedAnnounce(primary, targetChannel, "target session deleted"));
    return;
  }
  const announce = await budgeted(
    runAndWait(ctx, {
      sessionKey: targetKey,
      kind: "announce",
      ...causedBy(primary, { kind: "follow_up", runId: primary.runId, step: "announce" }),
      input: {
        role: "user",
        content: [
          "Agent-to-agent announce step.",
          `Original request from ${requesterKey}:`,
          request,
          "",
          "Round 1 reply:",
          round1,
          "",
          "Latest reply:",
          latest,
        ].join("\n"),
        ts: clock.now(),
        provenance: interSession(requesterKey, requesterChannel, "sessions_send", primary.hops),
      },
      system: [
        "Announce step: reply ANNOUNCE_SKIP to stay silent; any other reply is posted to this session's channel.",
      ],
      tools: null,
    }),
  );
  if (announce instanceof BudgetExceeded) {
    await announceNotice(ctx, primary, announce.notice);
    return;
  }
  // A gateway that is closing leaves the announce to the next start (the run's follow-up stays pending).
  if (ctx.tasks.closed) return;
  if (stoppedAtDeadline(announce)) {
    // The announce step itself ran into its tree's budget deadline: the target's channel is told so.
    await announceNotice(ctx, primary, deadlineNotice(primary));
    return;
  }
  const text = announce.reply ?? "";
  if (announce.status !== "ok" || text.trim() === "" || isAnnounceSkip(text)) {
    const reason = announce.status !== "ok" ? `announce step ${announce.status}` : "ANNOUNCE_SKIP";
    await ctx.outbox.enqueue(suppressedAnnounce(primary, targetChannel, reason, text));
    return;
  }
  const target = resolveAnnounceTarget(targetKey, targetEntry);
  if (target === null) {
    const reason = "target session has no delivery context";
    await ctx.outbox.enqueue(suppressedAnnounce(primary, targetChannel, reason, text));
    return;
  }
  await ctx.outbox.enqueue({ ...announceDelivery(primary), target, text });
}

/** A follow-up run, or the refusal of a tree whose budget is spent. */
const budgeted = (started: Promise<RunRecord>): Promise<RunRecord | BudgetExceeded> =>
  started.catch((error: unknown) => {
    if (isBudgetExceeded(error)) return error;
    throw error;
  });

/**
 * Instead of the announce of a `sessions_send` run whose tree's budget is spent: a notice that says so, posted where
 * the announce would have gone (the target session's channel), under the announce's id, so the sender's receipt
 * resolves to it. Without a delivery context it is recorded suppressed with the notice as its reason.
 */
async function announceNotice(ctx: GatewayContext, primary: RunRecord, notice: string): Promise<void> {
  const entry = await ctx.store.getEntry(primary.sessionKey);
  const target = entry === undefined ? null : resolveAnnounceTarget(primary.sessionKey, entry);
  if (target === null) {
    const channel = await channelFor(ctx, primary.sessionKey);
    await ctx.outbox.enqueue(suppressedAnnounce(primary, channel, notice, notice));
    return;
  }
  await ctx.outbox.enqueue({ ...announceDelivery(primary), target, text: notice });
}

/** The announce of a `sessions_send` run recorded as not sent, for `reason`, on the target session's `channel`. */
function suppressedAnnounce(primary: RunRecord, channel: string, reason: string, text = "") {
  return { ...announceDelivery(primary), target: { channel, to: "-" }, text, suppressedReason: reason };
}

/** The announce delivery of a `sessions_send` run: one per run, under the id its sender was given. */
function announceDelivery(primary: RunRecord) {
  return {
    id: announceDeliveryId(primary.runId),
    idempotencyKey: `announce:${primary.runId}`,
    kind: "announce" as const,
    sessionKey: primary.sessionKey,
    runId: primary.runId,
  };
}
