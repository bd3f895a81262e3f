import { mkdirSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { SessionsError } from "@sessions/core";
import Database from "better-sqlite3";
import { holderGone } from "../lease-liveness.js";
import { LEASE_WRITES, type Lease, type SessionStore, STORE_WRITES } from "../types.js";
import { createUnitCoordinator, type UnitHooks } from "../unit-of-work.js";
import { createSqliteOperations } from "./operations.js";
import { claimFileOwnership, type FileOwnership, inUseError, OWNER_LEASE } from "./ownership.js";
import { assertKnownVersion, migrate, schemaVersion } from "./schema.js";
import { createListStatements, prepareStatements } from "./statements.js";
import { toWriteError, withWriteErrors } from "./write-errors.js";

export interface SqliteStoreOptions {
  /** The database file (created with its folder if missing). `":memory:"` for a private in-memory database. */
  path: string;
  /**
   * `normal` (default) survives a killed process, which is what crash safety here means; `full` also survives
   * power loss at the cost of an fsync per write.
   */
  synchronous?: "normal" | "full";
  /** Cap the database size in pages, for tests and quotas: a write past it fails with `storage_full`. */
  maxPageCount?: number;
}

const statementCounts = new WeakMap<SessionStore, () => number>();

/** Prepared statements the store holds now (fixed ones plus cached list queries). Internal: for tests. */
export function sqliteStatementCount(store: SessionStore): number {
  return statementCounts.get(store)?.() ?? 0;
}

function openDatabase(file: string, options: SqliteStoreOptions): Database.Database {
  if (file !== ":memory:") mkdirSync(dirname(file), { recursive: true });
  try {
    const db = new Database(file);
    db.pragma("journal_mode = WAL");
    db.pragma(`synchronous = ${options.synchronous === "full" ? "FULL" : "NORMAL"}`);
    db.pragma("busy_timeout = 5000");
    db.pragma("foreign_keys = OFF");
    return db;
  } catch (cause) {
    throw new SessionsError(
      "unavailable",
      `Cannot open SQLite store at ${file}: ${(cause as Error).message}`,
      { field: "path", cause },
    );
  }
}

/** Refuses before migrating when a live process already owns the file (its schema is not ours to change). */
function assertFileFree(db: Database.Database, file: string): void {
  const row = db
    .prepare("SELECT name, owner, acquired_at, expires_at, data FROM leases WHERE name = ?")
    .get(OWNER_LEASE) as
    | { name: string; owner: string; acquired_at: number; expires_at: number; data: string | null }
    | undefined;
  if (row === undefined) return;
  const holder: Lease = {
    name: row.name,
    owner: row.owner,
    acquiredAt: row.acquired_at,
    expiresAt: row.expires_at,
    ...(row.data === null ? {} : { data: JSON.parse(row.data) as Record<string, unknown> }),
  };
  if (!holderGone(holder, Date.now())) throw inUseError(file, holder);
}

/**
 * The default store: one SQLite file (WAL) holding entries, transcripts, runs, the outbox, routes, sub-agents
 * and leases, owned by one process at a time. Transactions are `BEGIN IMMEDIATE` … `COMMIT` around the awaited
 * work; while one is open, other calls on this store wait for it (when none is open they run at once).
 */
export function createSqliteStore(options: SqliteStoreOptions): SessionStore {
  if (typeof options?.path !== "string" || options.path.trim() === "") {
    throw new SessionsError("invalid_config", 'createSqliteStore: path must be a file path or ":memory:"', {
      field: "path",
    });
  }
  const file = options.path === ":memory:" ? ":memory:" : resolve(options.path);
  const db = openDatabase(file, options);
  let ownership: FileOwnership | undefined;
  let failure: SessionsError | undefined;
  let closed = false;

  const units = (() => {
    try {
      const version = schemaVersion(db);
      assertKnownVersion(version, file);
      if (file !== ":memory:" && version >= 2) assertFileFree(db, file);
      migrate(db, file);
      if (options.maxPageCount !== undefined)
        db.pragma(`max_page_count = ${Math.floor(options.maxPageCount)}`);
      const s = prepareStatements(db);
      const lists = createListStatements(db);
      const ops = createSqliteOperations(db, s, lists, (change) => coordinator.emit(change));
      const core = withWriteErrors(ops.core, STORE_WRITES, file);
      const leases = withWriteErrors(ops.leases, LEASE_WRITES, file);
      const hooks: UnitHooks = {
        begin() {
          try {
            s.begin.run();
          } catch (error) {
            throw toWriteError(error, file);
          }
        },
        commit() {
          if (!db.inTransaction) {
            throw new SessionsError(
              "unavailable",
              `SQLite rolled the transaction back after an error; nothing of it was written to ${file}`,
            );
          }
          try {
            s.commit.run();
          } catch (error) {
            throw toWriteError(error, file);
          }
        },
        rollback() {
          if (db.inTransaction) s.rollback.run();
        },
        savepoint: (depth) => db.exec(`SAVEPOINT unit_${depth}`),
        releaseSavepoint: (depth) => db.exec(`RELEASE unit_${depth}`),
        rollbackToSavepoint(depth) {
          if (db.inTransaction) db.exec(`ROLLBACK TO unit_${depth}; RELEASE unit_${depth}`);
        },
      };
      const coordinator = createUnitCoordinator(hooks, core);
      if (file !== ":memory:") {
        ownership = claimFileOwnership(file, leases, (beat) => {
          void (async () => {
            while (coordinator.blocked()) await coordinator.idle();
            if (!closed) beat();
          })();
        });
      }
      const statementCount = () => Object.keys(s).length + lists.size();
      return { coordinator, core, leases, statementCount };
    } catch (error) {
      db.close();
      throw error;
    }
  })();

  const check = () => {
    if (failure !== undefined) throw failure;
    const lost = ownership?.lost;
    if (lost !== undefined) throw lost;
  };
  const { coordinator } = units;

  const store: SessionStore = {
    kind: "sqlite",
    transcriptPath(sessionId) {
      return file === ":memory:" ? undefined : `${join(dirname(file), "transcripts", sessionId)}.jsonl`;
    },
    ...coordinator.guard(units.core, check),
    ...coordinator.guard(units.leases, check),
    async transaction(work) {
      check();
      return coordinator.transaction(work);
    },
    watch: (listener) => coordinator.watch(listener),
    async close() {
      while (coordinator.blocked()) await coordinator.idle();
      if (closed) return;
      closed = true;
      failure = new SessionsError("unavailable", "The SQLite store is closed");
      ownership?.release();
      db.close();
    },
  };
  statementCounts.set(store, units.statementCount);
  return store;
}
