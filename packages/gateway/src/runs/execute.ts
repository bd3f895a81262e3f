import { SessionsError, type TranscriptMessage } from "@sessions/core";
import type { DeliveryTarget } from "../adapter.js";
import type { GatewayContext, LaneHold, RunLane } from "../context.js";
import { openReplyStream, previewRemoval, type ReplyStream } from "../delivery/streams.js";
import { runRemote } from "../remotes/remote-run.js";
import { BudgetDeadline, LaneLost, RunAborted, type RunControl, RunTimeout } from "../run-table.js";
import type { AgentRunEvent, AgentRunRequest, RunnerTool } from "../runner/types.js";
import { type LentMessages, readHistory } from "../store/history.js";
import { recordRunEnd } from "../store/run-units.js";
import type { RunRecord, RunUsage, StoredEntry, StoredMessage, StreamPreview } from "../store/types.js";
import { untilStored } from "../store/until-stored.js";
import { type Absorbed, absorbQueued, failMerged } from "./absorb.js";
import { deadlineNotice } from "./budget.js";
import { sessionQueueMode } from "./queue-modes.js";
import { emitFinal, emitRunnerEvent, emitStart } from "./run-events.js";
import type { RunSpec } from "./spec.js";
import { steeringFor } from "./steering.js";
import { isFinal } from "./wait.js";

/**
 * Runs one queued run on its lane: marks it running, hands the runner the history window and tools, records the
 * reply and usage, queues the reply's delivery, records the end, wakes waiters and raises `ended`.
 */
export async function executeRun(
  ctx: GatewayContext,
  queued: RunRecord,
  spec: RunSpec,
  input: StoredMessage,
  control: RunControl,
  /** The session entry as the run's start left it, when the run started at once (it saves a read). */
  known?: { entry: StoredEntry | undefined },
  /** In a cluster: the session's lane, given up with the run's end. */
  lane?: LaneHold,
  /** Run again after its lane was lost (`LaneLost`): its runner is told so, its tree's clock is not moved again. */
  repeat = false,
): Promise<RunRecord> {
  const { store, clock } = ctx;
  ctx.runs.handovers.leave(queued);
  // The end of the run before it here recorded it as started, and read the session's entry for it.
  const handed = queued.status === "queued" ? ctx.runs.handovers.take(queued.runId) : undefined;
  if (handed !== undefined) known = { entry: handed.entry };
  const release = spec.subagentSlot ? await ctx.runs.subagentSlots.acquire() : undefined;
  let timer: unknown;
  let run: RunRecord = handed?.run ?? startedRecord(queued, clock.now(), repeat);
  let usage: RunUsage | undefined;
  // Set when someone else ended the run before it started: its waiters here learn of it all the same.
  let ended: RunRecord | undefined;
  // Set when the tree's budget deadline stopped the run: its reply target is told so.
  let budgetStop = false;
  // Set when the session's lane was lost mid-run: nothing is recorded, the run is run again.
  let lost: LaneLost | undefined;
  // The reply streaming into its chat as the runner writes it, if its channel streams.
  let replyStream: ReplyStream | undefined;
  // Runs whose messages this one took (queue modes): collected, and steered into its turn. They end as it does.
  const merged: RunRecord[] = [];
  const steered: RunRecord[] = [];
  // What the run needs of the store before the runner starts waits out an outage (a database restarting): an
  // accepted run runs once the store is back, rather than end in an error the runner never caused.
  const stored = <T>(read: () => Promise<T>) => untilStored(read, storeOutage(ctx, queued.runId));
  // The lane lost (the store out of reach past the lease's deadline): the run stops at once and writes nothing.
  const laneLost = () => control.abort(lane?.signal?.reason);
  lane?.signal?.addEventListener("abort", laneLost, { once: true });
  try {
    if (lane?.signal?.aborted) throw lane.signal.reason;
    if (ctx.tasks.closed) throw new SessionsError("unavailable", "gateway closed before the run started");
    if (control.aborted) throw control.reason;
    if (queued.status === "queued" && handed === undefined) {
      // It waited behind another run: it starts only if it is still queued and this gateway's, in one fenced
      // write, since recovery on another gateway may have ended it or taken it over meanwhile.
      if (!(await stored(() => store.endRun(run, ctx.owner)))) {
        const latest = await stored(() => store.getRun(queued.runId));
        if (latest !== undefined) {
          ended = latest;
          return latest;
        }
        // Its record is gone: it runs all the same, as it was asked to.
        await stored(() => store.putRun(run));
      }
    }
    if (queued.status === "queued") ctx.runs.update(run);
    emitStart(ctx, run);
    ctx.lifecycle.emit("started", run);
    const stop = stopAt(spec.timeoutMs, run.budget?.deadlineAt, clock.now());
    if (stop !== undefined && stop.inMs === 0) throw stop.reason();
    if (stop !== undefined) timer = clock.setTimeout(() => control.abort(stop.reason()), stop.inMs);
    const entry = known !== undefined ? known.entry : await stored(() => store.getEntry(spec.sessionKey));
    const mode = run.userMessage === true ? sessionQueueMode(ctx, spec.sessionKey, entry) : "followup";
    let last = input;
    if (mode === "collect" || mode === "interrupt") {
      // It answers every user's message waiting behind it: the model sees them all, the newest as its input.
      const taken: Absorbed[] = [];
      const absorbing = {};
      await stored(() => absorbQueued(ctx, run, taken, absorbing));
      merged.push(...taken.map((t) => t.run));
      const newest = taken.at(-1);
      if (newest !== undefined && newest.input.seq > last.seq) last = newest.input;
      run = replyWhereNewestAsked(
        run,
        taken.map((t) => t.run),
      );
    }
    const history = await stored(() =>
      readHistory(store, spec.sessionKey, { limit: ctx.historyWindow, beforeSeq: last.seq + 1 }),
    );
    const steering =
      run.userMessage === true && ctx.runner.steering === true ? steeringFor(ctx, run, steered) : undefined;
    // A transcript line of a tool call refused under the lane (another gateway took it): the same, at once.
    const fence =
      lane === undefined
        ? undefined
        : {
            lease: lane.lease,
            get signal() {
              return control.signal;
            },
            lost: (lost: LaneLost) => control.abort(lost),
          };
    replyStream = openReplyStream(
      ctx,
      run,
      entry,
      recordPreview(ctx, run),
      () => !control.aborted && lane?.valid?.() !== false,
    );
    const request = runRequest(ctx, run, spec, last, history, entry, control, steering, fence, replyStream);
    if (repeat) request.repeat = true;
    const remote = ctx.remotes.of(spec.sessionKey);
    const result = await control.race(
      remote === undefined ? ctx.runner.run(request) : runRemote(ctx, remote, request, run),
    );
    run = replyWhereNewestAsked(run, steered);
    const reply = typeof result?.reply === "string" ? result.reply : "";
    usage = result?.usage ?? control.spent;
    run = { ...run, status: "ok", endedAt: clock.now(), reply, ...(usage === undefined ? {} : { usage }) };
  } catch (error) {
    const reason = control.aborted ? control.reason : error;
    if (reason instanceof LaneLost) lost = reason;
    const endedAt = clock.now();
    // What its model steps used before it failed or was stopped still counts (its tree's budget).
    usage = control.spent;
    if (usage !== undefined) run = { ...run, usage };
    if (reason instanceof RunTimeout) {
      run = { ...run, status: "timeout", error: reason.message, endedAt };
      budgetStop = reason instanceof BudgetDeadline;
    } else if (reason instanceof RunAborted)
      run = { ...run, status: "aborted", error: reason.message, endedAt };
    else {
      const message = error instanceof Error ? error.message : String(error);
      run = { ...run, status: "error", error: message, endedAt };
    }
  } finally {
    lane?.signal?.removeEventListener("abort", laneLost);
    if (timer !== undefined) clock.clearTimeout(timer);
    // No request of the stream after this: its messages are the reply's delivery's to edit (or remove).
    if (replyStream !== undefined) {
      const preview = await replyStream.close();
      if (preview !== undefined) run = { ...run, stream: preview };
    }
    ctx.runs.unregister(queued.runId);
    release?.();
    if (ended !== undefined) {
      // Final: wake its waiters here. Not final (another gateway runs it): the change feed will.
      if (isFinal(ended.status)) ctx.runs.settle(ended);
      else ctx.runs.disown(ended.runId);
      // It will not run here: its follow-ups belong to the gateway that ended or took it over.
      ctx.lifecycle.emit("ended", ended, false);
    }
  }
  // No end under a lost lane: whoever holds the lane next runs it again (this gateway, unless another took it),
  // editing on the messages its reply streamed into.
  if (lost !== undefined) {
    if (run.stream !== undefined) lost.stream = run.stream;
    throw lost;
  }
  if (control.guards.length > 0) run = { ...run, guards: [...control.guards] };
  run = await recordEnd(ctx, run, usage, lane, budgetStop);
  if (run.status !== "ok" && merged.length + steered.length > 0 && !discarded.has(run)) {
    const failed = run;
    const taken = [...merged, ...steered];
    await untilStored(() => failMerged(ctx, failed, taken), storeOutage(ctx, run.runId)).catch(
      (error: unknown) =>
        ctx.logger.warn("could not end the runs merged into a failed run", {
          runId: failed.runId,
          error: String(error),
        }),
    );
  }
  emitFinal(ctx, run);
  ctx.runs.settle(run);
  // A discarded end leaves the run's follow-up work to the gateway that recovered it.
  ctx.lifecycle.emit("ended", run, !discarded.has(run));
  return run;
}

/**
 * `queued` as it starts executing at `now`: running, with its start time. A tree's clock starts with its first run:
 * a root that waited for its session's lane moves its deadline on by the wait (written with its start; its children
 * copy the budget from it); a `repeat` does not move it again.
 */
function startedRecord(queued: RunRecord, now: number, repeat: boolean): RunRecord {
  const startedAt = queued.startedAt ?? now;
  const run: RunRecord = { ...queued, status: "running", startedAt };
  const budget = queued.budget;
  if (
    !repeat &&
    queued.status === "queued" &&
    queued.rootRunId === undefined &&
    budget?.deadlineAt !== undefined
  )
    run.budget = { ...budget, deadlineAt: budget.deadlineAt + Math.max(0, startedAt - queued.createdAt) };
  return run;
}

/** `run` with its reply going where the newest of the messages it took (oldest first) that wants one came from. */
function replyWhereNewestAsked(run: RunRecord, taken: readonly RunRecord[]): RunRecord {
  const target = [...taken].reverse().find((t) => t.deliverTo !== undefined)?.deliverTo;
  return target === undefined ? run : { ...run, deliverTo: target };
}

/**
 * When a run is stopped: after its own timeout, or at its tree's budget deadline if that comes first (a run that
 * starts after the deadline stops at once). Undefined: never.
 */
function stopAt(
  timeoutMs: number | undefined,
  deadlineAt: number | undefined,
  now: number,
): { inMs: number; reason: () => RunTimeout } | undefined {
  const own = timeoutMs !== undefined && timeoutMs > 0 ? timeoutMs : undefined;
  const seconds = (ms: number) => Math.round(ms / 1000);
  if (deadlineAt !== undefined && (own === undefined || deadlineAt - now < own)) {
    const inMs = Math.max(0, deadlineAt - now);
    return { inMs, reason: () => new BudgetDeadline(seconds(inMs), deadlineAt) };
  }
  return own === undefined ? undefined : { inMs: own, reason: () => new RunTimeout(seconds(own)) };
}

/**
 * What the runner gets. Its history (copies), tools and abort signal are made when the runner first asks for
 * them: a runner that never reads the history, calls a tool or is aborted costs none of them.
 */
function runRequest(
  ctx: GatewayContext,
  run: RunRecord,
  spec: RunSpec,
  input: StoredMessage,
  history: LentMessages,
  entry: StoredEntry | undefined,
  control: RunControl,
  steering: (() => Promise<TranscriptMessage[]>) | undefined,
  lane: RunLane | undefined,
  replyStream: ReplyStream | undefined,
): AgentRunRequest {
  let tools: RunnerTool[] | undefined;
  let messages: StoredMessage[] | undefined;
  const toolContext = spec.tools;
  const request: AgentRunRequest = {
    runId: run.runId,
    agentId: run.agentId,
    sessionKey: spec.sessionKey,
    kind: spec.kind,
    get messages() {
      messages ??= history();
      return messages;
    },
    set messages(value) {
      messages = value;
    },
    input,
    system: spec.system ?? [],
    get tools() {
      tools ??= toolContext === null ? [] : ctx.toolsFor(toolContext, run, lane);
      return tools;
    },
    set tools(value) {
      tools = value;
    },
    get signal() {
      return control.signal;
    },
    emit: (event: AgentRunEvent) => {
      replyStream?.push(event);
      if (event.type === "usage") control.addUsage(event.usage);
      else emitRunnerEvent(ctx, run, event);
    },
  };
  const model = spec.model ?? entry?.model;
  const thinking = spec.thinking ?? entry?.thinkingLevel;
  if (steering !== undefined) request.takeSteering = steering;
  if (model !== undefined) request.model = model;
  if (thinking !== undefined) request.thinking = thinking;
  return request;
}

/**
 * Records the messages `run`'s reply streamed into on its record (still running, and this gateway's: fenced),
 * so that whoever ends it — its end here, recovery after a crash, a gateway running it again — finds them.
 */
function recordPreview(ctx: GatewayContext, run: RunRecord) {
  const running = run;
  return async (preview: StreamPreview): Promise<void> => {
    await ctx.store.endRun({ ...running, stream: preview }, ctx.owner);
  };
}

/**
 * The end of a run as one unit of work: the reply message, the session's usage and flags, the reply's delivery
 * and the run's final record commit together — so a queued reply is never lost and never queued twice.
 */
async function recordEnd(
  ctx: GatewayContext,
  run: RunRecord,
  usage: RunUsage | undefined,
  lane: LaneHold | undefined,
  budgetStop: boolean,
): Promise<RunRecord> {
  const now = ctx.clock.now();
  const ok = run.status === "ok";
  const reply = ok && run.reply !== undefined && run.reply.trim() !== "" ? run.reply : undefined;
  // A run its tree's budget deadline stopped tells its reply target so, rather than leave it in silence.
  const text = ok ? run.reply : budgetStop ? deadlineNotice(run) : undefined;
  // A streamed reply edits the messages it streamed into; with no reply to show, they are removed.
  const removal = previewRemoval(run);
  const delivery =
    text && run.deliverTo?.channel && run.deliverTo.to
      ? ctx.outbox.draft({
          idempotencyKey: `reply:${run.runId}`,
          kind: "reply",
          sessionKey: run.sessionKey,
          runId: run.runId,
          target: run.deliverTo as DeliveryTarget,
          text,
          ...(run.stream === undefined ? {} : { stream: run.stream }),
        })
      : removal === undefined
        ? undefined
        : ctx.outbox.draft(removal);
  const passOn = lane?.passOn?.() === true;
  // The next run of the session here starts with this end, when the lane goes to it (in a cluster: passed on).
  const waiting = ctx.runs.handovers.next(run.sessionKey, run.runId);
  const next =
    waiting !== undefined && waiting.status === "queued" && (lane === undefined || passOn)
      ? startedRecord(waiting, now, false)
      : undefined;
  try {
    const unit = {
      run,
      owner: ctx.owner,
      ...(reply === undefined
        ? {}
        : { reply: { role: "assistant" as const, content: reply, ts: now, runId: run.runId } }),
      entry: {
        updatedAt: now,
        ...(ok ? { tokens: usage, systemSent: true as const, abortedLastRun: false } : {}),
        ...(run.status === "aborted" ? { abortedLastRun: true } : {}),
      },
      ...(delivery === undefined ? {} : { delivery }),
      // The lane goes with the end, unless the next run of the session waits here: it keeps it (no round trip).
      ...(lane === undefined ? {} : { fence: lane.lease }),
      ...(lane === undefined || passOn ? {} : { releaseLease: lane.lease }),
      ...(next === undefined ? {} : { next }),
    };
    // The runner has answered: its end is recorded once the store is back (a database restarting), and the run's
    // waiters wait for that rather than hear of a failure that did not happen.
    const ended = await untilStored(() => recordRunEnd(ctx.store, unit), storeOutage(ctx, run.runId));
    // Fenced: a gateway that stalled past its lease finds its run ended by another one, and its end is dropped;
    // or still its own, the lane another's: it runs again once the lane is back (as for a lane lost mid-run).
    if (!ended.ended) {
      const stored = await untilStored(() => ctx.store.getRun(run.runId), storeOutage(ctx, run.runId));
      if (
        lane !== undefined &&
        stored !== undefined &&
        !isFinal(stored.status) &&
        stored.owner === ctx.owner
      ) {
        const lost = new LaneLost(
          lane.lease.name,
          "another gateway took the session's lane before the run's end was recorded",
        );
        if (run.stream !== undefined) lost.stream = run.stream;
        throw lost;
      }
      return discardEnd(ctx, run, stored);
    }
    if (passOn) lane?.passed?.();
    else lane?.released();
    if (next !== undefined && ended.nextStarted === true) ctx.runs.handovers.hand(next, ended.entry);
    if (ended.delivery !== undefined) ctx.outbox.committed(ended.delivery);
    if (ctx.listening?.() !== false)
      ctx.emit({ type: "sessions.changed", key: run.sessionKey, reason: "updated" });
    return run;
  } catch (error) {
    if (error instanceof LaneLost) throw error;
    // Nothing of the end was recorded (storage full, store gone): say so, and try to end the run at least.
    const message = error instanceof Error ? error.message : String(error);
    ctx.logger.error("could not record the end of a run", { runId: run.runId, error: message });
    const failed: RunRecord = {
      ...run,
      status: "error",
      error: `could not record the run's end: ${message}`,
    };
    delete failed.reply;
    await ctx.store.endRun(failed, ctx.owner).catch(() => undefined);
    return failed;
  }
}

const discarded = new WeakSet<RunRecord>();

/** The run was ended by another gateway (recovery) while this one stalled: its end stands, this one's is dropped. */
async function discardEnd(
  ctx: GatewayContext,
  run: RunRecord,
  stored: RunRecord | undefined,
): Promise<RunRecord> {
  ctx.logger.warn("discarded the end of a run another gateway ended while this one stalled", {
    runId: run.runId,
    discarded: run.status,
    recorded: stored?.status,
  });
  const ended = stored !== undefined && isFinal(stored.status) ? stored : run;
  discarded.add(ended);
  return ended;
}

/** How a run waits out the store's outage: until the gateway closes, saying so once. */
function storeOutage(ctx: GatewayContext, runId: string) {
  return {
    clock: ctx.clock,
    stop: () => ctx.tasks.closed,
    onRetry: (error: SessionsError, attempt: number) => {
      if (attempt === 1)
        ctx.logger.warn("the store is unavailable; the run goes on when it is back", {
          runId,
          error: error.message,
        });
    },
  };
}
