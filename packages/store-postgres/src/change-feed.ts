import type { Logger } from "@sessions/core";
import type { StoreChange } from "@sessions/gateway";
import pg from "pg";
import { payloadPrefix } from "./broadcast.js";

/** NOTIFY payloads must stay under 8,000 bytes; changes are sent in batches below this. */
export const MAX_PAYLOAD_BYTES = 7_000;
const RECONNECT_MIN_MS = 100;
const RECONNECT_MAX_MS = 5_000;

interface Payload {
  /** The store instance that committed the changes: it has told its own watchers already. */
  o: string;
  c: StoreChange[];
}

/**
 * Splits `changes` into batches whose NOTIFY payload (with the origin) stays under the limit, in order; a single
 * change larger than the limit travels alone (keys are bounded, so that does not happen in practice).
 */
export function batchChanges(origin: string, changes: readonly StoreChange[]): StoreChange[][] {
  return packChanges(origin, changes).map((batch) => batch.changes);
}

/** The batches of `batchChanges`, each change with its JSON text (made once, for its size and its payload). */
function packChanges(
  origin: string,
  changes: readonly StoreChange[],
): { changes: StoreChange[]; texts: string[] }[] {
  const batches: { changes: StoreChange[]; texts: string[] }[] = [];
  const overhead = Buffer.byteLength(JSON.stringify({ o: origin, c: [] }));
  let batch: { changes: StoreChange[]; texts: string[] } = { changes: [], texts: [] };
  let size = overhead;
  for (const change of changes) {
    const text = JSON.stringify(change);
    const bytes = Buffer.byteLength(text) + 1;
    if (batch.changes.length > 0 && size + bytes > MAX_PAYLOAD_BYTES) {
      batches.push(batch);
      batch = { changes: [], texts: [] };
      size = overhead;
    }
    batch.changes.push(change);
    batch.texts.push(text);
    size += bytes;
  }
  if (batch.changes.length > 0) batches.push(batch);
  return batches;
}

/**
 * The statement that announces `changes` on `channel`, run after their transactions committed (in a transaction
 * of its own, which writes no WAL): one `pg_notify` per batch, its payload `JSON.stringify({ o: origin, c })`, the
 * channel and payloads as parameters (no escaping of kilobytes of text into the statement).
 */
export function notifySql(
  channel: string,
  origin: string,
  changes: readonly StoreChange[],
): { text: string; values: string[] } {
  const head = `${payloadPrefix(origin)}"c":[`;
  const values = [channel];
  for (const { texts } of packChanges(origin, changes)) values.push(`${head}${texts.join(",")}]}`);
  const calls = values.slice(1).map((_, i) => `pg_notify($1, $${i + 2})`);
  return { text: `SELECT ${calls.join(", ")}`, values };
}

export interface ChangeListener {
  /** Resolves once LISTEN is in place (changes committed after this are heard). */
  readonly ready: Promise<void>;
  /**
   * Runs a statement on the LISTEN connection (statements sent through it run in the order sent); false, and
   * nothing run, while it is disconnected.
   */
  send(text: string, values: readonly unknown[]): Promise<boolean>;
  /** The backend pid of the LISTEN connection while connected. */
  pid(): number | undefined;
  close(): Promise<void>;
}

/**
 * Hears the changes other processes commit: one dedicated connection that LISTENs on `channel` and reconnects
 * with backoff when it drops. Notifications sent while it was disconnected are lost; `onReconnect` tells the owner
 * so it can re-read what it waits for.
 */
export function listenForChanges(options: {
  config: pg.ClientConfig;
  channel: string;
  origin: string;
  onChanges(changes: StoreChange[]): void;
  /** Also LISTENs on `messages.channel` and hands every payload heard there to `messages.onPayload`. */
  messages?: { channel: string; onPayload(payload: string): void } | undefined;
  onReconnect?(): void;
  logger: Logger;
}): ChangeListener {
  const { channel, origin, logger } = options;
  let client: pg.Client | undefined;
  let closed = false;
  let delay = RECONNECT_MIN_MS;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let connectedOnce = false;
  const ownPrefix = payloadPrefix(origin);

  const onNotification = (message: pg.Notification) => {
    if (message.payload === undefined) return;
    if (options.messages !== undefined && message.channel === options.messages.channel) {
      options.messages.onPayload(message.payload);
      return;
    }
    if (message.channel !== channel) return;
    // This process's own announcements come back too: known by their first bytes, they are not parsed.
    if (message.payload.startsWith(ownPrefix)) return;
    let payload: Payload;
    try {
      payload = JSON.parse(message.payload) as Payload;
    } catch {
      logger.warn("ignored a malformed change notification", { channel });
      return;
    }
    if (payload.o === origin || !Array.isArray(payload.c)) return;
    options.onChanges(payload.c);
  };

  async function connect(): Promise<void> {
    const next = new pg.Client(options.config);
    next.on("notification", onNotification);
    next.on("error", (error) => {
      logger.warn("change feed connection failed; reconnecting", { error: error.message });
      drop(next);
    });
    next.on("end", () => drop(next));
    await next.connect();
    if (options.messages !== undefined) {
      await next.query(`LISTEN ${next.escapeIdentifier(options.messages.channel)}`);
    }
    await next.query(`LISTEN ${next.escapeIdentifier(channel)}`);
    if (closed) {
      await next.end().catch(() => undefined);
      return;
    }
    client = next;
    delay = RECONNECT_MIN_MS;
    if (connectedOnce) options.onReconnect?.();
    connectedOnce = true;
  }

  function drop(which: pg.Client): void {
    if (client !== which) return;
    client = undefined;
    which.end().catch(() => undefined);
    retry();
  }

  function retry(): void {
    if (closed || timer !== undefined) return;
    timer = setTimeout(() => {
      timer = undefined;
      connect().catch((error: Error) => {
        logger.warn("change feed reconnect failed", { error: error.message, retryInMs: delay });
        retry();
      });
    }, delay);
    timer.unref();
    delay = Math.min(RECONNECT_MAX_MS, delay * 2);
  }

  const ready = connect();
  return {
    ready,
    async send(text, values) {
      const current = client;
      if (current === undefined) return false;
      await current.query(text, [...values]);
      return true;
    },
    pid: () => (client as { processID?: number | null } | undefined)?.processID ?? undefined,
    async close() {
      closed = true;
      if (timer !== undefined) clearTimeout(timer);
      const current = client;
      client = undefined;
      await current?.end().catch(() => undefined);
    },
  };
}
