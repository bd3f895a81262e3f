import type { Logger } from "@sessions/core";

/** NOTIFY payloads must stay under 8,000 bytes: batches and chunks stay below this. */
export const MAX_NOTIFY_BYTES = 7_000;
/** A message larger than this (as JSON) is not sent: no client frame could carry it anyway. */
export const MAX_MESSAGE_BYTES = 1024 * 1024;
/** Payloads per NOTIFY statement. */
const PAYLOADS_PER_STATEMENT = 64;

/**
 * A payload on the messages channel: several whole messages (`b`), or one part of a message too large for one
 * payload (`p`: index and count, `d`: that slice of its JSON). `n` numbers the sender's messages.
 */
type Payload =
  | { o: string; b: { n: number; j: string }[] }
  | { o: string; n: number; p: [number, number]; d: string };

const bytes = (text: string) => Buffer.byteLength(text);

/**
 * How a payload `JSON.stringify({ o: origin, … })` begins (`{"o":<origin>,`): a listener knows its own process's
 * payloads, which Postgres delivers back to it too, by these first bytes without parsing them.
 */
export const payloadPrefix = (origin: string) => `${JSON.stringify({ o: origin }).slice(0, -1)},`;

/** Slices `json` so that each slice, JSON-quoted inside a payload, stays under the limit (never splits a pair). */
export function sliceJson(json: string, maxBytes: number): string[] {
  const parts: string[] = [];
  let start = 0;
  while (start < json.length) {
    let size = Math.min(json.length - start, maxBytes);
    for (;;) {
      let end = start + size;
      const last = json.charCodeAt(end - 1);
      if (end < json.length && last >= 0xd800 && last <= 0xdbff) end--;
      const slice = json.slice(start, end);
      if (bytes(JSON.stringify(slice)) <= maxBytes || end - start <= 1) {
        parts.push(slice);
        start = end;
        break;
      }
      size = Math.max(1, Math.floor(size / 2));
    }
  }
  return parts;
}

/**
 * The payloads that carry `messages` (JSON texts, numbered from `first`), in order: whole messages packed
 * together up to the limit; a message too large for one payload in parts of its own.
 */
export function encodePayloads(origin: string, first: number, messages: readonly string[]): string[] {
  const payloads: string[] = [];
  const overhead = bytes(JSON.stringify({ o: origin, b: [] }));
  // Each entry's JSON is made once: its size decides the batch, and the payload is the entries' texts joined, as
  // JSON.stringify({ o: origin, b: batch } satisfies Payload) would write it.
  const head = `${payloadPrefix(origin)}"b":[`;
  let batch: string[] = [];
  let size = overhead;
  const flush = () => {
    if (batch.length === 0) return;
    payloads.push(`${head}${batch.join(",")}]}`);
    batch = [];
    size = overhead;
  };
  messages.forEach((json, i) => {
    const n = first + i;
    const entry = JSON.stringify({ n, j: json });
    const entrySize = bytes(entry) + 1;
    if (overhead + entrySize <= MAX_NOTIFY_BYTES) {
      if (size + entrySize > MAX_NOTIFY_BYTES) flush();
      batch.push(entry);
      size += entrySize;
      return;
    }
    flush();
    const room = MAX_NOTIFY_BYTES - bytes(JSON.stringify({ o: origin, n, p: [999_999, 999_999], d: "" }));
    const parts = sliceJson(json, room);
    parts.forEach((d, index) => {
      payloads.push(JSON.stringify({ o: origin, n, p: [index, parts.length], d } satisfies Payload));
    });
  });
  flush();
  return payloads;
}

/** Puts other processes' payloads back together into messages, in the order they were published. */
export function createReassembler(origin: string, deliver: (json: string) => void, logger: Logger) {
  // One message in parts per sender at a time: a sender's payloads arrive in order, never interleaved.
  const partial = new Map<string, { n: number; parts: string[]; count: number }>();
  const ownPrefix = payloadPrefix(origin);
  return (text: string): void => {
    if (text.startsWith(ownPrefix)) return;
    let payload: Payload;
    try {
      payload = JSON.parse(text) as Payload;
    } catch {
      logger.warn("ignored a malformed broadcast payload");
      return;
    }
    if (payload === null || typeof payload !== "object" || payload.o === origin) return;
    if ("b" in payload && Array.isArray(payload.b)) {
      for (const entry of payload.b) if (typeof entry?.j === "string") deliver(entry.j);
      return;
    }
    if (!("p" in payload) || !Array.isArray(payload.p) || typeof payload.d !== "string") return;
    const [index, count] = payload.p;
    let current = partial.get(payload.o);
    if (index === 0 || current === undefined || current.n !== payload.n) {
      // A new message (the rest of an earlier one was lost: it is dropped).
      current = { n: payload.n, parts: [], count };
      partial.set(payload.o, current);
    }
    if (current.parts.length !== index) return;
    current.parts.push(payload.d);
    if (current.parts.length === current.count) {
      partial.delete(payload.o);
      deliver(current.parts.join(""));
    }
  };
}

/**
 * Sends messages to the other processes, in order: queued, and sent a batch at a time on one connection (the
 * next batch waits for the previous one), so a burst of small messages — the deltas of a streaming reply — costs a
 * few NOTIFY statements, not one each.
 */
export function createPublisher(options: {
  origin: string;
  channel: string;
  send(text: string, values: readonly unknown[]): Promise<boolean>;
  logger: Logger;
}) {
  const { origin, channel, logger } = options;
  let queue: string[] = [];
  let next = 0;
  let sending: Promise<void> | undefined;
  let warned = false;

  async function drain(): Promise<void> {
    while (queue.length > 0) {
      const messages = queue;
      queue = [];
      const payloads = encodePayloads(origin, next, messages);
      next += messages.length;
      for (let i = 0; i < payloads.length; i += PAYLOADS_PER_STATEMENT) {
        const chunk = payloads.slice(i, i + PAYLOADS_PER_STATEMENT);
        const calls = chunk.map((_, k) => `pg_notify($1, $${k + 2})`).join(", ");
        try {
          const sent = await options.send(`SELECT ${calls}`, [channel, ...chunk]);
          if (!sent) throw new Error("the LISTEN connection is reconnecting");
          warned = false;
        } catch (error) {
          // Ephemeral by contract: dropped, and said once per outage.
          if (!warned) logger.warn("could not publish to the other gateways", { error: String(error) });
          warned = true;
          break;
        }
      }
    }
  }

  function kick(): void {
    if (sending !== undefined || queue.length === 0) return;
    sending = (async () => {
      // Let the rest of this tick's messages join the batch.
      await new Promise((resolve) => setImmediate(resolve));
      await drain();
    })().finally(() => {
      sending = undefined;
      kick();
    });
  }

  return {
    publish(json: string): void {
      if (bytes(json) > MAX_MESSAGE_BYTES) {
        logger.warn("a message is too large to publish; the other gateways do not get it", {
          bytes: bytes(json),
        });
        return;
      }
      queue.push(json);
      kick();
    },
    /** Resolves once everything queued so far has been sent (or dropped). */
    async flushed(): Promise<void> {
      while (sending !== undefined) await sending;
    },
  };
}
