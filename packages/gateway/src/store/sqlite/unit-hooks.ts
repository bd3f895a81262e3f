import { SessionsError } from "@sessions/core";
import type Database from "better-sqlite3";
import type { UnitHooks } from "../unit-of-work.js";
import type { Statements } from "./statements.js";
import { toWriteError } from "./write-errors.js";

/** How a write statement was called (`get`/`all` for statements with RETURNING). */
export type WriteMethod = "run" | "get" | "all";

/**
 * The writes of the open transaction, in order, as the statements and parameters that made them: enough to make
 * them again on the same starting state, which gives the same result (SQLite is deterministic, and every write of
 * the store goes through these statements with its values bound).
 */
export interface WriteLog {
  record(stmt: Database.Statement, method: WriteMethod, args: unknown[]): void;
  mark(): number;
  /** Forgets the writes after `mark` (SQLite undid them: a savepoint of better-sqlite3 rolled back). */
  truncate(mark: number): void;
}

interface Logged {
  stmt: Database.Statement;
  method: WriteMethod;
  args: unknown[];
}

export interface SqliteUnitHooks extends UnitHooks {
  readonly log: WriteLog;
}

/**
 * BEGIN IMMEDIATE … COMMIT around a group of units. A unit needs no savepoint: its writes are logged, and when
 * one throws, the transaction is rolled back and the writes of the units before it are made again (`redo`), so
 * the common case pays for no statement journal. Nested units are savepoints (statements prepared once per depth).
 * `reset` runs whenever the connection's state moved back (the store's caches of it must forget).
 */
export function sqliteUnitHooks(
  db: Database.Database,
  s: Statements,
  file: string,
  committed: (units: number) => void = () => {},
  reset: () => void = () => {},
): SqliteUnitHooks {
  const savepoints: { open: Database.Statement; release: Database.Statement; undo: Database.Statement }[] =
    [];
  const at = (depth: number) => {
    let sp = savepoints[depth];
    if (sp === undefined) {
      sp = {
        open: db.prepare(`SAVEPOINT unit_${depth}`),
        release: db.prepare(`RELEASE unit_${depth}`),
        undo: db.prepare(`ROLLBACK TO unit_${depth}`),
      };
      savepoints[depth] = sp;
    }
    return sp;
  };
  let logging = false;
  const logged: Logged[] = [];
  /** Where each open savepoint started in the log. */
  const marks: number[] = [];
  const log: WriteLog = {
    record(stmt, method, args) {
      if (logging) logged.push({ stmt, method, args });
    },
    mark: () => logged.length,
    truncate(mark) {
      if (logged.length > mark) logged.length = mark;
    },
  };
  const begin = () => {
    try {
      s.begin.run();
    } catch (error) {
      throw toWriteError(error, file);
    }
    logging = true;
    logged.length = 0;
  };
  const ended = () => {
    logging = false;
    logged.length = 0;
    marks.length = 0;
  };
  return {
    log,
    begin,
    commit(units) {
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
      ended();
      try {
        committed(units);
      } catch {
        // Committed is committed: what follows a commit must never turn it into a reported failure.
      }
    },
    rollback() {
      ended();
      reset();
      if (db.inTransaction) s.rollback.run();
    },
    savepoint(depth) {
      at(depth).open.run();
      marks[depth] = logged.length;
    },
    releaseSavepoint: (depth) => at(depth).release.run(),
    rollbackToSavepoint(depth) {
      if (!db.inTransaction) return;
      const sp = at(depth);
      sp.undo.run();
      sp.release.run();
      log.truncate(marks[depth] ?? logged.length);
      reset();
    },
    intact: () => db.inTransaction,
    redo: {
      mark: () => logged.length,
      undo(mark) {
        const again = logged.slice(0, mark);
        ended();
        reset();
        if (db.inTransaction) s.rollback.run();
        begin();
        try {
          for (const write of again) {
            const stmt = write.stmt as unknown as Record<WriteMethod, (...args: unknown[]) => unknown>;
            stmt[write.method](...write.args);
            logged.push(write);
          }
        } catch (error) {
          // The earlier units cannot be had again: the whole transaction is lost (the caller rolls it back).
          reset();
          throw toWriteError(error, file);
        }
      },
    },
  };
}
