import type { StoredEntry } from "@sessions/gateway";
import type { Db } from "./units.js";

/**
 * Reads of session entries made outside a unit (what `chat.send` and `agent` read before they start a run), as one
 * statement for one key or for many: `createPostgresStore` batches those asked for while its read connections are
 * busy, so a busy gateway reads a batch of entries in one round trip instead of one each. A read in a batch is
 * sent after it was asked for, so it sees every write committed before it was: as fresh as a read of its own.
 */
export function createEntryReads(s: string) {
  const single = `SELECT data FROM ${s}.entries WHERE key = $1`;
  const batch = `SELECT key, data FROM ${s}.entries WHERE key = ANY($1::text[])`;
  return {
    async one(db: Db, key: string): Promise<StoredEntry | undefined> {
      const { rows } = await db.query<{ data: string }>(single, [key]);
      const row = rows[0];
      return row === undefined ? undefined : (JSON.parse(row.data) as StoredEntry);
    },
    /** Each key's entry, in the order of `keys` (a key asked twice gets two copies: callers may change theirs). */
    async many(db: Db, keys: readonly string[]): Promise<(StoredEntry | undefined)[]> {
      const { rows } = await db.query<{ key: string; data: string }>(batch, [[...new Set(keys)]]);
      const found = new Map(rows.map((row) => [row.key, row.data]));
      return keys.map((key) => {
        const data = found.get(key);
        return data === undefined ? undefined : (JSON.parse(data) as StoredEntry);
      });
    },
  };
}
