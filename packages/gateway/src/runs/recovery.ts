import { parseSessionKey } from "@sessions/core";
import type { GatewayContext } from "../context.js";
import { previewRemoval } from "../delivery/streams.js";
import { cancelOrphanedTask } from "../remotes/remote-run.js";
import type {
  DeliveryRecord,
  RerunRecord,
  RunRecord,
  StoredMessage,
  SubagentRecord,
} from "../store/types.js";
import { inputOf } from "./absorb.js";
import { type Gone, ownerLiveness } from "./ownership.js";
import { resumeRun } from "./start.js";
import { isFinal } from "./wait.js";

/** How many queued deliveries one pass looks at to free the claims of gone gateways. */
const DELIVERY_SCAN = 10_000;
/** Interrupted runs ended per unit of work. */
const RUNS_PER_UNIT = 200;

/** How long a run of this gateway's that it never scheduled may wait for its request to be retried here. */
const LOST_START_MS = 60_000;

/**
 * Whether `run` is this gateway's, recorded over a minute ago and still not scheduled here: the store committed its
 * start and failed to answer (a database dying after the COMMIT). A retry of its request on this gateway runs it
 * (`startRun`); without one, nothing ever would, so recovery ends it as an error and its waiters hear why.
 */
function lostStart(ctx: GatewayContext, run: RunRecord): boolean {
  return (
    run.owner === ctx.owner &&
    ctx.runs.localRun(run.runId) === undefined &&
    ctx.clock.now() - run.createdAt > LOST_START_MS
  );
}

/**
 * Whether a sub-agent whose run was never recorded was lost: the gateway that spawned it is gone (a record that
 * does not name it, written before records did: after `LOST_START_MS`). Until then its run's start may still come.
 */
async function spawnLost(
  ctx: GatewayContext,
  record: SubagentRecord,
  gone: ReturnType<typeof ownerLiveness>,
): Promise<boolean> {
  if (record.owner === undefined) return ctx.clock.now() - record.createdAt > LOST_START_MS;
  // This gateway's own spawn is still on its way (a restart makes a new instance, whose records are not these).
  if (record.owner === ctx.owner) return false;
  return (await gone(record.owner, record.createdAt)) !== false;
}

/** When a run's owner last wrote it, as far as its record says. */
const lastWrite = (run: RunRecord): number => run.endedAt ?? run.startedAt ?? run.createdAt;

/** How many times a run is run again after its gateway lost the store mid-run before it ends as an error. */
export const MAX_REPEATS = 3;

/** Whether a run whose gateway lost the store can run again elsewhere: what it needs was recorded, repeats left. */
function rerunnable(run: RunRecord): run is RunRecord & { rerun: RerunRecord } {
  return run.rerun !== undefined && run.inputSeq !== undefined && (run.repeats ?? 0) < MAX_REPEATS;
}

/** Why recovery ends a run whose gateway is gone: what is known of how it went, and where the run was. */
function orphanError(run: RunRecord, how: Gone): string {
  const { status } = run;
  if (how === "stopped")
    return status === "running"
      ? "gateway restarted while the run was in progress"
      : "gateway restarted before the run started";
  if ((run.repeats ?? 0) >= MAX_REPEATS)
    return `its gateway lost the store while the run was in progress, and it had run again ${MAX_REPEATS} times already`;
  return status === "running"
    ? "its gateway stopped renewing its lease while the run was in progress (it stopped, froze or lost the store)"
    : "its gateway stopped renewing its lease before the run started (it stopped, froze or lost the store)";
}

/**
 * Makes this gateway the owner of `run`, whose owner is gone, unless another gateway (recovering at the same
 * time) got there first: one unit of work re-reads it, so of several gateways exactly one resumes its work.
 */
async function takeOver(
  ctx: GatewayContext,
  run: RunRecord,
  stored: boolean,
): Promise<RunRecord | undefined> {
  return ctx.store.transaction(async (tx) => {
    const latest = await tx.getRun(run.runId);
    if (stored ? latest === undefined || latest.owner !== run.owner : latest !== undefined) return undefined;
    const mine: RunRecord = { ...(latest ?? run), owner: ctx.owner };
    await tx.putRun(mine);
    return mine;
  });
}

/**
 * For work whose owner is gone (its gateway lease lapsed or its process died) — at start, and in cluster mode on
 * every recovery pass: runs left queued or running by a gateway that lost the store (its lease lapsed) run again
 * here, taken over with their record (`RunRecord.rerun`), up to `MAX_REPEATS` times; a dead gateway's end as
 * errors (so do this gateway's own lost starts);
 * sub-agents whose run ended get their announce; `sessions_send` follow-ups resume; deliveries it had claimed are
 * freed (first) and sent. Each is taken over in a unit of work that re-reads it, so when several gateways recover
 * at once exactly one does each; and each step after is keyed, so none happens twice.
 */
export async function recoverRuns(ctx: GatewayContext): Promise<void> {
  const { store, clock } = ctx;
  const gone = ownerLiveness({ ...ctx, lapsedBefore: ctx.cluster?.lapsedBefore });
  // Deliveries first: they are what people wait for, and another gateway can send them at once.
  let freed = 0;
  for (const delivery of await store.listQueuedDeliveries(DELIVERY_SCAN)) {
    if (delivery.leaseOwner === undefined || !(await gone(delivery.leaseOwner))) continue;
    const { leaseOwner: _owner, leaseUntil: _until, ...free } = delivery;
    await store.putDelivery(free);
    freed++;
  }
  if (freed > 0) await ctx.outbox.replay();
  const orphans: RunRecord[] = [];
  const how = new Map<string, Gone>();
  for (const run of await store.listRunsByStatus(["queued", "running"])) {
    const ownerGone = await gone(run.owner, run.startedAt ?? run.createdAt);
    if (ownerGone !== false) how.set(run.runId, ownerGone);
    if (ownerGone !== false || lostStart(ctx, run)) orphans.push(run);
  }
  // Runs of a gateway that lost the store (its lease lapsed; it stopped them at its deadline) run again here.
  const inputs = new Map<string, StoredMessage>();
  for (const run of orphans) {
    if (how.get(run.runId) !== "lapsed" || !rerunnable(run)) continue;
    const input = await inputOf(store, run);
    if (input !== undefined) inputs.set(run.runId, input);
  }
  const resumed: { run: RunRecord & { rerun: RerunRecord }; repeat: boolean }[] = [];
  // Runs ended here: those of remote agents' sessions get their task at the remote cancelled.
  const ended: RunRecord[] = [];
  // The messages the replies of runs ended here had streamed into, removed once their end is committed.
  const removals: { record: DeliveryRecord; created: boolean }[] = [];
  // A few units of work for all of them (not one per run): a dead gateway may leave many.
  for (let i = 0; i < orphans.length; i += RUNS_PER_UNIT) {
    const taken: typeof resumed = [];
    const removed: typeof removals = [];
    const endedHere: RunRecord[] = [];
    await store.transaction(async (tx) => {
      taken.length = 0;
      removed.length = 0;
      endedHere.length = 0;
      for (const run of orphans.slice(i, i + RUNS_PER_UNIT)) {
        const latest = await tx.getRun(run.runId);
        if (latest === undefined || isFinal(latest.status) || latest.owner !== run.owner) continue;
        const lost = latest.owner === ctx.owner;
        if (lost && !lostStart(ctx, latest)) continue;
        if (!lost && inputs.has(latest.runId) && rerunnable(latest)) {
          const { startedAt: _started, ...rest } = latest;
          const mine = { ...rest, owner: ctx.owner, status: "queued" as const };
          if (latest.status === "running") mine.repeats = (latest.repeats ?? 0) + 1;
          await tx.putRun(mine);
          taken.push({ run: mine, repeat: latest.status === "running" });
          continue;
        }
        await tx.putRun({
          ...latest,
          status: "error",
          endedAt: clock.now(),
          error: lost
            ? "the store did not answer when the run was recorded, and the request was not retried: it never ran"
            : orphanError(latest, how.get(latest.runId) ?? "stopped"),
        });
        endedHere.push(latest);
        const removal = previewRemoval(latest);
        if (removal !== undefined) removed.push(await tx.enqueueDelivery(ctx.outbox.draft(removal)));
      }
    });
    resumed.push(...taken);
    removals.push(...removed);
    ended.push(...endedHere);
  }
  for (const removal of removals) ctx.outbox.committed(removal);
  for (const run of ended) {
    await cancelOrphanedTask(ctx, run).catch((error: unknown) =>
      ctx.logger.warn("could not cancel the remote task of a run ended by recovery", {
        runId: run.runId,
        error: String(error),
      }),
    );
  }
  for (const { run, repeat } of resumed) {
    ctx.logger.warn("running again a run whose gateway lost the store", { runId: run.runId, repeat });
    resumeRun(ctx, run, inputs.get(run.runId) as StoredMessage, repeat);
  }
  for (const record of await store.listSubagents({ statuses: ["running", "announcing"] })) {
    const stored = await store.getRun(record.runId);
    if (stored !== undefined && !(await gone(stored.owner, lastWrite(stored)))) continue;
    // No run yet: its spawn may still be on its way to recording it (a budget or a thread binding first).
    if (stored === undefined && !(await spawnLost(ctx, record, gone))) continue;
    // A record whose run never got written (a crash between the two) ended as an error all the same.
    const run: RunRecord = stored ?? {
      runId: record.runId,
      sessionKey: record.childKey,
      agentId: parseSessionKey(record.childKey)?.agentId ?? "main",
      kind: "subagent",
      status: "error",
      createdAt: record.createdAt,
      endedAt: clock.now(),
      error: "gateway restarted before the run started",
    };
    if (!isFinal(run.status)) continue;
    const mine = await takeOver(ctx, run, stored !== undefined);
    if (mine === undefined) continue;
    await store.putSubagent({ ...record, status: "running" });
    // Its announce (and cleanup) follow, as they follow a child's run ending here.
    ctx.lifecycle.emit("ended", mine, true);
  }
  for (const run of await store.listPendingFollowUps()) {
    if (!isFinal(run.status) || !(await gone(run.owner, lastWrite(run)))) continue;
    const mine = await takeOver(ctx, run, true);
    // The reply-back loop and announce resume, as they follow a `sessions_send` run ending here.
    if (mine !== undefined) ctx.lifecycle.emit("ended", mine, true);
  }
}
