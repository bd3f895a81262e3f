import type { StoredMessage } from "../types.js";

/** A deep copy of a JSON value (what transcript messages are): much cheaper than parsing its text again. */
export function copyJson<T>(value: T): T {
  if (value === null || typeof value !== "object") return value;
  if (Array.isArray(value)) return value.map(copyJson) as T;
  // Spread first (fast for flat records), then copy the nested values, if any.
  const out = { ...value } as Record<string, unknown>;
  for (const key in out) {
    const nested = out[key];
    if (nested === null || typeof nested !== "object") continue;
    // An own "__proto__" key (JSON.parse makes one) must stay a plain property, not set the prototype.
    if (key === "__proto__") {
      Object.defineProperty(out, key, {
        value: copyJson(nested),
        enumerable: true,
        writable: true,
        configurable: true,
      });
    } else out[key] = copyJson(nested);
  }
  return out as T;
}

export interface TranscriptTailOptions {
  /** Newest messages kept per session (a run's history window is 50 by default). */
  perSession: number;
  /** Total size of the kept messages (their JSON length), over every session. */
  maxBytes: number;
  /** Sessions kept at most. */
  maxSessions: number;
}

export const DEFAULT_TAIL_OPTIONS: TranscriptTailOptions = {
  perSession: 64,
  maxBytes: 16 * 1024 * 1024,
  maxSessions: 4096,
};

interface Tail {
  /** The newest messages, oldest first, with contiguous sequence numbers ending at `last`. */
  messages: StoredMessage[];
  /** Per message: no nested objects, so a spread copies it. */
  flat: boolean[];
  sizes: number[];
  bytes: number;
  /** The session's last sequence number (its message count); 0 for an empty transcript. */
  last: number;
}

/**
 * The committed tail of recently used transcripts, parsed, so a run's history window and `chat.history` do not
 * read and parse the same rows again. It holds committed state only: the store feeds it appends and deletions
 * after their transaction commits, and it drops a session whose tail it cannot follow. Least recently used
 * sessions go first when it is over its bounds. Reads get copies.
 */
export class TranscriptTails {
  private readonly tails = new Map<string, Tail>();
  private bytes = 0;

  constructor(private readonly options: TranscriptTailOptions = DEFAULT_TAIL_OPTIONS) {}

  get perSession(): number {
    return this.options.perSession;
  }

  has(key: string): boolean {
    return this.tails.has(key);
  }

  /** The message count of a cached session. */
  count(key: string): number | undefined {
    return this.tails.get(key)?.last;
  }

  /** The newest `limit` messages before `beforeSeq`, oldest first, when the cached tail holds all of them. */
  read(key: string, limit: number, beforeSeq?: number): StoredMessage[] | undefined {
    const tail = this.tails.get(key);
    if (tail === undefined) return undefined;
    this.tails.delete(key);
    this.tails.set(key, tail);
    const end = Math.min(beforeSeq === undefined ? tail.last : beforeSeq - 1, tail.last);
    if (limit <= 0 || end < 1) return [];
    const start = Math.max(1, end - limit + 1);
    const first = tail.last - tail.messages.length + 1;
    if (start < first) return undefined;
    const out: StoredMessage[] = [];
    for (let i = start - first; i <= end - first; i++) {
      const message = tail.messages[i] as StoredMessage;
      out.push(tail.flat[i] ? { ...message } : copyJson(message));
    }
    return out;
  }

  /**
   * Like `read`, but lends the cached messages themselves (they are never changed): `copyMessages` makes the
   * copies a reader may keep.
   */
  lend(key: string, limit: number, beforeSeq?: number): StoredMessage[] | undefined {
    const tail = this.tails.get(key);
    if (tail === undefined) return undefined;
    this.tails.delete(key);
    this.tails.set(key, tail);
    const end = Math.min(beforeSeq === undefined ? tail.last : beforeSeq - 1, tail.last);
    if (limit <= 0 || end < 1) return [];
    const start = Math.max(1, end - limit + 1);
    const first = tail.last - tail.messages.length + 1;
    if (start < first) return undefined;
    return tail.messages.slice(start - first, end - first + 1);
  }

  /** Caches a session's newest messages as just read from committed state (`last` 0: an empty transcript). */
  fill(key: string, messages: { message: StoredMessage; size: number }[]): void {
    this.forget(key);
    const tail: Tail = {
      messages: [],
      flat: [],
      sizes: [],
      bytes: 0,
      last: messages.at(-1)?.message.seq ?? 0,
    };
    for (const { message, size } of messages) this.push(tail, message, size);
    this.tails.set(key, tail);
    this.bytes += tail.bytes;
    this.trim(tail);
    this.evict();
  }

  /** A committed append: extends a cached tail, or starts one for a new transcript. */
  append(key: string, message: StoredMessage, size: number): void {
    const tail = this.tails.get(key);
    if (tail === undefined) {
      if (message.seq === 1) this.fill(key, [{ message, size }]);
      return;
    }
    if (message.seq !== tail.last + 1) {
      this.forget(key);
      return;
    }
    tail.last = message.seq;
    this.push(tail, message, size);
    this.bytes += size;
    this.trim(tail);
    this.evict();
  }

  forget(key: string): void {
    const tail = this.tails.get(key);
    if (tail === undefined) return;
    this.bytes -= tail.bytes;
    this.tails.delete(key);
  }

  clear(): void {
    this.tails.clear();
    this.bytes = 0;
  }

  private push(tail: Tail, message: StoredMessage, size: number): void {
    tail.messages.push(message);
    tail.flat.push(Object.values(message).every((v) => v === null || typeof v !== "object"));
    tail.sizes.push(size);
    tail.bytes += size;
  }

  private trim(tail: Tail): void {
    while (tail.messages.length > this.options.perSession) {
      tail.messages.shift();
      tail.flat.shift();
      const size = tail.sizes.shift() ?? 0;
      tail.bytes -= size;
      this.bytes -= size;
    }
  }

  private evict(): void {
    while (this.bytes > this.options.maxBytes || this.tails.size > this.options.maxSessions) {
      const oldest = this.tails.keys().next();
      if (oldest.done) return;
      this.forget(oldest.value);
    }
  }
}

/** Copies of lent messages (see `TranscriptTails.lend`). */
export function copyMessages(messages: readonly StoredMessage[]): StoredMessage[] {
  const out: StoredMessage[] = new Array(messages.length);
  for (let i = 0; i < messages.length; i++) out[i] = copyJson(messages[i] as StoredMessage);
  return out;
}
