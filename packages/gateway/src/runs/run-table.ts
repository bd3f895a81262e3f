import { Lanes, Semaphore } from "../lanes.js";
import type { RunRecord } from "../store/types.js";

/** A run this process is executing: its abort switch and session. */
interface ActiveRun {
  controller: AbortController;
  sessionKey: string;
}

/** Why a run was stopped from outside: by `chat.abort`, `sessions.delete` or a closing gateway. */
export class RunAborted extends Error {
  constructor() {
    super("run aborted");
  }
}

/** A run that hit its `timeoutMs`. */
export class RunTimeout extends Error {
  constructor(readonly seconds: number) {
    super(`run timed out after ${seconds}s`);
  }
}

/**
 * The runs this process holds in memory: one lane per session (one run at a time), the sub-agent slots, the abort
 * switches of runs under way, the per-run event sequence, and local waiters woken when a run ends.
 */
export class RunTable {
  readonly lanes = new Lanes();
  readonly subagentSlots: Semaphore;
  private readonly active = new Map<string, ActiveRun>();
  private readonly waiters = new Map<string, Set<(run: RunRecord) => void>>();
  private readonly seqs = new Map<string, number>();
  /** Runs this process has scheduled and will end itself, until `settle`: their waiters need no store read. */
  private readonly local = new Map<string, RunRecord>();

  constructor(maxConcurrentSubagents: number) {
    this.subagentSlots = new Semaphore(maxConcurrentSubagents);
  }

  register(run: RunRecord): AbortController {
    const controller = new AbortController();
    this.active.set(run.runId, { controller, sessionKey: run.sessionKey });
    this.local.set(run.runId, run);
    return controller;
  }

  /** The latest record of a run this process will end (and `settle`) itself. */
  localRun(runId: string): RunRecord | undefined {
    return this.local.get(runId);
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

  /** Aborts a session's running and queued runs (or just `runId`); returns the ids aborted. */
  abortSession(sessionKey: string, runId?: string): string[] {
    const runIds: string[] = [];
    for (const [id, info] of this.active) {
      if (info.sessionKey !== sessionKey || (runId !== undefined && runId !== id)) continue;
      if (info.controller.signal.aborted) continue;
      info.controller.abort(new RunAborted());
      runIds.push(id);
    }
    return runIds;
  }

  abortAll(): void {
    for (const info of this.active.values()) info.controller.abort(new RunAborted());
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
    const set = this.waiters.get(run.runId);
    if (set === undefined) return;
    this.waiters.delete(run.runId);
    for (const resolve of set) resolve(run);
  }
}
