import type { ListEntriesQuery, SessionStore, StoredEntry, StoredMessage } from "./types.js";

/*
 * Internal to the gateway, not part of the `SessionStore` contract: a SQLite file store keeps committed records in
 * memory (transcript tails, session entries) and lends them, for answers that are only sent. Kept records never
 * change, so what is derived from one (its wire text) can be kept with it and reused.
 */

export const KEPT_MESSAGES: unique symbol = Symbol.for("@sessions/gateway.keptMessages");

export interface KeepsMessages {
  /** What `readMessages` reads, as the messages kept themselves (never to be changed), if it keeps them all. */
  [KEPT_MESSAGES](
    sessionKey: string,
    options: { limit: number; beforeSeq?: number | undefined },
  ): Promise<readonly StoredMessage[] | undefined>;
}

/** The committed messages `readMessages` would read, as kept by a store that keeps them; undefined otherwise. */
export function keptMessages(
  store: SessionStore,
  sessionKey: string,
  options: { limit: number; beforeSeq?: number | undefined },
): Promise<readonly StoredMessage[] | undefined> {
  const read = (store as Partial<KeepsMessages>)[KEPT_MESSAGES];
  return typeof read === "function" ? read.call(store, sessionKey, options) : Promise.resolve(undefined);
}

export const KEPT_ENTRIES: unique symbol = Symbol.for("@sessions/gateway.keptEntries");

export interface KeepsEntries {
  /** What `listEntries` lists, as the entries kept themselves (never to be changed), if it keeps them all. */
  [KEPT_ENTRIES](query: ListEntriesQuery): Promise<readonly StoredEntry[] | undefined>;
}

/** The committed entries `listEntries` would list, as kept by a store that keeps them; undefined otherwise. */
export function keptEntries(
  store: SessionStore,
  query: ListEntriesQuery,
): Promise<readonly StoredEntry[] | undefined> {
  const list = (store as Partial<KeepsEntries>)[KEPT_ENTRIES];
  return typeof list === "function" ? list.call(store, query) : Promise.resolve(undefined);
}
