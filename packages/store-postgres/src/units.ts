import { AsyncLocalStorage } from "node:async_hooks";
import { SessionsError } from "@sessions/core";
import type { StoreChange } from "@sessions/gateway";
import type pg from "pg";
import { toStoreError } from "./errors.js";

/** Where an operation runs: a unit of work's connection, or any pooled connection. */
export interface Db {
  query<R extends pg.QueryResultRow = Record<string, unknown>>(
    text: string,
    values?: readonly unknown[],
  ): Promise<pg.QueryResult<R>>;
  /**
   * Inside a unit: holds the named lock until the unit ends, so units that touch the same record take turns
   * (read-modify-write is never lost, a missing record is created once). Outside a unit: nothing to hold.
   */
  lock(name: string): Promise<void>;
  /** Records a change for the change feed: published when the unit commits, dropped if it rolls back. */
  emit(change: StoreChange): void;
  /** Runs `fn` once what the caller wrote has committed (at once outside a unit); never if it rolls back. */
  afterCommit(fn: () => void): void;
}

interface Unit {
  readonly root: RootUnit;
  readonly depth: number;
  done: boolean;
  /** Nested units of this one run one after another (savepoints are a stack). */
  tail: Promise<void>;
}

interface RootUnit extends Unit {
  readonly client: pg.PoolClient;
  readonly changes: StoreChange[];
  /** What to do once the unit has committed (`Db.afterCommit`). */
  readonly committed: (() => void)[];
  /** Lock names held, with the depth that took them (a rolled-back savepoint may have given them up). */
  readonly locks: Map<string, number>;
}

export interface UnitsDeps {
  pool: pg.Pool;
  where: string;
  /** The statement that announces committed `changes` (never none) to other processes, and its parameters. */
  notifySql(changes: readonly StoreChange[]): { text: string; values: string[] };
  /** A committed unit's announcement failed: the change stands, other processes learn of it by polling. */
  onNotifyError(error: unknown): void;
  /** Tells this process's watchers, after commit. */
  publish(changes: readonly StoreChange[]): void;
  /** Whether another process may be listening: while none is, committed changes are not announced. */
  othersListen(): boolean;
  /** The advisory lock key space of this store (its schema): locks never collide across schemas. */
  lockSpace: string;
}

const LOCK_SQL = "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))";

const NUL = new RegExp(String.fromCharCode(0), "g");
/**
 * Postgres text cannot hold NUL. Record bodies are JSON (which escapes it), so only the plain columns — keys,
 * labels, names — could carry one: there it becomes U+FFFD, the same way on write and on lookup.
 */
function textSafe(values: readonly unknown[] | undefined): unknown[] | undefined {
  if (values === undefined) return undefined;
  return values.map((value) =>
    typeof value === "string"
      ? value.replace(NUL, "\uFFFD")
      : Array.isArray(value)
        ? value.map((item) => (typeof item === "string" ? item.replace(NUL, "\uFFFD") : item))
        : value,
  );
}

/**
 * Units of work on Postgres. Each top-level unit is one transaction on its own pooled connection, so units run
 * side by side (also across processes); code inside a unit (found through AsyncLocalStorage) joins it, and a
 * nested unit is a savepoint. Units that touch the same record serialise on a transaction-scoped advisory lock
 * named after it.
 */
export function createUnits(deps: UnitsDeps) {
  const context = new AsyncLocalStorage<Unit>();
  const current = (): Unit | undefined => {
    const unit = context.getStore();
    return unit === undefined || unit.root.done ? undefined : unit;
  };

  // Committed changes reach this process's watchers at once, and the other processes in one NOTIFY per batch: the
  // changes committed while the previous batch was being sent go together. Announced after the commits, not inside
  // them: Postgres runs the commits of notifying transactions one at a time (a global lock held through the WAL
  // flush), which would cap every gateway at one commit per fsync.
  let unannounced: StoreChange[] = [];
  let announcing: Promise<void> | undefined;
  function announce(changes: readonly StoreChange[]): void {
    if (changes.length === 0) return;
    deps.publish(changes);
    if (!deps.othersListen()) return;
    unannounced.push(...changes);
    if (announcing !== undefined) return;
    announcing = (async () => {
      while (unannounced.length > 0) {
        // Let the rest of this tick's commits join the batch.
        await new Promise((resolve) => setImmediate(resolve));
        const batch = unannounced;
        unannounced = [];
        const { text, values } = deps.notifySql(batch);
        await deps.pool.query(text, values).catch((error: unknown) => deps.onNotifyError(error));
      }
    })().finally(() => {
      announcing = undefined;
    });
  }

  function dbOf(unit: Unit): Db {
    const { root } = unit;
    return {
      query: (text, values) => root.client.query(text, textSafe(values)),
      async lock(name) {
        const key = `${deps.lockSpace}/${name}`;
        if (root.locks.has(key)) return;
        await root.client.query(LOCK_SQL, [key]);
        if (!root.locks.has(key)) root.locks.set(key, unit.done ? 0 : unit.depth);
      },
      emit: (change) => root.changes.push(change),
      afterCommit: (fn) => root.committed.push(fn),
    };
  }

  const poolDb: Db = {
    query: (text, values) => deps.pool.query(text, textSafe(values)),
    lock: async () => {},
    emit: (change) => deps.publish([change]),
    afterCommit: (fn) => fn(),
  };

  async function nested<T>(parent: Unit, work: (unit: Unit) => Promise<T>): Promise<T> {
    const { root } = parent;
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
      const committedMark = root.committed.length;
      const name = `unit_${unit.depth}`;
      await root.client.query(`SAVEPOINT ${name}`).catch((error: unknown) => {
        throw toStoreError(error, deps.where);
      });
      let result: T;
      try {
        result = await context.run(unit, () => work(unit));
      } catch (error) {
        unit.done = true;
        if (!root.done) {
          await root.client
            .query(`ROLLBACK TO SAVEPOINT ${name}; RELEASE SAVEPOINT ${name}`)
            .catch(() => undefined);
          root.changes.length = mark;
          root.committed.length = committedMark;
          for (const [key, depth] of root.locks) if (depth >= unit.depth) root.locks.delete(key);
        }
        throw error;
      }
      unit.done = true;
      if (root.done) throw new SessionsError("conflict", "nested transaction outlived its outer one");
      await root.client.query(`RELEASE SAVEPOINT ${name}`).catch((error: unknown) => {
        throw toStoreError(error, deps.where);
      });
      return result;
    } finally {
      next();
    }
  }

  async function transaction<T>(work: (unit: Unit) => Promise<T>): Promise<T> {
    const parent = current();
    if (parent !== undefined) return nested(parent, work);
    let client: pg.PoolClient;
    try {
      client = await deps.pool.connect();
    } catch (error) {
      throw toStoreError(error, deps.where);
    }
    const root: RootUnit = {
      get root() {
        return root;
      },
      depth: 0,
      done: false,
      tail: Promise.resolve(),
      client,
      changes: [],
      committed: [],
      locks: new Map(),
    };
    let broken: Error | undefined;
    const end = async (sql: string): Promise<pg.QueryResult | pg.QueryResult[]> => {
      try {
        return await client.query(sql);
      } catch (error) {
        broken = error as Error;
        throw error;
      }
    };
    try {
      try {
        await end("BEGIN");
      } catch (error) {
        throw toStoreError(error, deps.where);
      }
      let result: T;
      try {
        result = await context.run(root, () => work(root));
      } catch (error) {
        root.done = true;
        await end("ROLLBACK").catch(() => undefined);
        throw error;
      }
      root.done = true;
      let committed: pg.QueryResult | pg.QueryResult[];
      try {
        committed = await end("COMMIT");
      } catch (error) {
        await end("ROLLBACK").catch(() => undefined);
        throw toStoreError(error, deps.where);
      }
      const last = Array.isArray(committed) ? committed[committed.length - 1] : committed;
      // COMMIT of a transaction a failed statement aborted answers ROLLBACK instead of failing: say so.
      if (last?.command !== "COMMIT") {
        throw new SessionsError(
          "unavailable",
          `A statement failed inside the transaction, so Postgres at ${deps.where} rolled it back; nothing of it was written`,
          { retryAfterMs: 1000 },
        );
      }
      for (const fn of root.committed) fn();
      announce(root.changes);
      return result;
    } finally {
      root.done = true;
      // A connection whose state is unknown (failed BEGIN/COMMIT/ROLLBACK) is closed, not reused.
      client.release(broken);
    }
  }

  return {
    current,
    /** Tells this process's watchers of committed `changes` now, and the other processes with the next batch. */
    announce,
    /** Resolves once every change announced so far has been sent to the other processes (or failed to). */
    async announced(): Promise<void> {
      while (announcing !== undefined) await announcing;
    },
    /** The Db of the unit the caller is in, or the pool's. */
    db: (): Db => {
      const unit = current();
      return unit === undefined ? poolDb : dbOf(unit);
    },
    dbOf,
    transaction,
  };
}

export type Units = ReturnType<typeof createUnits>;
export type { Unit };
