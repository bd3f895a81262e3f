import { SessionsError, searchableText } from "@sessions/core";
import type Database from "better-sqlite3";
import type { StoredMessage } from "../types.js";
import { createSqliteSearch, type SqliteSearch } from "./search.js";
import { memorySearchIndex, openSearchReader, type SearchIndex, startSearchIndex } from "./search-index.js";

/** A SQLite store's search, wired into its writes: what its operations call, what searches read, its index. */
export interface StoreSearch {
  searcher: SqliteSearch;
  index: SearchIndex;
  /** A message was appended (in the open transaction): once committed, the index takes its text. */
  appended(sessionKey: string, message: StoredMessage): void;
  /** A session's messages were deleted (in the open transaction): once committed, the index drops them. */
  deleted(sessionKey: string): void;
  close(): Promise<void>;
}

/**
 * The search of the store at `file` (its writer `db`): a file's index has an indexer thread and a connection of its
 * own to search on; an in-memory store's is in its own connection. `afterCommit` runs work once the open
 * transaction committed (never for one rolled back).
 */
export function openStoreSearch(
  file: string,
  db: Database.Database,
  afterCommit: (work: () => void) => void,
  warn: (message: string, error: string) => void,
): StoreSearch {
  const reader = file === ":memory:" ? undefined : openSearchReader(file);
  const index = reader === undefined ? memorySearchIndex(db) : startSearchIndex(file, reader, warn);
  // A session's number in search_keys (made with its first message, if its entry did not; never changed). Known
  // numbers are kept once committed: a number made in a transaction that rolls back may go to another session.
  const ids = new Map<string, number>();
  const idOf = db.prepare(
    "INSERT INTO search_keys (key) VALUES (?) ON CONFLICT (key) DO UPDATE SET key = excluded.key RETURNING id",
  );
  return {
    searcher: createSqliteSearch(reader ?? db),
    index,
    appended(key, message) {
      let id = ids.get(key);
      if (id === undefined) {
        const made = (idOf.get(key) as { id: number }).id;
        afterCommit(() => ids.set(key, made));
        id = made;
      }
      const session = id;
      const { seq } = message;
      const text = searchableText(message) ?? "";
      afterCommit(() => index.appended(session, seq, text));
    },
    deleted() {
      afterCommit(() => index.deleted());
    },
    async close() {
      await index.close();
      reader?.close();
    },
  };
}

/** The searches of a store opened with `search: false`: refused, saying why. */
export function searchOff(file: string): Pick<SqliteSearch, "searchSessions" | "size"> {
  return {
    size: () => 0,
    searchSessions() {
      throw new SessionsError(
        "unavailable",
        `search is off for the SQLite store at ${file} (createSqliteStore({ search: false }))`,
        { field: "search" },
      );
    },
  };
}
