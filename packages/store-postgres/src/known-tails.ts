import type { TranscriptMessage } from "@sessions/core";
import type { StoredMessage } from "@sessions/gateway";

/** Sessions whose newest messages are kept, at most (least recently used go first). */
const MAX_SESSIONS = 4096;
/**
 * Newest messages kept per session: a run's history window (50 by default) ends at its input, and the inputs of
 * the runs queued behind it come after that (each is appended as its run is accepted), so a session with a backlog
 * needs its window plus the backlog: 50 behind up to 110 queued runs.
 */
const PER_SESSION = 160;
/** Characters of JSON text kept over every session (about 32 MB); least recently used sessions go first. */
const MAX_CHARS = 16 * 1024 * 1024;
/** The newest messages this process knows of a session: contiguous sequence numbers ending at `last`. */
interface Tail {
  /**
   * The JSON text of each message as stored (without its seq), oldest first: parsed again on each read, since
   * callers may change what they get.
   */
  texts: string[];
  /** The characters in `texts` and `ahead` (counted against MAX_CHARS). */
  chars: number;
  last: number;
  /**
   * Messages known past a gap (`last + 1` not known yet), by seq: group commit lets this gateway hear of its own
   * appends out of order (batches on different connections), so a later seq may come before an earlier one.
   */
  ahead?: Map<number, string> | undefined;
}

/**
 * What this gateway wrote (or read) of each transcript lately, so that a run's history window — the messages up to
 * its input — comes from memory instead of a round trip. Other gateways append to the same transcripts, so nothing
 * here is taken to be the newest: a window is served only when every sequence number it spans is known, and
 * sequence numbers are contiguous per session, so a message another gateway appended in between shows as a gap
 * (then the store reads it; this gateway's own appends, heard out of order under group commit, fill their gaps).
 * Messages never change once written; a transcript deleted starts again at 1, which a known tail notices (an append
 * at or before its end with another text starts it over) and which the change feed reports
 * (`forget`). Fed only with committed state. What that leaves: between another gateway deleting a transcript and
 * this one hearing of it (the notification's latency, milliseconds), a window of the old messages may still be served
 * here unless this gateway appended to the new transcript meanwhile (a run always has: its input).
 */
export class KnownTails {
  private readonly tails = new Map<string, Tail>();
  /** The characters kept over every tail. */
  private chars = 0;
  private readonly maxChars: number;

  constructor(options: { maxChars?: number } = {}) {
    this.maxChars = options.maxChars ?? MAX_CHARS;
  }

  /**
   * A message committed at `seq` (its JSON text): extends the known tail; one past a gap waits (up to a tail's
   * length) for the gap to be filled by this gateway's own appends, heard out of order; one at or before the tail's
   * end with another text means the transcript started over, and so does the tail.
   */
  add(key: string, seq: number, text: string): void {
    const tail = this.touch(key);
    if (tail !== undefined && seq === tail.last + 1) {
      tail.texts.push(text);
      tail.last = seq;
      this.grow(tail, text.length);
      this.drain(tail);
      this.trim(key);
      return;
    }
    if (tail !== undefined && seq <= tail.last && this.textAt(tail, seq) === text) return;
    if (tail !== undefined && seq > tail.last + 1 && (tail.ahead?.size ?? 0) < PER_SESSION) {
      tail.ahead ??= new Map();
      const before = tail.ahead.get(seq);
      tail.ahead.set(seq, text);
      this.grow(tail, text.length - (before?.length ?? 0));
      this.trim(key);
      return;
    }
    this.set(key, { texts: [text], chars: text.length, last: seq });
  }

  /**
   * Messages just read (their JSON texts, oldest first, contiguous from `firstSeq`): known from now on. Read just
   * before a known tail (a window that began before it), they extend it back.
   */
  fill(key: string, firstSeq: number, texts: readonly string[]): void {
    if (texts.length === 0) return;
    const last = firstSeq + texts.length - 1;
    const tail = this.touch(key);
    if (tail !== undefined && tail.last > last) {
      // A tail that already runs past what was read (a reply appended meanwhile) takes what was read before it,
      // when the two meet and agree where they overlap.
      const first = tail.last - tail.texts.length + 1;
      if (firstSeq >= first || last < first - 1 || tail.texts.length >= PER_SESSION) return;
      for (let seq = first; seq <= last; seq++) if (this.textAt(tail, seq) !== texts[seq - firstSeq]) return;
      const before = texts.slice(0, first - firstSeq).slice(-(PER_SESSION - tail.texts.length));
      tail.texts.unshift(...before);
      this.grow(tail, charsOf(before));
      this.trim(key);
      return;
    }
    const kept = texts.slice(-PER_SESSION);
    const ahead = tail?.ahead;
    const filled: Tail = { texts: kept, chars: charsOf(kept) + charsOf(ahead?.values() ?? []), last, ahead };
    this.set(key, filled);
    this.drain(filled);
    this.trim(key);
  }

  /** The newest `limit` messages before `beforeSeq`, oldest first, when every one of them is known. */
  read(key: string, limit: number, beforeSeq: number): StoredMessage[] | undefined {
    return this.lend(key, limit, beforeSeq)?.();
  }

  /**
   * Like `read`, but parsed only when asked (each call makes fresh copies): a run's history window that its runner
   * never reads costs no parsing.
   */
  lend(key: string, limit: number, beforeSeq: number): (() => StoredMessage[]) | undefined {
    const tail = this.touch(key);
    if (tail === undefined) return undefined;
    const end = beforeSeq - 1;
    // Messages after the known tail may exist (another gateway's): only a window inside it is served.
    if (end > tail.last) return undefined;
    if (limit <= 0 || end < 1) return () => [];
    const start = Math.max(1, end - limit + 1);
    const first = tail.last - tail.texts.length + 1;
    if (start < first) return undefined;
    const texts = tail.texts.slice(start - first, end - first + 1);
    return () =>
      texts.map(
        (text, i) => ({ ...(JSON.parse(text) as TranscriptMessage), seq: start + i }) as StoredMessage,
      );
  }

  forget(key: string): void {
    this.drop(key);
  }

  /** Takes into the tail what waited past a gap that is now filled, and keeps at most a tail's length. */
  private drain(tail: Tail): void {
    const ahead = tail.ahead;
    if (ahead !== undefined) {
      for (let text = ahead.get(tail.last + 1); text !== undefined; text = ahead.get(tail.last + 1)) {
        ahead.delete(tail.last + 1);
        tail.texts.push(text);
        tail.last++;
      }
      for (const [seq, text] of ahead) {
        if (seq > tail.last) continue;
        ahead.delete(seq);
        this.grow(tail, -text.length);
      }
      if (ahead.size === 0) tail.ahead = undefined;
    }
    if (tail.texts.length > PER_SESSION) {
      this.grow(tail, -charsOf(tail.texts.splice(0, tail.texts.length - PER_SESSION)));
    }
  }

  private textAt(tail: Tail, seq: number): string | undefined {
    return tail.texts[seq - (tail.last - tail.texts.length + 1)];
  }

  /** The tail of `key`, now the most recently used. */
  private touch(key: string): Tail | undefined {
    const tail = this.tails.get(key);
    if (tail === undefined) return undefined;
    this.tails.delete(key);
    this.tails.set(key, tail);
    return tail;
  }

  private set(key: string, tail: Tail): void {
    this.drop(key);
    this.tails.set(key, tail);
    this.chars += tail.chars;
    this.trim(key);
  }

  private drop(key: string): void {
    const tail = this.tails.get(key);
    if (tail === undefined) return;
    this.tails.delete(key);
    this.chars -= tail.chars;
  }

  private grow(tail: Tail, chars: number): void {
    tail.chars += chars;
    this.chars += chars;
  }

  /** Least recently used sessions go while there are too many or their texts are too long; `key` stays. */
  private trim(key: string): void {
    for (const oldest of this.tails.keys()) {
      if (this.tails.size <= MAX_SESSIONS && this.chars <= this.maxChars) return;
      if (oldest !== key) this.drop(oldest);
      else if (this.tails.size === 1) return;
    }
  }
}

function charsOf(texts: Iterable<string>): number {
  let chars = 0;
  for (const text of texts) chars += text.length;
  return chars;
}
