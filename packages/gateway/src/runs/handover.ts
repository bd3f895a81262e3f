import type { RunRecord, StoredEntry } from "../store/types.js";

/**
 * The runs waiting on this process's lane of each session, in the order they will execute, and what a run's end
 * hands to the next one: a run's end records the next run as started in the same unit of work (`RunEndUnit.next`)
 * and passes it the session's entry as the end left it, so the next run writes and reads nothing to begin.
 */
export class Handovers {
  private readonly waiting = new Map<string, RunRecord[]>();
  private readonly handed = new Map<string, { run: RunRecord; entry: StoredEntry | undefined }>();

  /** `run` was queued on its session's lane here, behind whatever is there. */
  queue(run: RunRecord): void {
    const list = this.waiting.get(run.sessionKey);
    if (list === undefined) this.waiting.set(run.sessionKey, [run]);
    else list.push(run);
  }

  /** The run that executes next on the session's lane here, other than `current`. */
  next(sessionKey: string, current: string): RunRecord | undefined {
    return this.waiting.get(sessionKey)?.find((run) => run.runId !== current);
  }

  /** `run` begins executing (or leaves the lane): it is no longer waiting. */
  leave(run: RunRecord): void {
    const list = this.waiting.get(run.sessionKey);
    if (list === undefined) return;
    const at = list.findIndex((r) => r.runId === run.runId);
    if (at >= 0) list.splice(at, 1);
    if (list.length === 0) this.waiting.delete(run.sessionKey);
  }

  /** The end before it recorded `run` as started (this record), and read the session's entry as `entry`. */
  hand(run: RunRecord, entry: StoredEntry | undefined): void {
    this.handed.set(run.runId, { run, entry });
  }

  /** What the end before it handed the run (once), or undefined when it starts on its own. */
  take(runId: string): { run: RunRecord; entry: StoredEntry | undefined } | undefined {
    const handed = this.handed.get(runId);
    this.handed.delete(runId);
    return handed;
  }
}
