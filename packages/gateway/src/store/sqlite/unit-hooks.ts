import { SessionsError } from "@sessions/core";
import type Database from "better-sqlite3";
import type { UnitHooks } from "../unit-of-work.js";
import type { Statements } from "./statements.js";
import { toWriteError } from "./write-errors.js";

/** BEGIN IMMEDIATE … COMMIT around a group of units, a savepoint per unit (statements prepared once per depth). */
export function sqliteUnitHooks(
  db: Database.Database,
  s: Statements,
  file: string,
  committed: (units: number) => void = () => {},
): UnitHooks {
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
  return {
    begin() {
      try {
        s.begin.run();
      } catch (error) {
        throw toWriteError(error, file);
      }
    },
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
      try {
        committed(units);
      } catch {
        // Committed is committed: what follows a commit must never turn it into a reported failure.
      }
    },
    rollback() {
      if (db.inTransaction) s.rollback.run();
    },
    savepoint: (depth) => at(depth).open.run(),
    releaseSavepoint: (depth) => at(depth).release.run(),
    rollbackToSavepoint(depth) {
      if (!db.inTransaction) return;
      const sp = at(depth);
      sp.undo.run();
      sp.release.run();
    },
    intact: () => db.inTransaction,
  };
}
