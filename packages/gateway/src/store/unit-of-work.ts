import { AsyncLocalStorage } from "node:async_hooks";
import { setImmediate } from "node:timers";
import { SessionsError } from "@sessions/core";
import type { StoreChange, StoreOps } from "./types.js";

/** `StoreOps` as the synchronous functions a store implements them with (the async shell is added here). */
export type SyncStoreOps = {
  [K in keyof StoreOps]: (...args: Parameters<StoreOps[K]>) => Awaited<ReturnType<StoreOps[K]>>;
};

// biome-ignore lint/suspicious/noExplicitAny: parameter lists of any shape
type SyncFunctions = Record<string, (...args: any[]) => unknown>;
type Guarded<F extends SyncFunctions> = {
  [K in keyof F]: (...args: Parameters<F[K]>) => Promise<ReturnType<F[K]>>;
};

/** What a store does at the edges of a unit of work: SQL statements, or an undo log. */
export interface UnitHooks {
  begin(): void;
  /** Commits the open transaction, which holds `units` units of work. */
  commit(units: number): void;
  rollback(): void;
  /** Each unit is a savepoint in the open transaction; `depth` is 1 for a unit, 2+ for nested ones. */
  savepoint(depth: number): void;
  releaseSavepoint(depth: number): void;
  rollbackToSavepoint(depth: number): void;
  /** False once the open transaction is gone (SQLite rolls a whole transaction back after some errors). */
  intact(): boolean;
  /**
   * Undo without savepoints: a store that logs the writes of the open transaction can take a unit's writes back
   * by rolling the transaction back and doing the earlier units' writes again. Units then cost no savepoint (no
   * statement journal) unless one fails. Without it, each unit after the first is a savepoint.
   */
  redo?: RedoHooks | undefined;
}

export interface RedoHooks {
  /** Where the open transaction's write log stands now (before a unit starts). */
  mark(): number;
  /**
   * Rolls the open transaction back (or finds it gone) and opens a new one holding the writes logged before
   * `mark` again; throws when it cannot (then nothing of the transaction is left).
   */
  undo(mark: number): void;
}

export interface UnitOptions {
  /**
   * Commit the units that queue up while one runs together, as one transaction (group commit). Off: each unit
   * is its own transaction.
   */
  groupCommit: boolean;
  /**
   * Reads that see committed state while a transaction is open (a second connection); without them, reads wait
   * for it to end. With no transaction open, reads use the writing connection (its page cache is the warm one).
   */
  reader?: Partial<Record<string, (...args: never[]) => unknown>> | undefined;
  /** Reads that go to the reader even with no transaction open (it serves them from memory). */
  readerAlways?: readonly string[] | undefined;
  /** At most this many units per transaction (default 1,000). */
  maxUnits?: number | undefined;
  /** A transaction takes no new units once it has been open this long (default 20 ms). */
  maxOpenMs?: number | undefined;
}

/**
 * A transaction of the store: the units that commit together, the changes they made and what the store does
 * once they are committed (cache updates), in order. A unit rolled back truncates both lists to where it began.
 */
interface Batch {
  changes: StoreChange[];
  effects: (() => void)[];
}

type Mark = { changes: number; effects: number };
type Finished = { job: Job; result: unknown }[];
const markOf = (batch: Batch): Mark => ({ changes: batch.changes.length, effects: batch.effects.length });
function truncate(batch: Batch, mark: Mark): void {
  batch.changes.length = mark.changes;
  batch.effects.length = mark.effects;
}

interface Unit {
  readonly batch: Batch;
  /** The depth-1 unit this one belongs to (itself for a unit). */
  top: Unit;
  readonly depth: number;
  done: boolean;
  /** Nested units of this one run one after another (savepoints are a stack): the last one's end. */
  tail: Promise<void> | undefined;
}

interface Job {
  /** A unit of work (`transaction`) … */
  work?: ((tx: StoreOps) => Promise<unknown>) | undefined;
  /** … or one synchronous write (a store call outside any unit). */
  op?: (() => unknown) | undefined;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

/**
 * Units of work on one connection, one at a time, committed in groups. A unit runs as a savepoint inside the
 * open transaction: a throw undoes only its writes. Units that queue while one runs join the same transaction,
 * which commits when the queue is empty (or at a size or age limit); every unit's promise settles only after the
 * real COMMIT, and the change feed hears of the changes after it too.
 * Code inside a unit (found through AsyncLocalStorage) joins it: a `store.*` call or a nested `transaction`
 * from inside `work` never waits on itself; nested transactions are savepoints within the unit.
 */
export interface UnitCoordinator {
  transaction<T>(work: (tx: StoreOps) => Promise<T>): Promise<T>;
  /** Runs `fn` (a synchronous write) in the next transaction; settles after its commit. */
  write<T>(fn: () => T): Promise<T>;
  /** Records a change of the running unit: published when its transaction commits (dropped if it rolls back). */
  emit(change: StoreChange): void;
  /** Runs `effect` right after the running unit's transaction commits (never if the unit rolls back). */
  afterCommit(effect: () => void): void;
  watch(listener: (change: StoreChange) => void): () => void;
  /**
   * A store's own methods: inside a unit they join it; outside, `writes` queue as a unit of their own and reads
   * run on the reader (or between transactions). `check` runs first each time.
   */
  guard<F extends SyncFunctions>(fns: F, writes: readonly string[], check: () => void): Guarded<F>;
  /** Resolves once nothing is queued or open. */
  drain(): Promise<void>;
}

const UNIT = Symbol("unit");
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));
/**
 * The longest the write loop runs batch after batch without letting the event loop turn. Units resolve their
 * callers with promises, and callers queue the next units from there, so under a steady stream of work (instant
 * runners, in-process load) nothing else would run: no timer (run timeouts, lease renewals) and no socket.
 */
const YIELD_EVERY_MS = 10;

export function createUnitCoordinator(
  hooks: UnitHooks,
  core: SyncStoreOps,
  options: UnitOptions,
): UnitCoordinator {
  const context = new AsyncLocalStorage<Unit>();
  const listeners = new Set<(change: StoreChange) => void>();
  const maxUnits = options.groupCommit ? Math.max(1, options.maxUnits ?? 1000) : 1;
  const maxOpenMs = options.maxOpenMs ?? 20;
  const reader = options.reader;
  const redo = hooks.redo;

  let open: Batch | undefined;
  let running: Unit | undefined;
  let looping = false;
  /** When the write loop last let the event loop turn (kept across loops: a loop may end and restart in one burst). */
  let lastTurn = performance.now();
  const jobs: Job[] = [];
  // Reads waiting for the open transaction to end (stores without a reader), and callers of `drain`.
  const readsWaiting: (() => void)[] = [];
  const drained: (() => void)[] = [];

  function publish(changes: readonly StoreChange[]): void {
    for (const change of changes) {
      for (const listener of listeners) {
        try {
          listener(change);
        } catch {
          // A watcher's bug is its own: the write has committed and the other watchers still hear of it.
        }
      }
    }
  }

  const ended = (unit: Unit) => unit.done || unit.top.done;
  /** The unit the caller runs inside, if that unit is still running. */
  function joined(): Unit | undefined {
    const unit = context.getStore();
    return unit !== undefined && unit.batch === open && !ended(unit) ? unit : undefined;
  }

  // One prototype of the `tx` methods for every unit (a unit's `tx` only says which unit it is): call them as
  // methods, `tx.putRun(run)`.
  const txMethods: Record<string, unknown> = {};
  for (const [name, fn] of Object.entries(core) as [string, (...args: unknown[]) => unknown][]) {
    txMethods[name] = function (this: { [UNIT]?: Unit } | undefined, ...args: unknown[]) {
      const unit = this?.[UNIT];
      if (unit === undefined || ended(unit)) {
        const why =
          unit === undefined
            ? "called without its tx (call it as tx.method(…))"
            : "called after its transaction ended";
        return Promise.reject(new SessionsError("conflict", `tx.${name} ${why}`));
      }
      try {
        return Promise.resolve(fn(...args));
      } catch (error) {
        return Promise.reject(error);
      }
    };
  }
  const txOps = (unit: Unit): StoreOps => {
    const tx = Object.create(txMethods) as { [UNIT]: Unit };
    tx[UNIT] = unit;
    return tx as unknown as StoreOps;
  };

  async function nested<T>(parent: Unit, work: (tx: StoreOps) => Promise<T>): Promise<T> {
    const top = parent.top;
    const previous = parent.tail;
    let next = () => {};
    parent.tail = new Promise<void>((resolve) => {
      next = resolve;
    });
    try {
      await previous;
      if (ended(parent))
        throw new SessionsError("conflict", "nested transaction started after its outer one ended");
      const unit: Unit = {
        batch: parent.batch,
        top,
        depth: parent.depth + 1,
        done: false,
        tail: undefined,
      };
      const mark = markOf(parent.batch);
      hooks.savepoint(unit.depth);
      let result: T;
      try {
        result = await context.run(unit, () => work(txOps(unit)));
      } catch (error) {
        unit.done = true;
        if (!top.done) {
          hooks.rollbackToSavepoint(unit.depth);
          truncate(parent.batch, mark);
        }
        throw error;
      }
      unit.done = true;
      if (top.done) throw new SessionsError("conflict", "nested transaction outlived its outer one");
      hooks.releaseSavepoint(unit.depth);
      return result;
    } finally {
      next();
    }
  }

  function enqueue(job: Job): void {
    jobs.push(job);
    if (!looping) {
      // An idle store starts at once: a lone write commits before the call returns, as it would alone.
      looping = true;
      void loop();
    }
  }

  function wakeReads(): void {
    for (const wake of readsWaiting.splice(0)) wake();
  }

  async function loop(): Promise<void> {
    try {
      while (jobs.length > 0) {
        await runBatch();
        // Reads that waited for this transaction go before the next one starts; so do timers and sockets, now
        // and then.
        if (readsWaiting.length > 0) wakeReads();
        else if (performance.now() - lastTurn < YIELD_EVERY_MS) continue;
        await nextTurn();
        lastTurn = performance.now();
      }
    } finally {
      looping = false;
      wakeReads();
      for (const done of drained.splice(0)) done();
    }
  }

  function newUnit(batch: Batch): Unit {
    const unit: Unit = { batch, top: undefined as unknown as Unit, depth: 1, done: false, tail: undefined };
    unit.top = unit;
    return unit;
  }

  /**
   * After a unit threw: undo it alone (by redoing the units before it, or back to its savepoint), or say the
   * whole transaction is gone when the unit had no savepoint (it was the first in the transaction, so nothing
   * else is lost), SQLite dropped it, or the redo failed.
   */
  function undoUnit(
    batch: Batch,
    job: Job,
    mark: Mark,
    guarded: boolean,
    error: unknown,
    redoMark: number,
  ): unknown {
    truncate(batch, mark);
    job.reject(error);
    if (redo !== undefined) {
      try {
        redo.undo(redoMark);
        return undefined;
      } catch (redoError) {
        return redoError;
      }
    }
    if (!guarded || !hooks.intact()) return error;
    try {
      hooks.rollbackToSavepoint(1);
      return undefined;
    } catch (rollbackError) {
      return rollbackError;
    }
  }

  /** A store call made outside any unit, as a unit of its own (synchronous); returns an error if it lost the transaction. */
  function runOp(batch: Batch, job: Job, finished: Finished): unknown {
    const savepoint = redo === undefined && finished.length > 0;
    const mark = markOf(batch);
    const redoMark = redo === undefined ? 0 : redo.mark();
    const unit = newUnit(batch);
    try {
      if (savepoint) hooks.savepoint(1);
      running = unit;
      const result = (job.op as () => unknown)();
      unit.done = true;
      running = undefined;
      if (savepoint) hooks.releaseSavepoint(1);
      finished.push({ job, result });
      return undefined;
    } catch (error) {
      unit.done = true;
      running = undefined;
      return undoUnit(batch, job, mark, savepoint, error, redoMark);
    }
  }

  /** A `transaction` as a unit of the open transaction; returns an error if it lost the transaction. */
  async function runWork(batch: Batch, job: Job, finished: Finished): Promise<unknown> {
    const savepoint = redo === undefined && finished.length > 0;
    const mark = markOf(batch);
    const redoMark = redo === undefined ? 0 : redo.mark();
    const unit = newUnit(batch);
    try {
      if (savepoint) hooks.savepoint(1);
      running = unit;
      const work = job.work as (tx: StoreOps) => Promise<unknown>;
      const result = await context.run(unit, () => work(txOps(unit)));
      unit.done = true;
      running = undefined;
      if (savepoint) hooks.releaseSavepoint(1);
      finished.push({ job, result });
      return undefined;
    } catch (error) {
      unit.done = true;
      running = undefined;
      return undoUnit(batch, job, mark, savepoint, error, redoMark);
    }
  }

  async function runBatch(): Promise<void> {
    try {
      hooks.begin();
    } catch (error) {
      // The transaction never opened: the job at the head learns why; the rest try again.
      jobs.shift()?.reject(error);
      return;
    }
    const batch: Batch = { changes: [], effects: [] };
    open = batch;
    const started = performance.now();
    const finished: Finished = [];
    let lost: unknown;
    let units = 0;
    // Units that queued while this one ran join it, up to a count and an age; then it commits.
    while (jobs.length > 0 && units < maxUnits && lost === undefined) {
      units++;
      const job = jobs.shift() as Job;
      lost = job.op !== undefined ? runOp(batch, job, finished) : await runWork(batch, job, finished);
      if (performance.now() - started > maxOpenMs) break;
    }
    if (lost === undefined) {
      try {
        hooks.commit(finished.length);
      } catch (error) {
        lost = error;
      }
    }
    if (lost !== undefined) {
      try {
        hooks.rollback();
      } catch {
        // The error worth reporting is the one that made us roll back.
      }
    }
    open = undefined;
    if (lost !== undefined) {
      // Nothing of this transaction was written: no unit of it may be acknowledged.
      for (const { job } of finished) job.reject(lost);
      return;
    }
    for (const effect of batch.effects) {
      try {
        effect();
      } catch {
        // An effect only keeps a cache in step; a cache that cannot follow drops its entry on its own.
      }
    }
    publish(batch.changes);
    for (const { job, result } of finished) job.resolve(result);
  }

  function submit<T>(work: Job["work"], op: Job["op"]): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      enqueue({ work, op, resolve: resolve as (value: unknown) => void, reject });
    });
  }

  const waitForReads = () => new Promise<void>((wake) => readsWaiting.push(wake));

  return {
    transaction<T>(work: (tx: StoreOps) => Promise<T>): Promise<T> {
      const parent = joined();
      if (parent !== undefined) return nested(parent, work);
      return submit<T>(work as (tx: StoreOps) => Promise<unknown>, undefined);
    },
    write<T>(fn: () => T): Promise<T> {
      return submit<T>(undefined, fn);
    },
    emit(change) {
      if (open !== undefined && running !== undefined) open.changes.push(change);
      else publish([change]);
    },
    afterCommit(effect) {
      if (open !== undefined && running !== undefined) open.effects.push(effect);
      else effect();
    },
    watch(listener) {
      const own = (change: StoreChange) => listener(change);
      listeners.add(own);
      return () => {
        listeners.delete(own);
      };
    },
    guard<F extends SyncFunctions>(fns: F, writes: readonly string[], check: () => void) {
      const writing = new Set(writes);
      const guarded: Record<string, unknown> = {};
      for (const [name, fn] of Object.entries(fns)) {
        const read = reader?.[name] as ((...args: unknown[]) => unknown) | undefined;
        if (writing.has(name)) {
          guarded[name] = (...args: unknown[]) => {
            if (joined() !== undefined) {
              try {
                return Promise.resolve(fn(...args));
              } catch (error) {
                return Promise.reject(error);
              }
            }
            return submit(undefined, () => {
              check();
              return fn(...args);
            });
          };
        } else if (read !== undefined) {
          const always = options.readerAlways?.includes(name) === true;
          guarded[name] = (...args: unknown[]) => {
            try {
              check();
              // Inside a unit: its own writes. Outside, during a transaction: committed state, on the reader.
              const outside = open !== undefined ? joined() === undefined : always;
              return Promise.resolve(outside ? read(...args) : fn(...args));
            } catch (error) {
              return Promise.reject(error);
            }
          };
        } else {
          guarded[name] = async (...args: unknown[]) => {
            if (joined() === undefined) while (open !== undefined) await waitForReads();
            check();
            return fn(...args);
          };
        }
      }
      return guarded as Guarded<F>;
    },
    drain() {
      if (!looping) return Promise.resolve();
      return new Promise<void>((resolve) => drained.push(resolve));
    },
  };
}
