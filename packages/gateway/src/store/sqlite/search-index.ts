import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";
import Database from "better-sqlite3";
import { messageText, SEARCH_TOKENIZER } from "./schema.js";

/** The file of a store's transcript index: beside the store's, rebuilt from the transcripts when it is missing. */
export const searchFileOf = (file: string): string => `${file}-search`;

/**
 * The index's tables, in schema `S`: the FTS5 index of messages (row `id << 32 | seq`, `id` the session's number in
 * the store's `search_keys`) and how far each session is indexed (its messages up to `seq` are in).
 */
const searchSchema = (S: string) => `
CREATE TABLE IF NOT EXISTS ${S}.search_progress (id INTEGER PRIMARY KEY, seq INTEGER NOT NULL);
CREATE VIRTUAL TABLE IF NOT EXISTS ${S}.messages_search USING fts5(text, content = '', contentless_delete = 1, ${SEARCH_TOKENIZER});
`;

/**
 * The indexer, as JavaScript source: the same text runs on the indexer's thread (evaluated there) and, where no
 * thread can run (an in-memory store), on the store's own. `indexer(db, S, M, text)` works on a connection that sees
 * the index in schema `S` and the store in schema `M`.
 * - `take(rows)`: messages the store committed, as `[id, seq, text, …]` (every message, its text "" when it has none
 *   to search), indexed past each session's progress in one transaction of the index. A session whose rows do not
 *   follow on from its progress (the indexer started after some) is caught up from the store instead.
 * - `catchUp(ids)`: the messages of sessions `ids` (every session when null) past their progress, read from the
 *   store; first the rows of sessions whose messages were deleted (`search_forget`) are dropped (a deletion's row
 *   in the store is removed after, in one of the store's own transactions, only as counted when read).
 */
const INDEXER = `
function indexer(db, S, M, text) {
  const forgotten = db.prepare("SELECT f.key AS key, f.n AS n, k.id AS id FROM " + M + ".search_forget f LEFT JOIN " + M + ".search_keys k ON k.key = f.key");
  const dropRows = db.prepare("DELETE FROM " + S + ".messages_search WHERE rowid >= (? << 32) AND rowid < ((? + 1) << 32)");
  const dropProgress = db.prepare("DELETE FROM " + S + ".search_progress WHERE id = ?");
  const unforget = db.prepare("DELETE FROM " + M + ".search_forget WHERE key = ? AND n = ?");
  const keyOf = db.prepare("SELECT key FROM " + M + ".search_keys WHERE id = ?");
  const everyId = db.prepare("SELECT id FROM " + M + ".search_keys");
  const progressOf = db.prepare("SELECT seq FROM " + S + ".search_progress WHERE id = ?");
  const topOf = db.prepare("SELECT max(seq) AS top FROM " + M + ".messages WHERE session_key = ?");
  const fromStore = db.prepare("INSERT INTO " + S + ".messages_search (rowid, text) SELECT row, text FROM (SELECT (@id << 32) + m.seq AS row, " + text + " AS text FROM " + M + ".messages m WHERE m.session_key = @key AND m.seq > @from AND m.seq <= @to AND m.seq <= 4294967295) WHERE text <> ''");
  const insert = db.prepare("INSERT INTO " + S + ".messages_search (rowid, text) VALUES ((? << 32) + ?, ?)");
  const setProgress = db.prepare("INSERT INTO " + S + ".search_progress (id, seq) VALUES (?, ?) ON CONFLICT (id) DO UPDATE SET seq = excluded.seq");
  const drop = (id) => {
    dropRows.run(id, id);
    dropProgress.run(id);
  };
  const catchUpOne = (id) => {
    const key = keyOf.get(id)?.key;
    if (key === undefined) return;
    const top = topOf.get(key)?.top ?? 0;
    let from = progressOf.get(id)?.seq ?? 0;
    // Fewer messages than indexed: deleted without a row saying so (a file of an older gateway); start over.
    if (top < from) {
      drop(id);
      from = 0;
    }
    if (top === from) return;
    fromStore.run({ id, key, from, to: top });
    setProgress.run(id, top);
  };
  return {
    take(rows) {
      const behind = new Set();
      db.transaction(() => {
        const progress = new Map();
        for (let i = 0; i < rows.length; i += 3) {
          const id = rows[i];
          if (behind.has(id)) continue;
          let at = progress.get(id);
          if (at === undefined) at = progressOf.get(id)?.seq ?? 0;
          const seq = rows[i + 1];
          if (seq <= at) continue;
          if (seq !== at + 1 || seq > 4294967295) {
            behind.add(id);
            continue;
          }
          if (rows[i + 2] !== "") insert.run(id, seq, rows[i + 2]);
          progress.set(id, seq);
        }
        for (const [id, seq] of progress) if (!behind.has(id)) setProgress.run(id, seq);
      })();
      if (behind.size > 0) this.catchUp([...behind]);
    },
    catchUp(ids) {
      const gone = forgotten.all();
      db.transaction(() => {
        for (const row of gone) if (row.id !== null) drop(row.id);
        for (const id of ids === null ? everyId.all().map((row) => row.id) : ids) catchUpOne(id);
      })();
      if (gone.length > 0) db.transaction(() => { for (const row of gone) unforget.run(row.key, row.n); })();
    },
  };
}
`;

/** What the store asks of its transcript index. */
export interface SearchIndex {
  /** A message was committed: session number `id` (in `search_keys`), its `seq`, its searchable text ("" if none). */
  appended(id: number, seq: number, text: string): void;
  /** Messages of a session were deleted (committed): the indexer drops its rows. */
  deleted(): void;
  /** Resolves once everything committed before the call is indexed (a search reads its own writes). */
  caughtUp(): Promise<void>;
  /** On a store without an indexer thread: indexes what was committed, now (inside the search's unit). */
  catchUpHere(): void;
  close(): Promise<void>;
}

/** How long committed messages collect before they go to the indexer's thread (a search sends them at once). */
const SEND_EVERY_MS = 100;

const driverPath = (): string => createRequire(import.meta.url).resolve("better-sqlite3");

/** The indexer's thread after its setup: batches and deletions as they come, a reply to each search's sync. */
const WORKER_LOOP = `
const ix = indexer(db, "main", "store", workerData.text);
let rows = [];
let forgets = false;
let stop = false;
let scheduled = false;
const syncs = [];
const work = () => {
  scheduled = false;
  try {
    const taken = rows;
    rows = [];
    if (forgets) {
      forgets = false;
      ix.catchUp([]);
    }
    if (taken.length > 0) ix.take(taken);
  } catch (error) {
    parentPort.postMessage({ error: String((error && error.message) || error) });
    // What was not indexed is caught up from the store.
    try { ix.catchUp(null); } catch {}
  }
  for (const id of syncs.splice(0)) parentPort.postMessage({ synced: id });
  if (stop) {
    db.close();
    parentPort.postMessage({ stopped: true });
  }
};
const schedule = () => {
  if (scheduled) return;
  scheduled = true;
  setImmediate(work);
};
parentPort.on("message", (message) => {
  if (message.rows) for (const value of message.rows) rows.push(value);
  if (message.forget) forgets = true;
  if (message.sync !== undefined) syncs.push(message.sync);
  if (message.stop) stop = true;
  schedule();
});
// First, whatever the store holds that the index does not (a new index file is built from the transcripts).
try {
  ix.catchUp(null);
} catch (error) {
  parentPort.postMessage({ error: String((error && error.message) || error) });
}
`;

const WORKER_SOURCE = `
const { parentPort, workerData } = require("node:worker_threads");
// The indexer takes what CPU the gateway leaves: at the lowest priority (Linux: per thread), it yields to the store's
// thread under load and catches up when there is room (a search waits for it all the same).
try {
  const tid = Number(require("node:fs").readlinkSync("/proc/thread-self").split("/").pop());
  require("node:os").setPriority(tid, 19);
} catch {}
const Database = require(workerData.driver);
const db = new Database(workerData.searchFile);
db.pragma("journal_mode = WAL");
db.pragma("synchronous = NORMAL");
db.pragma("busy_timeout = 5000");
db.prepare("ATTACH DATABASE ? AS store").run(workerData.storeFile);
db.exec(workerData.schema);
${INDEXER}
${WORKER_LOOP}
`;

/**
 * The transcript index of the store at `file`: an indexer on a thread of its own, with its own connection, writing
 * only the index's file (the store's writer never waits for it). The store's thread sends it each committed message's
 * text in batches, so it never reads the store but to catch up: on start (an index file deleted, or new, is rebuilt
 * from the transcripts) and after deletions. `reader` is the connection searches run on (the index as `main`, the
 * store as `store`); it indexes on the store's thread instead when no thread can start.
 */
export function startSearchIndex(
  file: string,
  reader: Database.Database,
  log: (message: string, error: string) => void,
): SearchIndex {
  let worker: Worker | undefined;
  try {
    worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: {
        driver: driverPath(),
        searchFile: searchFileOf(file),
        storeFile: file,
        schema: searchSchema("main"),
        text: messageText("m"),
      },
    });
  } catch (error) {
    log("the search indexer's thread did not start: indexing on the store's thread", String(error));
    worker = undefined;
  }
  if (worker === undefined) return inThread(reader, "main", "store");
  const thread = worker;
  let rows: (number | string)[] = [];
  let forget = false;
  let nextSync = 0;
  const waiting = new Map<number, () => void>();
  let failed = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const send = () => {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
    if (rows.length === 0 && !forget) return;
    thread.postMessage({ rows, forget });
    rows = [];
    forget = false;
  };
  const later = () => {
    if (timer === undefined) {
      timer = setTimeout(send, SEND_EVERY_MS);
      timer.unref();
    }
  };
  const settleAll = () => {
    for (const wake of waiting.values()) wake();
    waiting.clear();
  };
  thread.on("message", (message: { synced?: number; error?: string }) => {
    if (message.synced !== undefined) {
      waiting.get(message.synced)?.();
      waiting.delete(message.synced);
      // Nothing waits for it any more: it no longer holds the process.
      if (waiting.size === 0 && closing === undefined) thread.unref();
    }
    if (message.error !== undefined) log("the search indexer failed a batch (it catches up)", message.error);
  });
  thread.on("error", (error) => {
    failed = true;
    log("the search indexer's thread failed: searches read the index as it is", String(error));
    settleAll();
  });
  thread.on("exit", () => {
    failed = true;
    settleAll();
  });
  let closing: Promise<void> | undefined;
  // Last, after its listeners (a 'message' listener refs the thread again): an open store does not hold the process.
  thread.unref();
  return {
    appended(id, seq, text) {
      rows.push(id, seq, text);
      later();
    },
    deleted() {
      forget = true;
      later();
    },
    caughtUp() {
      if (failed || closing !== undefined) return Promise.resolve();
      send();
      const id = nextSync++;
      // While a search waits for it, the thread holds the process (its reply is all the caller waits on).
      thread.ref();
      return new Promise<void>((resolve) => {
        waiting.set(id, resolve);
        thread.postMessage({ sync: id });
      });
    },
    catchUpHere() {},
    close() {
      closing ??= new Promise<void>((resolve) => {
        thread.ref();
        send();
        const done = () => void thread.terminate().finally(resolve);
        thread.once("exit", () => resolve());
        thread.on("message", (message: { stopped?: boolean }) => {
          if (message.stopped) done();
        });
        thread.postMessage({ stop: true });
        // Never let a stuck indexer hold `close()`: what it had not indexed is caught up on the next start.
        setTimeout(done, 5_000).unref();
      });
      return closing;
    },
  };
}

/**
 * The index of an in-memory store (no other connection can see it): in schema `search` of the store's own
 * connection, indexed on the store's thread before each search.
 */
export function memorySearchIndex(db: Database.Database): SearchIndex {
  db.exec("ATTACH DATABASE ':memory:' AS search");
  return inThread(db, "search", "main");
}

/** Indexing on the store's thread, at each search: what was committed since the last, after a first catch-up. */
function inThread(db: Database.Database, S: string, M: string): SearchIndex {
  db.exec(searchSchema(S));
  const ix = new Function(`${INDEXER}; return indexer;`)()(db, S, M, messageText("m")) as {
    take(rows: (number | string)[]): void;
    catchUp(ids: number[] | null): void;
  };
  let rows: (number | string)[] = [];
  let everything = true;
  let forget = false;
  return {
    appended(id, seq, text) {
      rows.push(id, seq, text);
    },
    deleted() {
      forget = true;
    },
    caughtUp: () => Promise.resolve(),
    catchUpHere() {
      if (everything || forget) ix.catchUp(everything ? null : []);
      everything = false;
      forget = false;
      const taken = rows;
      rows = [];
      if (taken.length > 0) ix.take(taken);
    },
    close: () => Promise.resolve(),
  };
}

/** The connection file stores search on: the index's file as `main`, the store's attached as `store`. */
export function openSearchReader(file: string): Database.Database {
  const db = new Database(searchFileOf(file));
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = NORMAL");
  db.pragma("busy_timeout = 5000");
  db.prepare("ATTACH DATABASE ? AS store").run(file);
  db.exec(searchSchema("main"));
  return db;
}
