import type { StoredEntry } from "../types.js";
import { copyJson } from "./transcript-tails.js";

/**
 * A deep copy of `value` as a JSON round trip would give it (`JSON.parse(JSON.stringify(value))`): undefined,
 * function and symbol properties left out, non-finite numbers as null, `toJSON` honoured — without the text.
 */
export function jsonCopy<T>(value: T): T {
  return copyValue(value) as T;
}

function copyValue(value: unknown): unknown {
  switch (typeof value) {
    case "string":
    case "boolean":
      return value;
    case "number":
      return Number.isFinite(value) ? value : null;
    case "object": {
      if (value === null) return null;
      if (Array.isArray(value)) {
        return value.map((item) => {
          const copy = copyValue(item);
          return copy === undefined ? null : copy;
        });
      }
      const proto = Object.getPrototypeOf(value);
      if (
        (proto !== Object.prototype && proto !== null) ||
        typeof (value as { toJSON?: unknown }).toJSON === "function"
      )
        return JSON.parse(JSON.stringify(value));
      const out: Record<string, unknown> = {};
      for (const key of Object.keys(value)) {
        const copy = copyValue((value as Record<string, unknown>)[key]);
        if (copy === undefined) continue;
        // An own "__proto__" key must stay a plain property, as JSON.parse makes it.
        if (key === "__proto__")
          Object.defineProperty(out, key, {
            value: copy,
            enumerable: true,
            writable: true,
            configurable: true,
          });
        else out[key] = copy;
      }
      return out;
    }
    default:
      // undefined, functions and symbols: JSON leaves them out (bigint never gets here: the write threw).
      return undefined;
  }
}

/** Entries and sessions' last sequence numbers kept at most (the least recently written go first). */
const MAX_ENTRIES = 10_000;
const MAX_SEQS = 10_000;

/**
 * Sets `key` as the most recently written; past `max`, drops the least recently written tenth in one pass (a
 * Map's iterator skips the holes deletions leave at its front, so evicting one at a time would cost O(n) each).
 */
function remember<V>(map: Map<string, V>, key: string, value: V, max = MAX_ENTRIES): void {
  map.delete(key);
  map.set(key, value);
  if (map.size <= max) return;
  let drop = map.size - Math.floor(max * 0.9);
  for (const oldest of map.keys()) {
    if (drop-- <= 0) break;
    map.delete(oldest);
  }
}

/**
 * What the writing connection holds now (its open transaction included) for the records every run reads: the
 * session entries and each transcript's last sequence number. Only this process writes the file, so the cache
 * stays exact as long as entries and messages are written only by `putEntry`, `deleteEntry` and `appendMessage`
 * (a new statement that writes them must keep it in step); it is dropped whenever the connection's state moves
 * back (a rollback, or a unit undone). Reads get copies.
 */
export class WriterCache {
  private readonly entries = new Map<string, StoredEntry>();
  private readonly seqs = new Map<string, number>();

  /** A copy of the cached entry, if cached. */
  entry(key: string): StoredEntry | undefined {
    const entry = this.entries.get(key);
    return entry === undefined ? undefined : copyJson(entry);
  }

  /** Whether the cached entry of `entry.key` has the same indexed columns as `entry` (only the rest changes). */
  sameColumns(entry: StoredEntry): boolean {
    const cached = this.entries.get(entry.key);
    return (
      cached !== undefined &&
      cached.sessionId === entry.sessionId &&
      cached.agentId === entry.agentId &&
      cached.kind === entry.kind &&
      (cached.spawnedBy ?? null) === (entry.spawnedBy ?? null) &&
      (cached.label ?? null) === (entry.label ?? null) &&
      (cached.displayName ?? null) === (entry.displayName ?? null) &&
      (cached.archivedAt === undefined) === (entry.archivedAt === undefined)
    );
  }

  /**
   * Caches `entry` as written or read (copied as JSON would store it, unless `copied`); returns the cached
   * record, which nobody may change (it can be shared with `CommittedEntries`).
   */
  putEntry(entry: StoredEntry, copied = false): StoredEntry {
    const record = copied ? entry : jsonCopy(entry);
    remember(this.entries, entry.key, record);
    return record;
  }

  /** Caches an entry just read, unless the cache is full (a scan over many entries must not churn it). */
  readEntry(entry: StoredEntry): void {
    if (this.entries.size < MAX_ENTRIES) this.entries.set(entry.key, entry);
  }

  /** The transcript's last sequence number, if cached (0: known empty). */
  lastSeq(key: string): number | undefined {
    return this.seqs.get(key);
  }

  appended(key: string, seq: number): void {
    remember(this.seqs, key, seq, MAX_SEQS);
  }

  forget(key: string, transcript: boolean): void {
    this.entries.delete(key);
    if (transcript) this.seqs.delete(key);
  }

  clear(): void {
    this.entries.clear();
    this.seqs.clear();
  }
}

/**
 * The committed session entries recently written or read, for reads outside units of work (`getEntry` is on
 * every request's path): kept in step after each commit, like the transcript tails. Reads get copies, or lend them
 * read-only for answers that are only sent.
 */
export class CommittedEntries {
  private readonly entries = new Map<string, StoredEntry>();

  /** The kept record itself: copied before it leaves the store, or lent read-only (see `keptEntries`). */
  lend(key: string): StoredEntry | undefined {
    return this.entries.get(key);
  }

  /** A committed record (never changed afterwards). */
  set(entry: StoredEntry): void {
    remember(this.entries, entry.key, entry);
  }

  /** A committed record just read, kept unless the cache is full (a scan must not churn it). */
  read(entry: StoredEntry): void {
    if (this.entries.size < MAX_ENTRIES) this.entries.set(entry.key, entry);
  }

  forget(key: string): void {
    this.entries.delete(key);
  }
}
