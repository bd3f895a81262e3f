import { Lanes, Semaphore } from "./lanes.js";
import { Handovers } from "./runs/handover.js";
import type { GuardRecord, RunRecord, RunUsage, StreamPreview } from "./store/types.js";

/**
 * The abort switch of a run this process holds. Most runs are never aborted: the `AbortSignal` a runner sees is
 * made only when it asks for it, and the run's wait on its runner hears of an abort through `onAbort`.
 */
export class RunControl {
  private controller: AbortController | undefined;
  private listener: ((reason: unknown) => void) | undefined;
  aborted = false;
  reason: unknown;
  /** Calls of the run the tree's guards refused: recorded with its end. */
  readonly guards: GuardRecord[] = [];
  /** What the runner's finished model steps used so far (its `usage` events), added up. */
  spent: RunUsage | undefined;

  /** Adds one model step's usage to `spent`. */
  addUsage(usage: RunUsage): void {
    const sum = (a: number | undefined, b: number | undefined) =>
      a === undefined && b === undefined ? undefined : (a ?? 0) + (b ?? 0);
    const spent: RunUsage = {};
    for (const field of ["inputTokens", "outputTokens", "totalTokens", "costUsd"] as const) {
      const value = sum(this.spent?.[field], usage[field]);
      if (value !== undefined) spent[field] = value;
    }
    this.spent = spent;
  }

  constructor(readonly sessionKey: string) {}

  /** Aborted with the run's reason once the run is aborted (made on first use). */
  get signal(): AbortSignal {
    if (this.controller === undefined) {
      this.controller = new AbortController();
      if (this.aborted) this.controller.abort(this.reason);
    }
    return this.controller.signal;
  }

  abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    this.controller?.abort(reason);
    this.listener?.(reason);
  }

  /** Settles like `work`, or rejects with the reason as soon as the run is aborted (at once if it is). */
  race<T>(work: Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      if (this.aborted) reject(this.reason);
      else this.listener = reject;
      work.then(resolve, reject);
    });
  }
}

/** Why a run was stopped from outside: by `chat.abort`, `sessions.delete` or a closing gateway. */
export class RunAborted extends Error {
  constructor() {
    super("run aborted");
  }
}

/**
 * Why a run stopped without an end: its gateway could not renew its session's lane in time (or found it taken), so
 * it stopped acting under it before another gateway could take the lane over. The run is this gateway's to run
 * again once it holds the lane again, unless another gateway ended or took it meanwhile.
 */
export class LaneLost extends Error {
  /** The messages the run's reply had streamed into when it stopped: its next attempt edits them on. */
  stream?: StreamPreview | undefined;
  constructor(
    readonly lease: string,
    reason: string,
  ) {
    super(`the session's lane (${lease}) was lost: ${reason}`);
  }
}

/** A run that hit its `timeoutMs`. */
export class RunTimeout extends Error {
  constructor(
    readonly seconds: number,
    message = `run timed out after ${seconds}s`,
  ) {
    super(message);
  }
}

/** A run stopped at its tree's budget deadline (it ends `timeout`, and its reply target is told so). */
export class BudgetDeadline extends RunTimeout {
  constructor(
    seconds: number,
    readonly deadlineAt: number,
  ) {
    super(seconds, `run stopped at its request's budget deadline (${new Date(deadlineAt).toISOString()})`);
  }
}

/** How many of the runs settled last a `RunTable` keeps (a few MB at most). */
const ENDED_KEPT = 4096;

/**
 * The runs this process holds in memory: one lane per session (one run at a time), the sub-agent slots, the abort
 * switches of runs under way, the per-run event sequence, and local waiters woken when a run ends.
 */
export class RunTable {
  readonly lanes = new Lanes();
  /** The runs waiting on each session's lane here, and what each run's end hands the next one. */
  readonly handovers = new Handovers();
  readonly subagentSlots: Semaphore;
  private readonly active = new Map<string, RunControl>();
  private readonly waiters = new Map<string, Set<(run: RunRecord) => void>>();
  private readonly seqs = new Map<string, number>();
  /** Runs this process has scheduled and will end itself, until `settle`: their waiters need no store read. */
  private readonly local = new Map<string, RunRecord>();
  /** The last runs settled here (final), so a wait that comes after the end needs no store read either. */
  private readonly ended = new Map<string, RunRecord>();

  constructor(maxConcurrentSubagents: number) {
    this.subagentSlots = new Semaphore(maxConcurrentSubagents);
  }

  register(run: RunRecord): RunControl {
    const control = new RunControl(run.sessionKey);
    this.active.set(run.runId, control);
    this.local.set(run.runId, run);
    return control;
  }

  /** The latest record of a run this process will end (and `settle`) itself. */
  localRun(runId: string): RunRecord | undefined {
    return this.local.get(runId);
  }

  /** A run settled here lately (its final record), if it is one of the last few thousand. */
  endedRun(runId: string): RunRecord | undefined {
    return this.ended.get(runId);
  }

  /** This process will not end the run after all: its waiters are left to the change feed. */
  disown(runId: string): void {
    this.local.delete(runId);
  }

  /** A local run changed (it started). */
  update(run: RunRecord): void {
    if (this.local.has(run.runId)) this.local.set(run.runId, run);
  }

  unregister(runId: string): void {
    this.active.delete(runId);
  }

  /** Notes a call of a run under way here that the tree's guards refused (kept for its end, at most 20). */
  noteGuard(runId: string, guard: GuardRecord): void {
    const guards = this.active.get(runId)?.guards;
    if (guards !== undefined && guards.length < 20) guards.push(guard);
  }

  /** Aborts a session's running and queued runs (or just `runId`); returns the ids aborted. */
  abortSession(sessionKey: string, runId?: string): string[] {
    const runIds: string[] = [];
    for (const [id, control] of this.active) {
      if (control.sessionKey !== sessionKey || (runId !== undefined && runId !== id)) continue;
      if (control.aborted) continue;
      control.abort(new RunAborted());
      runIds.push(id);
    }
    return runIds;
  }

  /** Whether a run of the session is queued or running here (registered and not yet at its end). */
  hasActive(sessionKey: string): boolean {
    for (const control of this.active.values()) if (control.sessionKey === sessionKey) return true;
    return false;
  }

  abortAll(): void {
    for (const control of this.active.values()) control.abort(new RunAborted());
  }

  nextSeq(runId: string): number {
    const seq = (this.seqs.get(runId) ?? 0) + 1;
    this.seqs.set(runId, seq);
    return seq;
  }

  forgetSeq(runId: string): void {
    this.seqs.delete(runId);
  }

  addWaiter(runId: string, onDone: (run: RunRecord) => void): () => boolean {
    let set = this.waiters.get(runId);
    if (set === undefined) {
      set = new Set();
      this.waiters.set(runId, set);
    }
    set.add(onDone);
    const own = set;
    return () => {
      const removed = own.delete(onDone);
      if (own.size === 0 && this.waiters.get(runId) === own) this.waiters.delete(runId);
      return removed;
    };
  }

  isAwaited(runId: string): boolean {
    return this.waiters.has(runId);
  }

  /** The runs someone here waits on (cluster mode re-reads them now and then, in case a change went unheard). */
  awaitedRuns(): string[] {
    return [...this.waiters.keys()];
  }

  /** Wakes everyone waiting on this run (it has ended). */
  settle(run: RunRecord): void {
    this.local.delete(run.runId);
    // Final records do not change again, but for a run merged into one that then failed (`failMerged`): not kept.
    if (run.mergedInto === undefined) {
      this.ended.delete(run.runId);
      this.ended.set(run.runId, run);
      if (this.ended.size > ENDED_KEPT) this.ended.delete(this.ended.keys().next().value as string);
    }
    const set = this.waiters.get(run.runId);
    if (set === undefined) return;
    this.waiters.delete(run.runId);
    for (const resolve of set) resolve(run);
  }
}
