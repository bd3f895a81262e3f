import type { GatewayContext } from "../context.js";
import type { RunRecord, StoredMessage, StoreOps } from "../store/types.js";

/** The queued runs of a session that answer a user's message, but `exceptRunId`: oldest message first. */
export async function queuedUserRuns(
  store: Pick<StoreOps, "listRunsByStatus">,
  sessionKey: string,
  exceptRunId: string,
): Promise<RunRecord[]> {
  // Queued and running runs are few (the active ones across the store), so one status read serves.
  const queued = await store.listRunsByStatus(["queued"]);
  return queued
    .filter((r) => r.sessionKey === sessionKey && r.userMessage === true && r.runId !== exceptRunId)
    .sort((a, b) => (a.inputSeq ?? 0) - (b.inputSeq ?? 0) || a.createdAt - b.createdAt);
}

/**
 * Ends a queued run as taken by run `into` (`ok`, no reply, `mergedInto`), only while it is still queued and
 * its recorded owner's, and `into` is still running (a run that ended can no longer answer it). Its gateway starts
 * it through a write fenced the same way (`endRun` with that owner, on a run still under way), and both
 * read-and-write the run under its record lock inside a unit, so of this end and that start exactly one happens.
 * Returns the ended record (also when `into` had taken it already: a retry after the store lost its answer), or
 * `undefined` when the run had left the queue otherwise.
 */
export async function mergeQueuedRun(
  ctx: Pick<GatewayContext, "store" | "clock">,
  queued: RunRecord,
  into: string,
): Promise<RunRecord | undefined> {
  return ctx.store.transaction(async (tx) => {
    const current = await tx.getRun(queued.runId);
    if (current?.mergedInto === into) return current;
    if (current === undefined || current.status !== "queued") return undefined;
    if ((await tx.getRun(into))?.status !== "running") return undefined;
    const merged: RunRecord = { ...current, status: "ok", endedAt: ctx.clock.now(), mergedInto: into };
    return (await tx.endRun(merged, current.owner)) ? merged : undefined;
  });
}

/**
 * The run that took other runs' messages (`merged`, each ended `ok` with `mergedInto` when taken) ended without an
 * answer: each of them ends as it did, so whoever reads its outcome (`agent.wait`, `runs.tree`, the console) learns
 * its message was not answered. Re-running them could answer them twice (the taker may have done part of its work);
 * their messages stay in the transcript, for the next run of the session to see. Only a run still `ok` and merged into
 * `taker` changes (one unit each).
 */
export async function failMerged(
  ctx: Pick<GatewayContext, "store">,
  taker: RunRecord,
  merged: readonly RunRecord[],
): Promise<void> {
  if (taker.status === "ok") return;
  const error = `the run that took this message (${taker.runId}) ended ${taker.status}${taker.error ? `: ${taker.error}` : ""}`;
  for (const run of merged) {
    await ctx.store.transaction(async (tx) => {
      const latest = await tx.getRun(run.runId);
      if (latest?.mergedInto !== taker.runId || latest.status !== "ok") return;
      await tx.putRun({ ...latest, status: taker.status, error });
    });
  }
}

/** The message that started a run, as recorded. */
export async function inputOf(
  store: Pick<StoreOps, "readMessages">,
  run: RunRecord,
): Promise<StoredMessage | undefined> {
  if (run.inputSeq === undefined) return undefined;
  const [message] = await store.readMessages(run.sessionKey, { limit: 1, beforeSeq: run.inputSeq + 1 });
  return message?.seq === run.inputSeq ? message : undefined;
}

/** A queued run taken by another run of its session, and its message. */
export interface Absorbed {
  run: RunRecord;
  input: StoredMessage;
}

/**
 * Queue modes `collect` and `interrupt`, as a run starts: every other queued user's message of its session is
 * taken by it (each of those runs ends merged into it), appended to `taken` oldest first as it goes. Call it again
 * with the same `absorbing` after a store outage: the runs it found queued the first time are taken again, so one
 * whose merge committed but whose answer was lost is not left out.
 */
export async function absorbQueued(
  ctx: Pick<GatewayContext, "store" | "clock">,
  run: RunRecord,
  taken: Absorbed[],
  absorbing: { queued?: RunRecord[] },
): Promise<void> {
  absorbing.queued ??= await queuedUserRuns(ctx.store, run.sessionKey, run.runId);
  for (const queued of absorbing.queued) {
    if (taken.some((t) => t.run.runId === queued.runId)) continue;
    const merged = await mergeQueuedRun(ctx, queued, run.runId);
    if (merged === undefined) continue;
    const input = await inputOf(ctx.store, merged);
    if (input !== undefined) taken.push({ run: merged, input });
  }
}
