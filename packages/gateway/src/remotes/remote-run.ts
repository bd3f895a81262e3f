import { SendMessageRequest } from "@a2a-js/sdk";
import type { RemoteAgentConfig, TranscriptMessage } from "@sessions/core";
import type { GatewayContext } from "../context.js";
import type { AgentRunRequest, AgentRunResult } from "../runner/types.js";
import { updateEntry } from "../sessions/entries.js";
import type { RemoteContext, RunRecord } from "../store/types.js";
import { RemoteTask } from "./remote-task.js";

/** How often a task the stream left unsettled is read again with `GetTask`, at most. */
const POLL_MS = 1000;
/** How long a stopped run's request waits for the remote to name its task (to cancel it) before it gives up. */
const CANCEL_WAIT_MS = 5000;

/** The text of a transcript message (its text parts, when it has parts). */
function textOf(message: TranscriptMessage): string {
  if (typeof message.content === "string") return message.content;
  return message.content
    .map((part) => (part.type === "text" && typeof part.text === "string" ? part.text : ""))
    .join("");
}

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const timer = setTimeout(done, ms);
    function done() {
      signal.removeEventListener("abort", stop);
      resolve();
    }
    function stop() {
      clearTimeout(timer);
      reject(signal.reason);
    }
    signal.addEventListener("abort", stop, { once: true });
  });

/**
 * Runs `run` of a remote agent's session over A2A: its input becomes one message to the remote (`SendStreamingMessage`,
 * or `SendMessage` when the card does not stream; v0.3's methods for an older peer), in the session's context once
 * the remote has named one, with the run's W3C trace context (`traceparent`) and the hops of its tree. The reply's
 * text streams as the run's deltas; the task's end is its reply, or the run's error. Aborting the run cancels the
 * task. The message's id is the run's, so a remote that deduplicates sees a repeat of it as the same message.
 */
export async function runRemote(
  ctx: GatewayContext,
  remote: RemoteAgentConfig,
  request: AgentRunRequest,
  run: RunRecord,
): Promise<AgentRunResult> {
  const { client } = await ctx.remotes.client(remote);
  const entry = await ctx.store.getEntry(request.sessionKey);
  const known = entry?.a2a;
  const provenance = request.input.provenance;
  const message = SendMessageRequest.fromJSON({
    message: {
      messageId: run.runId,
      role: "ROLE_USER",
      parts: [{ text: textOf(request.input) }],
      ...(known === undefined ? {} : { contextId: known.contextId }),
      ...(known?.taskId === undefined ? {} : { taskId: known.taskId }),
      metadata: {
        ...(provenance === undefined ? {} : { "sessions.sourceSessionKey": provenance.sourceSessionKey }),
        ...(run.hops === undefined ? {} : { "sessions.hops": run.hops }),
      },
    },
  });
  const headers: Record<string, string> =
    run.traceparent === undefined ? {} : { traceparent: run.traceparent };
  // The request stops when the run is stopped, but not before the task it became is known (its first event), so
  // that the remote is told to cancel it: at most CANCEL_WAIT_MS later.
  const stopped = new AbortController();
  const options = { signal: stopped.signal, serviceParameters: headers };
  const task = new RemoteTask((text) => request.emit({ type: "text-delta", text }));
  let canceled = false;
  const stop = () => {
    if (canceled || !request.signal.aborted) return;
    if (task.taskId === undefined) {
      setTimeout(() => stopped.abort(request.signal.reason), CANCEL_WAIT_MS).unref();
      return;
    }
    canceled = true;
    cancel(ctx, remote, task.taskId, headers);
    stopped.abort(request.signal.reason);
  };
  request.signal.addEventListener("abort", stop, { once: true });
  let recorded = known;
  try {
    for await (const event of client.sendMessageStream(message, options)) {
      task.add(event);
      stop();
      if (stopped.signal.aborted) break;
      // The context is the session's from the remote's first word, and so is the task under way: a crash
      // mid-answer loses neither (recovery cancels the task of a run it ends).
      const underWay = !task.settled && task.taskId !== undefined;
      if (
        task.contextId !== undefined &&
        (recorded === undefined || (underWay && recorded.running?.taskId !== task.taskId))
      )
        recorded = await remember(ctx, request.sessionKey, recorded, task, run.runId);
    }
    // A stream that ended before the task settled (or a peer that answered at once with a task under way).
    while (!task.settled && task.taskId !== undefined && !stopped.signal.aborted) {
      await sleep(POLL_MS, stopped.signal);
      task.task(await client.getTask({ tenant: "", id: task.taskId, historyLength: 0 }, options));
    }
  } finally {
    request.signal.removeEventListener("abort", stop);
    stop();
    await remember(ctx, request.sessionKey, recorded, task);
  }
  if (request.signal.aborted) throw request.signal.reason;
  if (!task.settled) throw new Error(`remote agent ${remote.id} ended its answer without a task state`);
  const outcome = task.outcome();
  if (outcome.kind === "failed")
    throw new Error(
      `remote agent ${remote.id}: the task ended ${outcome.state}${outcome.text === "" ? "" : `: ${outcome.text}`}`,
    );
  return { reply: outcome.text };
}

/**
 * Records the context the remote named (a task waiting for an answer, and with `runId` the task that run has under
 * way) on the session, when they changed from `known`; what the session now holds.
 */
async function remember(
  ctx: GatewayContext,
  sessionKey: string,
  known: RemoteContext | undefined,
  task: RemoteTask,
  runId?: string,
): Promise<RemoteContext | undefined> {
  if (task.contextId === undefined) return known;
  const outcome = task.settled ? task.outcome() : undefined;
  const waiting = outcome?.kind === "reply" ? outcome.waitingTask : undefined;
  const running =
    runId === undefined || task.taskId === undefined || task.settled
      ? undefined
      : { runId, taskId: task.taskId };
  const next: RemoteContext = {
    contextId: task.contextId,
    ...(waiting === undefined ? {} : { taskId: waiting }),
    ...(running === undefined ? {} : { running }),
  };
  if (
    known?.contextId === next.contextId &&
    known.taskId === next.taskId &&
    known.running?.runId === next.running?.runId &&
    known.running?.taskId === next.running?.taskId
  )
    return known;
  await updateEntry(ctx, sessionKey, (entry) => (entry === undefined ? undefined : { ...entry, a2a: next }));
  return next;
}

/**
 * After recovery ended `run` (its gateway crashed or lost the store mid-answer): cancels the task it had under way
 * at its remote agent, if the session still names that task as the run's, and clears the mark. A remote that
 * already finished or forgot the task answers with an error, which is logged.
 */
export async function cancelOrphanedTask(ctx: GatewayContext, run: RunRecord): Promise<void> {
  const remote = ctx.remotes.of(run.sessionKey);
  if (remote === undefined) return;
  const running = (await ctx.store.getEntry(run.sessionKey))?.a2a?.running;
  if (running?.runId !== run.runId) return;
  cancel(ctx, remote, running.taskId, run.traceparent === undefined ? {} : { traceparent: run.traceparent });
  await updateEntry(ctx, run.sessionKey, (entry) => {
    if (entry?.a2a?.running?.runId !== run.runId) return undefined;
    const { running: _running, ...rest } = entry.a2a;
    return { ...entry, a2a: rest };
  });
}

/** Cancels a task whose run was stopped; the run ends aborted whatever the remote answers. */
function cancel(
  ctx: GatewayContext,
  remote: RemoteAgentConfig,
  taskId: string,
  headers: Record<string, string>,
): void {
  const stop = ctx.remotes
    .client(remote)
    .then(({ client }) =>
      client.cancelTask(
        { tenant: "", id: taskId, metadata: undefined },
        { serviceParameters: headers, signal: AbortSignal.timeout(10_000) },
      ),
    );
  ctx.tasks.track(
    stop.catch((error: unknown) =>
      ctx.logger.warn("could not cancel a remote agent's task", {
        remote: remote.id,
        taskId,
        error: String(error),
      }),
    ),
  );
}
