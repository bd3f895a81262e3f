import { SessionsError } from "@sessions/core";
import type { GatewayContext, LaneHold } from "../context.js";
import { LaneLost } from "../run-table.js";
import { recordRunStart } from "../store/run-units.js";
import { timeOrderedId } from "../store/time-ordered-id.js";
import type { AcquireLease, RerunRecord, RunRecord, StoredEntry, StoredMessage } from "../store/types.js";
import { inputOf } from "./absorb.js";
import { drawBudget, oneStartOfTree } from "./budget.js";
import { executeRun } from "./execute.js";
import { type RunSpec, rerunOf, specOfRecord } from "./spec.js";

export type { RunSpec } from "./spec.js";

import { agentIdOfKey } from "./key-agent.js";

/**
 * Records a run as one unit of work — idempotency check, the input message, the run, the session touched — and
 * queues it on its session's lane. A repeated idempotency key returns the first run (`created: false`): a crash
 * can never leave the message without its run, so a retry after one finds either both or neither.
 * @throws BudgetExceeded when the run's tree has a budget and it is spent (nothing is recorded).
 */
export function startRun(ctx: GatewayContext, spec: RunSpec): Promise<{ run: RunRecord; created: boolean }> {
  if (ctx.tasks.closed)
    return Promise.reject(new SessionsError("unavailable", "The gateway is closing", { retryAfterMs: 1000 }));
  const create = async () => {
    const slot = claimLane(ctx, spec);
    // In a cluster, a run of the session under way here ends while this one is recorded: counted meanwhile, it has
    // that end keep the session's lane for it (no lease round trip); given back if this run is not queued after all.
    const expected =
      slot === undefined && ctx.cluster !== undefined && !spec.subagentSlot
        ? ctx.runs.lanes.expect(spec.sessionKey)
        : undefined;
    try {
      return await createIn(slot);
    } finally {
      if (expected !== undefined) {
        expected();
        if (ctx.runs.lanes.runsOf(spec.sessionKey) === 0) ctx.cluster?.giveKeptLane(spec.sessionKey);
      }
    }
  };
  const createIn = async (slot: LaneSlot | undefined) => {
    let created: Awaited<ReturnType<typeof record>>;
    try {
      created = await record(ctx, spec, slot);
    } catch (error) {
      await slot?.giveBack(false);
      throw error;
    }
    if (created.input === undefined) {
      // A repeat, usually of a run under way or ended. But a start this gateway recorded whose answer the store lost
      // (a database dying right after the commit) was never scheduled: nobody else will run it, so this retry does.
      const input = await unscheduledInput(ctx, created.run);
      if (input === undefined) {
        await slot?.giveBack(created.taken);
        return { run: created.run, created: false };
      }
      ctx.logger.warn("resuming a run whose recorded start was never answered", { runId: created.run.runId });
      if (slot !== undefined) slot.taken = created.taken;
      // Its session as it is now: the run reads its overrides from it (the start's own copy was lost).
      schedule(ctx, spec, created.run, input, await ctx.store.getEntry(spec.sessionKey), slot);
      return { run: created.run, created: false };
    }
    if (slot !== undefined) slot.taken = created.taken;
    schedule(ctx, spec, created.run, created.input, created.entry, slot);
    if (created.entry !== undefined && ctx.listening?.() !== false)
      ctx.emit({ type: "sessions.changed", key: spec.sessionKey, reason: "updated" });
    return { run: created.run, created: true };
  };
  // Check-then-create under one lock per key, so concurrent retries of one request make one run.
  const begin = () =>
    spec.idempotencyKey === undefined ? create() : ctx.locks.idempotency.run(spec.idempotencyKey, create);
  // A run of a tree (not its root) that its tree's guards or budget may refuse: checked and recorded as one step.
  const { rootRunId, budget, guard } = spec;
  if (rootRunId === undefined || (budget === undefined && guard === undefined)) return begin();
  return oneStartOfTree(ctx, rootRunId, async () => {
    await guard?.();
    if (budget !== undefined) await drawBudget(ctx, rootRunId, budget);
    return begin();
  });
}

/**
 * The input of `run` when this gateway recorded its start but never scheduled it (the store committed the start and
 * then failed to answer), else undefined: a run ended, under way here, or another gateway's is not this one's to run.
 */
async function unscheduledInput(ctx: GatewayContext, run: RunRecord): Promise<StoredMessage | undefined> {
  if (run.status !== "queued" && run.status !== "running") return undefined;
  if (run.owner !== ctx.owner || ctx.runs.localRun(run.runId) !== undefined) return undefined;
  return inputOf(ctx.store, run);
}

/** The head of an idle lane, reserved for a run while it is being recorded. */
interface LaneSlot {
  /** In a cluster: the session's lane across the cluster, tried with the run's start (`taken`: it was). */
  readonly lease: AcquireLease | undefined;
  taken: boolean;
  /** Runs `task` in the reserved place. */
  fill(task: () => Promise<unknown>): void;
  /** The run was not created after all: the lane moves on (a cluster lane taken for it is given back). */
  giveBack(taken: boolean): Promise<void>;
}

/**
 * Reserves the head of the session's lane when it is idle, so that a run recorded as started now really is next:
 * a run of the session accepted meanwhile is recorded `queued` and waits behind it. In a cluster the run starts
 * now only if its start takes the session's lane across the cluster too (one attempt, in the same unit);
 * otherwise it is `queued` until it gets it. Starting now saves the write that would say the run started.
 */
function claimLane(ctx: GatewayContext, spec: RunSpec): LaneSlot | undefined {
  const key = spec.sessionKey;
  if (spec.subagentSlot || !ctx.runs.lanes.isIdle(key)) return undefined;
  let fill: (task: (() => Promise<unknown>) | undefined) => void = () => {};
  const filled = new Promise<(() => Promise<unknown>) | undefined>((resolve) => {
    fill = resolve;
  });
  ctx.tasks.track(ctx.runs.lanes.run(key, async () => (await filled)?.(), true));
  return {
    lease: ctx.cluster?.laneLease(key),
    taken: false,
    fill,
    async giveBack(taken) {
      fill(undefined);
      if (taken) await ctx.cluster?.giveLane(key);
    },
  };
}

/** The run's unit of work: idempotency check, the caller's writes, the session touched, the input, the run. */
async function record(
  ctx: GatewayContext,
  spec: RunSpec,
  slot: LaneSlot | undefined,
): Promise<{
  run: RunRecord;
  input: StoredMessage | undefined;
  entry: StoredEntry | undefined;
  taken: boolean;
}> {
  // Nothing runs before it here (its lane's head is reserved); in a cluster, nor elsewhere if the lease is taken.
  const startsNow = slot !== undefined;
  const now = ctx.clock.now();
  const run: Omit<RunRecord, "runId" | "inputSeq" | "idempotencyKey"> = {
    sessionKey: spec.sessionKey,
    agentId: agentIdOfKey(spec.sessionKey) ?? "main",
    kind: spec.kind,
    status: startsNow ? "running" : "queued",
    createdAt: now,
    ...(startsNow ? { startedAt: now } : {}),
    owner: ctx.owner,
    cause: spec.cause,
  };
  if (spec.rootRunId !== undefined) run.rootRunId = spec.rootRunId;
  if (spec.hops !== undefined && spec.hops > 0) run.hops = spec.hops;
  if (spec.traceparent !== undefined) run.traceparent = spec.traceparent;
  if (spec.budget !== undefined) run.budget = spec.budget;
  if (spec.deliverTo !== undefined) run.deliverTo = spec.deliverTo;
  if (spec.followUp !== undefined) run.followUp = spec.followUp;
  if (spec.userMessage === true) run.userMessage = true;
  // In a cluster, what another gateway needs to run it again should this one lose the store mid-run.
  if (ctx.cluster !== undefined) run.rerun = rerunOf(spec);
  ctx.lifecycle.emit("recording", run);
  let started: Awaited<ReturnType<typeof recordRunStart>>;
  try {
    started = await recordRunStart(
      ctx.store,
      {
        sessionKey: spec.sessionKey,
        idempotencyKey: spec.idempotencyKey,
        runId: spec.runId,
        preferredRunId: spec.preferredRunId,
        freshRunId: timeOrderedId(),
        now,
        input: spec.input,
        run,
        lease: slot?.lease,
      },
      spec.prepare,
    );
  } catch (error) {
    ctx.lifecycle.emit("declined", run);
    throw error;
  }
  if (!started.created) ctx.lifecycle.emit("declined", run);
  const taken = started.lease?.acquired === true;
  return started.created
    ? { run: started.run, input: started.input, entry: started.entry, taken }
    : { run: started.run, input: undefined, entry: undefined, taken };
}

/**
 * Queues `run`, taken over from a gateway that lost the store (recorded here as `queued` and this gateway's), to
 * run again on its session's lane; its runner is told it may be a repeat when it had started there.
 */
export function resumeRun(
  ctx: GatewayContext,
  run: RunRecord & { rerun: RerunRecord },
  input: StoredMessage,
  repeat: boolean,
): void {
  const spec = specOfRecord(run, input);
  schedule(ctx, spec, run, input, undefined, undefined, repeat ? "repeat" : "resumed");
}

/**
 * Queues the run on its session's lane; a run that starts at once gets the entry as its start left it. `resumed`:
 * taken over from another gateway (`resumeRun`), `repeat` if it had started executing there.
 */
function schedule(
  ctx: GatewayContext,
  spec: RunSpec,
  run: RunRecord,
  input: StoredMessage,
  entry: StoredEntry | undefined,
  slot: LaneSlot | undefined,
  resumed?: "resumed" | "repeat",
): void {
  const control = ctx.runs.register(run);
  // Waiting on the lane here: the end of the run before it may start it (not a sub-agent's: it waits for a slot).
  if (resumed === undefined && !spec.subagentSlot) ctx.runs.handovers.queue(run);
  if (resumed === undefined) ctx.lifecycle.emit("accepted", run, entry);
  else ctx.lifecycle.emit("resumed", run);
  // Recorded running: nothing of the session ran between its start and now, here or (lane taken) elsewhere.
  const known = run.status === "running" ? { entry } : undefined;
  const execute = (lane?: LaneHold) =>
    executeRun(ctx, run, spec, input, control, known, lane, resumed === "repeat");
  // Several gateways on one store: the session's lane also holds across them (a lease per lane).
  const cluster = ctx.cluster;
  const task =
    cluster === undefined
      ? execute
      : async () => {
          let taken = slot?.taken === true ? slot.lease : undefined;
          let attempt = execute;
          for (;;) {
            try {
              return await cluster.lane(spec.sessionKey, attempt, taken);
            } catch (error) {
              if (!(error instanceof LaneLost) || ctx.tasks.closed) throw error;
              // Stopped before anyone else could take the lane: it runs again here once the lane is held again,
              // unless another gateway ended it or took it over meanwhile (its fenced start then says so).
              ctx.logger.warn("lost the session's lane mid-run; running it again once the lane is back", {
                runId: run.runId,
                error: error.message,
              });
              taken = undefined;
              const again = ctx.runs.register(run);
              // What its reply streamed into so far goes with it (its fenced start rewrites the record).
              const streamed = error.stream;
              attempt = (lane) =>
                executeRun(
                  ctx,
                  {
                    ...run,
                    status: "queued",
                    startedAt: undefined,
                    ...(streamed ? { stream: streamed } : {}),
                  },
                  spec,
                  input,
                  again,
                  undefined,
                  lane,
                  true,
                );
            }
          }
        };
  if (slot !== undefined) slot.fill(task);
  else ctx.tasks.track(ctx.runs.lanes.run(spec.sessionKey, task, true));
}
