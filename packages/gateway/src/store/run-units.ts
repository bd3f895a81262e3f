import type { TranscriptMessage } from "@sessions/core";
import type {
  EntryRunDelta,
  LeaseFence,
  RunEndResult,
  RunEndUnit,
  RunRecord,
  RunStartResult,
  RunStartUnit,
  SessionStore,
  StoredEntry,
  StoredMessage,
  StoreOps,
} from "./types.js";

/**
 * A run's start or end moves its session's `updatedAt` only when that is a second or more behind the time it gives
 * (ms): the runs of a busy session (a backlog, a burst of messages) do not each rewrite its entry and every index on
 * it, and its `updatedAt` is never more than this behind its last run. An end still records the tokens and flags it
 * brings. The Postgres store's `run_start` (schema 7) and `run_end` (schema 10) do the same.
 */
export const TOUCH_GRAIN_MS = 1000;

/**
 * The two units of work of every run, as store operations. A store may do each natively (`recordRunStart`,
 * `recordRunEnd`: one round trip on Postgres); otherwise they run here, through `transaction`. Both ways do the
 * same thing, and the store contract checks it.
 */

/** Extra writes that belong with a run's start, in its unit (after the idempotency check, before the input). */
export type StartWrites = (tx: StoreOps) => Promise<void>;

/** A run's start: idempotency check, the session touched, the input message, the run. */
export async function recordRunStart(
  store: SessionStore,
  unit: RunStartUnit,
  prepare?: StartWrites,
): Promise<RunStartResult> {
  const native = prepare === undefined ? await store.recordRunStart?.(unit) : undefined;
  if (native !== undefined) return native;
  if (unit.lease === undefined) return store.transaction((tx) => runStartThrough(tx, unit, prepare));
  const lease = await store.acquireLease(unit.lease);
  const run = lease.acquired ? unit.run : queuedRun(unit.run);
  try {
    return { ...(await store.transaction((tx) => runStartThrough(tx, { ...unit, run }, prepare))), lease };
  } catch (error) {
    if (lease.acquired) await store.releaseLease(unit.lease.name, unit.lease.owner).catch(() => false);
    throw error;
  }
}

/** A run recorded as waiting for its lane. */
export function queuedRun<R extends { status: RunRecord["status"]; startedAt?: number | undefined }>(
  run: R,
): R {
  const queued = { ...run, status: "queued" as const };
  delete queued.startedAt;
  return queued;
}

/** A run's end: the reply, the session's usage and flags, the reply's delivery, the final record (fenced). */
export async function recordRunEnd(store: SessionStore, unit: RunEndUnit): Promise<RunEndResult> {
  const native = await store.recordRunEnd?.(unit);
  if (native !== undefined) return native;
  let ended: RunEndResult;
  try {
    ended = await store.transaction((tx) => runEndThrough(tx, unit, store));
  } catch (error) {
    if (error instanceof EndedElsewhere) return { ended: false };
    throw error;
  }
  const lease = unit.releaseLease;
  // Not released (the store failed): it lapses, as a lease whose holder stopped renewing does.
  if (lease !== undefined) await store.releaseLease(lease.name, lease.owner).catch(() => false);
  return ended;
}

/** {@link recordRunStart} as store operations inside a unit of work. */
export async function runStartThrough(
  tx: StoreOps,
  unit: RunStartUnit,
  prepare?: StartWrites,
): Promise<RunStartResult> {
  if (unit.idempotencyKey !== undefined) {
    const existing = await tx.findRunByIdempotencyKey(unit.idempotencyKey);
    if (existing !== undefined) return { created: false, run: existing };
  }
  if (prepare !== undefined) await prepare(tx);
  const current = await tx.getEntry(unit.sessionKey);
  const touch = current !== undefined && current.updatedAt <= unit.now - TOUCH_GRAIN_MS;
  const entry = touch ? { ...current, updatedAt: unit.now } : current;
  if (touch) await tx.putEntry(entry as StoredEntry);
  const preferred = unit.preferredRunId;
  const runId =
    unit.runId ??
    (preferred !== undefined && (await tx.getRun(preferred)) === undefined ? preferred : unit.freshRunId);
  const input = await tx.appendMessage(unit.sessionKey, { ...unit.input, runId });
  const run: RunRecord = { runId, ...unit.run, inputSeq: input.seq };
  if (unit.idempotencyKey !== undefined) run.idempotencyKey = unit.idempotencyKey;
  await tx.putRun(run);
  return { created: true, run, input, entry };
}

class EndedElsewhere extends Error {}

/**
 * Whether `fence` still stands: no owner but its own holds the lease. Called inside a unit of work, the read joins
 * it and holds the lease as it is until the unit ends (a networked store locks the row), so a takeover cannot
 * commit between this check and the unit's writes.
 */
async function fenceStands(store: SessionStore, fence: LeaseFence): Promise<boolean> {
  const holder = await store.getLease(fence.name);
  return holder === undefined || holder.owner === fence.owner;
}

/**
 * A message appended to a session's transcript by a run in progress (a tool call, its result), fenced by the lane
 * the run executes under: written only while no other owner holds it and the run has not been stopped (`stopped`,
 * read after the lease: a run stops at its lane's deadline, before another gateway can take the lane, so a lane
 * taken and given back meanwhile is caught too); `undefined` when refused (nothing written).
 */
export async function appendUnderLane(
  store: SessionStore,
  sessionKey: string,
  message: TranscriptMessage,
  fence: LeaseFence,
  stopped?: AbortSignal,
): Promise<StoredMessage | undefined> {
  try {
    return await store.transaction(async (tx) => {
      if (!(await fenceStands(store, fence)) || stopped?.aborted === true) throw new EndedElsewhere();
      return tx.appendMessage(sessionKey, message);
    });
  } catch (error) {
    if (error instanceof EndedElsewhere) return undefined;
    throw error;
  }
}

/** {@link recordRunEnd} as store operations inside a unit of work; throws to roll back a fenced-out end. */
async function runEndThrough(tx: StoreOps, unit: RunEndUnit, store: SessionStore): Promise<RunEndResult> {
  const { run, fence } = unit;
  // Fenced by its lane: another gateway holds it now.
  if (fence !== undefined && !(await fenceStands(store, fence))) throw new EndedElsewhere();
  if (unit.reply !== undefined) await tx.appendMessage(run.sessionKey, unit.reply);
  const stored = await tx.getEntry(run.sessionKey);
  const entry = stored === undefined ? undefined : applyRunDelta(stored, unit.entry);
  if (entry !== undefined && changesEntry(stored as StoredEntry, entry)) await tx.putEntry(entry);
  const delivery = unit.delivery === undefined ? undefined : await tx.enqueueDelivery(unit.delivery);
  // Fenced: a gateway that stalled past its lease finds its run ended by another one, and its end is undone.
  if (!(await tx.endRun(run, unit.owner))) throw new EndedElsewhere();
  // The next run starts with it, fenced as its own start would be (`endRun`: under way and the owner's; a run queued
  // on this gateway's lane is running only if another gateway took it over, and then it is not the owner's).
  const next = unit.next;
  const nextStarted = next === undefined ? undefined : await tx.endRun(next, unit.owner);
  return { ended: true, delivery, entry, ...(nextStarted === undefined ? {} : { nextStarted }) };
}

/**
 * The session entry after a run's end (a copy): its token counts added, its flags set, and `updatedAt` moved to the
 * end's time when it is a second or more behind it ({@link TOUCH_GRAIN_MS}).
 */
export function applyRunDelta(entry: StoredEntry, delta: EntryRunDelta): StoredEntry {
  const next = { ...entry };
  const { tokens } = delta;
  if (tokens?.inputTokens !== undefined) next.inputTokens = (entry.inputTokens ?? 0) + tokens.inputTokens;
  if (tokens?.outputTokens !== undefined) next.outputTokens = (entry.outputTokens ?? 0) + tokens.outputTokens;
  if (tokens?.totalTokens !== undefined) next.totalTokens = (entry.totalTokens ?? 0) + tokens.totalTokens;
  if (delta.systemSent === true) next.systemSent = true;
  if (delta.abortedLastRun === true) next.abortedLastRun = true;
  else if (delta.abortedLastRun === false && next.abortedLastRun !== undefined) next.abortedLastRun = false;
  if (entry.updatedAt <= delta.updatedAt - TOUCH_GRAIN_MS) next.updatedAt = delta.updatedAt;
  return next;
}

/** The fields a run's end may change ({@link applyRunDelta}). */
const RUN_DELTA_FIELDS = [
  "inputTokens",
  "outputTokens",
  "totalTokens",
  "systemSent",
  "abortedLastRun",
  "updatedAt",
] as const satisfies readonly (keyof StoredEntry)[];

/** Whether a run's end changed the entry (`after` from {@link applyRunDelta}): unchanged, it is not written. */
export function changesEntry(before: StoredEntry, after: StoredEntry): boolean {
  return RUN_DELTA_FIELDS.some((field) => before[field] !== after[field]);
}
