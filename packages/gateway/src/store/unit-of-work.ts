import { AsyncLocalStorage } from "node:async_hooks";
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
  commit(): void;
  rollback(): void;
  /** Nested units are savepoints; `depth` is 1 for the first nested level. */
  savepoint(depth: number): void;
  releaseSavepoint(depth: number): void;
  rollbackToSavepoint(depth: number): void;
}

interface Unit {
  readonly root: RootUnit;
  readonly depth: number;
  done: boolean;
  /** Nested units of this one run one after another (savepoints are a stack). */
  tail: Promise<void>;
}

interface RootUnit extends Unit {
  changes: StoreChange[];
}

/**
 * One open unit of work at a time per store. Callers outside it wait; code inside it (found through
 * AsyncLocalStorage) joins it, so a `store.*` call or a nested `store.transaction` from inside `work` never
 * waits on itself. Nested transactions are savepoints: a throw undoes only the nested part.
 */
export interface UnitCoordinator {
  /** True while a unit is open and the caller is not part of it: await `idle()` and check again. */
  blocked(): boolean;
  idle(): Promise<void>;
  transaction<T>(work: (tx: StoreOps) => Promise<T>): Promise<T>;
  /** Records a change: published now, or when the open unit commits (dropped if it rolls back). */
  emit(change: StoreChange): void;
  watch(listener: (change: StoreChange) => void): () => void;
  /** A store's own methods: each waits for an open unit (unless it is inside it), checks, then runs `fn`. */
  guard<F extends SyncFunctions>(fns: F, check: () => void): Guarded<F>;
}

export function createUnitCoordinator(hooks: UnitHooks, core: SyncStoreOps): UnitCoordinator {
  const context = new AsyncLocalStorage<Unit>();
  const listeners = new Set<(change: StoreChange) => void>();
  let active: RootUnit | undefined;
  // Callers waiting for the open unit, in arrival order. A commit wakes plain operations up to the next waiting
  // transaction and that transaction only — never everyone (with hundreds waiting, that would be quadratic).
  const waiting: { unit: boolean; wake: () => void }[] = [];
  const wait = (unit: boolean, front = false) =>
    new Promise<void>((wake) => {
      if (front) waiting.unshift({ unit, wake });
      else waiting.push({ unit, wake });
    });
  function handOff(): void {
    while (waiting.length > 0 && active === undefined) {
      const next = waiting.shift() as { unit: boolean; wake: () => void };
      next.wake();
      if (next.unit) return;
    }
  }

  const blocked = () => active !== undefined && context.getStore()?.root !== active;

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

  function txOps(unit: Unit): StoreOps {
    const ops: Record<string, unknown> = {};
    for (const [name, fn] of Object.entries(core) as [string, (...args: unknown[]) => unknown][]) {
      ops[name] = async (...args: unknown[]) => {
        if (unit.done) {
          throw new SessionsError("conflict", `tx.${name} called after its transaction ended`);
        }
        return fn(...args);
      };
    }
    return ops as unknown as StoreOps;
  }

  async function nested<T>(parent: Unit, work: (tx: StoreOps) => Promise<T>): Promise<T> {
    const root = parent.root;
    const previous = parent.tail;
    let next = () => {};
    parent.tail = new Promise<void>((resolve) => {
      next = resolve;
    });
    try {
      await previous;
      if (root.done)
        throw new SessionsError("conflict", "nested transaction started after its outer one ended");
      const unit: Unit = { root, depth: parent.depth + 1, done: false, tail: Promise.resolve() };
      const mark = root.changes.length;
      hooks.savepoint(unit.depth);
      let result: T;
      try {
        result = await context.run(unit, () => work(txOps(unit)));
      } catch (error) {
        unit.done = true;
        if (!root.done) {
          hooks.rollbackToSavepoint(unit.depth);
          root.changes.length = mark;
        }
        throw error;
      }
      unit.done = true;
      if (root.done) throw new SessionsError("conflict", "nested transaction outlived its outer one");
      hooks.releaseSavepoint(unit.depth);
      return result;
    } finally {
      next();
    }
  }

  return {
    blocked,
    idle: () => (active === undefined ? Promise.resolve() : wait(false)),
    async transaction(work) {
      const parent = context.getStore();
      if (parent !== undefined && parent.root === active && !parent.done) return nested(parent, work);
      // A woken transaction keeps its place if another slipped in before it resumed.
      for (let first = true; active !== undefined; first = false) await wait(true, !first);
      const root: RootUnit = {
        get root() {
          return root;
        },
        depth: 0,
        done: false,
        tail: Promise.resolve(),
        changes: [],
      };
      hooks.begin();
      active = root;
      const finish = () => {
        root.done = true;
        active = undefined;
        handOff();
      };
      const abort = (error: unknown) => {
        try {
          hooks.rollback();
        } catch {
          // The error worth reporting is the one that made us roll back.
        }
        finish();
        return error;
      };
      let result: Awaited<ReturnType<typeof work>>;
      try {
        result = await context.run(root, () => work(txOps(root)));
      } catch (error) {
        throw abort(error);
      }
      try {
        root.done = true;
        hooks.commit();
      } catch (error) {
        throw abort(error);
      }
      finish();
      publish(root.changes);
      return result;
    },
    emit(change) {
      if (active !== undefined) active.changes.push(change);
      else publish([change]);
    },
    watch(listener) {
      const own = (change: StoreChange) => listener(change);
      listeners.add(own);
      return () => {
        listeners.delete(own);
      };
    },
    guard<F extends SyncFunctions>(fns: F, check: () => void) {
      const guarded: Record<string, unknown> = {};
      for (const [name, fn] of Object.entries(fns)) {
        guarded[name] = async (...args: unknown[]) => {
          while (blocked()) await wait(false);
          check();
          return fn(...args);
        };
      }
      return guarded as Guarded<F>;
    },
  };
}
