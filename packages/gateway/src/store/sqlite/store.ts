import { mkdirSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { SessionsError } from "@sessions/core";
import Database from "better-sqlite3";
import { LEND_MESSAGES, type LendsMessages, type LentMessages } from "../history.js";
import { KEPT_ENTRIES, KEPT_MESSAGES, type KeepsEntries, type KeepsMessages } from "../kept-records.js";
import { holderGone } from "../lease-liveness.js";
import {
  LEASE_WRITES,
  type Lease,
  type SessionStore,
  STORE_WRITES,
  type StoredEntry,
  type StoredMessage,
} from "../types.js";
import { createUnitCoordinator } from "../unit-of-work.js";
import { type Checkpointer, startCheckpointer } from "./checkpointer.js";
import { createSqliteOperations, type OperationEvents } from "./operations.js";
import { claimFileOwnership, type FileOwnership, inUseError, OWNER_LEASE } from "./ownership.js";
import { openReader, type Reader } from "./reader.js";
import { assertKnownVersion, migrate, schemaVersion } from "./schema.js";
import { createListStatements, prepareStatements } from "./statements.js";
import { openStoreSearch, type StoreSearch, searchOff } from "./store-search.js";
import { copyJson, copyMessages, TranscriptTails } from "./transcript-tails.js";
import { sqliteUnitHooks } from "./unit-hooks.js";
import { withWriteErrors } from "./write-errors.js";
import { CommittedEntries } from "./writer-cache.js";

/** Options of `createSqliteStore`. */
export interface SqliteStoreOptions {
  /**
   * The database file (created with its folder if missing). `":memory:"` for a private in-memory database. The
   * transcripts' search index is kept beside it, in `<path>-search`: derived data, rebuilt from the transcripts when
   * it is missing (a backup needs only the database file).
   */
  path: string;
  /**
   * `normal` (default) survives a killed process, which is what crash safety here means; `full` also survives
   * power loss at the cost of an fsync per write.
   */
  synchronous?: "normal" | "full" | undefined;
  /** Cap the database size in pages, for tests and quotas: a write past it fails with `storage_full`. */
  maxPageCount?: number | undefined;
  /**
   * `false`: no search index (nothing indexed, no index file, no indexer thread); `searchSessions` is refused with
   * `unavailable`. Default: on.
   */
  search?: boolean | undefined;
}

/**
 * A store that has committed this many units of work checkpoints its WAL on a worker thread from then on (short
 * lived stores, as in tests, never start one).
 */
const BACKGROUND_CHECKPOINTS_AFTER = 1_000;
/**
 * The writer still checkpoints on its own once the WAL has this many pages: by then the worker has copied nearly
 * all of them, and a checkpoint that completes lets the next write start the WAL afresh, which keeps it — and
 * every page lookup in it — small under constant load.
 */
const BACKSTOP_CHECKPOINT_PAGES = 4_096;

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
    // Nested units are savepoints: keep their undo pages (the statement journal) in memory, not in a temporary file.
    db.pragma("temp_store = MEMORY");
    // Keep the WAL file from staying at its largest size after a burst (it is reset once checkpointed).
    db.pragma(`journal_size_limit = ${64 * 1024 * 1024}`);
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
 * and leases, owned by one process at a time. Units of work run one at a time on the writing connection inside
 * `BEGIN IMMEDIATE` … `COMMIT`; units that queue up meanwhile share that transaction (group commit; one that
 * throws is undone by redoing the others' logged writes), and each caller hears back only after the COMMIT. Reads
 * outside a unit while a transaction is open use a second, read-only connection that sees committed state, so
 * they never wait for it.
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

  let reader: Reader | undefined;
  let checkpointer: Checkpointer | undefined;
  let searching: StoreSearch | undefined;
  let committedUnits = 0;

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
      // Committed transcript tails and entries for the reader, kept in step after each commit (appends extend
      // the tails, writes replace entries, deletions drop them). An in-memory database has no reader, so no
      // committed caches either.
      const tails = file === ":memory:" ? undefined : new TranscriptTails();
      const entries = file === ":memory:" ? undefined : new CommittedEntries();
      const hooks = sqliteUnitHooks(
        db,
        s,
        file,
        (units) => {
          const before = committedUnits;
          committedUnits += units;
          checkpointer?.kick();
          const due = before < BACKGROUND_CHECKPOINTS_AFTER && committedUnits >= BACKGROUND_CHECKPOINTS_AFTER;
          if (due && file !== ":memory:" && !closed) {
            checkpointer = startCheckpointer(file, options.synchronous === "full" ? "FULL" : "NORMAL");
            // The writer still checkpoints on its own should the WAL outgrow this (the worker stalled or failed).
            if (checkpointer !== undefined) db.pragma(`wal_autocheckpoint = ${BACKSTOP_CHECKPOINT_PAGES}`);
          }
        },
        () => ops.reset(),
      );
      const events: OperationEvents = { emit: (change) => coordinator.emit(change) };
      // The transcripts' index is written by an indexer of its own (a thread, writing a file of its own) from what
      // was committed: a run's transaction writes nothing of it. An in-memory store indexes before each search.
      const search =
        options.search === false
          ? undefined
          : openStoreSearch(
              file,
              db,
              (work) => coordinator.afterCommit(work),
              (message, error) =>
                process.emitWarning(`${message}: ${error}`, { code: "SESSIONS_SEARCH_INDEX" }),
            );
      searching = search;
      if (search !== undefined) {
        events.searchAppended = search.appended;
        events.searchDeleted = search.deleted;
      }
      if (tails !== undefined && entries !== undefined) {
        events.appended = (key, message, size) => {
          const copy = copyJson(message);
          coordinator.afterCommit(() => tails.append(key, copy, size));
        };
        events.transcriptDeleted = (key) => coordinator.afterCommit(() => tails.forget(key));
        events.entryPut = (entry) => coordinator.afterCommit(() => entries.set(entry));
        events.entryDeleted = (key) => coordinator.afterCommit(() => entries.forget(key));
      }
      const ops = createSqliteOperations(db, s, lists, events, {
        log: hooks.log,
        search:
          search === undefined
            ? { searcher: searchOff(file), before: () => {} }
            : { searcher: search.searcher, before: () => search.index.catchUpHere() },
      });
      const core = withWriteErrors(ops.core, STORE_WRITES, file);
      const leases = withWriteErrors(ops.leases, LEASE_WRITES, file);
      // Reads outside a unit while a transaction is open use a second, read-only connection: it sees committed
      // state only, so they never wait for the open transaction (an in-memory database has no second connection:
      // reads wait instead). Transcript reads and entry lists go to it always: it serves them from the tails and
      // the committed entries in memory. Single entry reads go to it only while a transaction is open (its
      // committed entries, else its SQL); with none open, the writer's cache and warm pages serve them.
      if (tails !== undefined && entries !== undefined) reader = openReader(file, tails, entries);
      const coordinator = createUnitCoordinator(hooks, core, {
        groupCommit: true,
        ...(reader === undefined
          ? {}
          : {
              reader: reader.ops,
              readerAlways: [
                "readMessages",
                "countMessages",
                "lendMessages",
                "keptMessages",
                "keptEntries",
                "listEntries",
              ],
            }),
      });
      if (file !== ":memory:") {
        ownership = claimFileOwnership(file, leases, (beat) => {
          void coordinator
            .write(() => {
              if (!closed) beat();
            })
            .catch(() => undefined);
        });
      }
      const statementCount = () =>
        Object.keys(s).length + lists.size() + ops.searchStatements() + (reader?.statementCount() ?? 0);
      const lending = {
        lendMessages(key: string, options: { limit: number; beforeSeq?: number | undefined }): LentMessages {
          const read = core.readMessages(key, options);
          return () => copyMessages(read);
        },
        // Without a reader (an in-memory database) nothing is kept: `readMessages` and `listEntries` are the reads.
        keptMessages: (_key: string, _options: unknown): readonly StoredMessage[] | undefined => undefined,
        keptEntries: (_query: unknown): readonly StoredEntry[] | undefined => undefined,
      };
      return { coordinator, core, leases, lending, statementCount };
    } catch (error) {
      reader?.close();
      void searching?.close();
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
  const lending = coordinator.guard(units.lending, [], check);

  const store: SessionStore & LendsMessages & KeepsMessages & KeepsEntries = {
    kind: "sqlite",
    transcriptPath(sessionId) {
      return file === ":memory:" ? undefined : `${join(dirname(file), "transcripts", sessionId)}.jsonl`;
    },
    // An in-memory store's search indexes what changed first: a write. A file's reads the index's own connection.
    ...coordinator.guard(
      units.core,
      file === ":memory:" ? [...STORE_WRITES, "searchSessions"] : STORE_WRITES,
      check,
    ),
    ...(file === ":memory:"
      ? {}
      : {
          // It sees every message committed before it: the indexer catches up with them first.
          async searchSessions(query) {
            check();
            await searching?.index.caughtUp();
            check();
            return units.core.searchSessions(query);
          },
        }),
    ...coordinator.guard(units.leases, LEASE_WRITES, check),
    [LEND_MESSAGES]: lending.lendMessages,
    [KEPT_MESSAGES]: lending.keptMessages,
    [KEPT_ENTRIES]: lending.keptEntries,
    transaction(work) {
      try {
        check();
      } catch (error) {
        return Promise.reject(error);
      }
      return coordinator.transaction(work);
    },
    watch: (listener) => coordinator.watch(listener),
    async close() {
      await coordinator.drain();
      if (closed) return;
      closed = true;
      failure = new SessionsError("unavailable", "The SQLite store is closed");
      await checkpointer?.stop();
      await searching?.close();
      ownership?.release();
      reader?.close();
      db.close();
    },
  };
  statementCounts.set(store, units.statementCount);
  return store;
}
