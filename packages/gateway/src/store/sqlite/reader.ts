import Database from "better-sqlite3";
import type { LentMessages } from "../history.js";
import type { ListEntriesQuery, StoredEntry, StoredMessage } from "../types.js";
import { createSqliteOperations } from "./operations.js";
import { createListStatements, prepareStatements } from "./statements.js";
import { copyJson, copyMessages, type TranscriptTails } from "./transcript-tails.js";
import type { CommittedEntries } from "./writer-cache.js";

export interface Reader {
  /** The read operations, on committed state. */
  ops: Record<string, (...args: never[]) => unknown>;
  statementCount(): number;
  close(): void;
}

/**
 * The reads of a SQLite store outside its units of work: a second, read-only connection (WAL lets it read
 * committed state while the writer's transaction is open), and transcript and entry reads served from the
 * committed tails and entries kept in memory when they hold what is asked for.
 */
export function openReader(file: string, tails: TranscriptTails, entries: CommittedEntries): Reader {
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    db.pragma("busy_timeout = 5000");
    const s = prepareStatements(db);
    const lists = createListStatements(db);
    const ops = createSqliteOperations(db, s, lists, { emit: () => {} });
    /** Starts a session's committed tail if it has none yet. */
    const tailFor = (key: string): void => {
      if (!tails.has(key)) tails.fill(key, ops.tail(key, tails.perSession));
    };
    const readMessages = (key: string, options: { limit: number; beforeSeq?: number }): StoredMessage[] => {
      tailFor(key);
      return tails.read(key, options.limit, options.beforeSeq) ?? ops.core.readMessages(key, options);
    };
    const countMessages = (key: string): number => tails.count(key) ?? ops.core.countMessages(key);
    /** A committed record as kept (never to be changed); read if it was not (and kept while there is room). */
    const keptEntry = (key: string): StoredEntry | undefined => {
      const cached = entries.lend(key);
      if (cached !== undefined) return cached;
      const entry = ops.core.getEntry(key);
      if (entry !== undefined) entries.read(entry);
      return entry;
    };
    const getEntry = (key: string): StoredEntry | undefined => {
      const entry = keptEntry(key);
      return entry === undefined ? undefined : copyJson(entry);
    };
    // The keys come from the index alone; the records from the committed entries kept in memory, read only when
    // missing (a page of 100 cost four times as much as JSON text parsed again on every call).
    const keptEntries = (query: ListEntriesQuery): StoredEntry[] => {
      if (query.kinds?.length === 0 || query.agentIds?.length === 0) return [];
      const { stmt, params } = lists.entries(query, "key");
      const out: StoredEntry[] = [];
      for (const key of stmt.all(...params) as string[]) {
        const entry = keptEntry(key);
        if (entry !== undefined) out.push(entry);
      }
      return out;
    };
    const listEntries = (query: ListEntriesQuery): StoredEntry[] => keptEntries(query).map(copyJson);
    const keptMessages = (
      key: string,
      options: { limit: number; beforeSeq?: number },
    ): readonly StoredMessage[] | undefined => {
      tailFor(key);
      return tails.lend(key, options.limit, options.beforeSeq);
    };
    const lendMessages = (key: string, options: { limit: number; beforeSeq?: number }): LentMessages => {
      const lent = keptMessages(key, options) ?? ops.core.readMessages(key, options);
      return () => copyMessages(lent);
    };
    return {
      ops: {
        ...ops.core,
        ...ops.leases,
        readMessages,
        countMessages,
        getEntry,
        listEntries,
        lendMessages,
        keptMessages,
        keptEntries,
      } as Reader["ops"],
      statementCount: () => Object.keys(s).length + lists.size() + ops.searchStatements(),
      close: () => db.close(),
    };
  } catch (error) {
    db.close();
    throw error;
  }
}
