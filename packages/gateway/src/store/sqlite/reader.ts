import Database from "better-sqlite3";
import type { StoredMessage } from "../types.js";
import { createSqliteOperations } from "./operations.js";
import { createListStatements, prepareStatements } from "./statements.js";
import type { TranscriptTails } from "./transcript-tails.js";

export interface Reader {
  /** The read operations, on committed state. */
  ops: Record<string, (...args: never[]) => unknown>;
  statementCount(): number;
  close(): void;
}

/**
 * The reads of a SQLite store outside its units of work: a second, read-only connection (WAL lets it read
 * committed state while the writer's transaction is open), and transcript reads served from the committed
 * tails kept in memory when they hold the asked-for messages.
 */
export function openReader(file: string, tails: TranscriptTails): Reader {
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    db.pragma("busy_timeout = 5000");
    const s = prepareStatements(db);
    const lists = createListStatements(db);
    const ops = createSqliteOperations(db, s, lists, { emit: () => {} });
    const readMessages = (key: string, options: { limit: number; beforeSeq?: number }): StoredMessage[] => {
      if (!tails.has(key)) tails.fill(key, ops.tail(key, tails.perSession));
      return tails.read(key, options.limit, options.beforeSeq) ?? ops.core.readMessages(key, options);
    };
    const countMessages = (key: string): number => tails.count(key) ?? ops.core.countMessages(key);
    return {
      ops: { ...ops.core, ...ops.leases, readMessages, countMessages } as Reader["ops"],
      statementCount: () => Object.keys(s).length + lists.size(),
      close: () => db.close(),
    };
  } catch (error) {
    db.close();
    throw error;
  }
}
