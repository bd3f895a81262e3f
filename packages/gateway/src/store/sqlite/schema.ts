import { SessionsError } from "@sessions/core";
import type Database from "better-sqlite3";

/** One step of the schema. `up` runs inside its own transaction, together with the version bump. */
export interface Migration {
  version: number;
  description: string;
  up(db: Database.Database): void;
}

/** The schema of version 1 as it shipped; `runs.follow_up_pending` was added to it later (`ensureFollowUpPending`). */
const VERSION_1 = `
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS entries (
  key TEXT PRIMARY KEY,
  session_id TEXT NOT NULL,
  agent_id TEXT NOT NULL,
  kind TEXT NOT NULL,
  updated_at INTEGER NOT NULL,
  spawned_by TEXT,
  label TEXT,
  display_name TEXT,
  archived INTEGER NOT NULL DEFAULT 0,
  data TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS entries_updated ON entries (archived, updated_at DESC, key);
CREATE INDEX IF NOT EXISTS entries_kind ON entries (archived, kind, updated_at DESC, key);
CREATE INDEX IF NOT EXISTS entries_agent ON entries (archived, agent_id, updated_at DESC, key);
CREATE INDEX IF NOT EXISTS entries_spawned_by ON entries (spawned_by, updated_at DESC);
CREATE INDEX IF NOT EXISTS entries_session_id ON entries (session_id);
CREATE INDEX IF NOT EXISTS entries_label ON entries (label);
CREATE TABLE IF NOT EXISTS messages (
  session_key TEXT NOT NULL,
  seq INTEGER NOT NULL,
  data TEXT NOT NULL,
  PRIMARY KEY (session_key, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS runs (
  run_id TEXT PRIMARY KEY,
  status TEXT NOT NULL,
  idempotency_key TEXT UNIQUE,
  data TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS runs_status ON runs (status);
CREATE TABLE IF NOT EXISTS deliveries (
  id TEXT PRIMARY KEY,
  idempotency_key TEXT NOT NULL UNIQUE,
  session_key TEXT NOT NULL,
  run_id TEXT,
  status TEXT NOT NULL,
  next_attempt_at INTEGER NOT NULL,
  created_at INTEGER NOT NULL,
  data TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS deliveries_due ON deliveries (status, next_attempt_at);
CREATE INDEX IF NOT EXISTS deliveries_session ON deliveries (session_key, created_at DESC);
CREATE INDEX IF NOT EXISTS deliveries_run ON deliveries (run_id);
CREATE TABLE IF NOT EXISTS routes (
  session_key TEXT NOT NULL,
  channel TEXT NOT NULL,
  account_id TEXT NOT NULL,
  updated_at INTEGER NOT NULL,
  data TEXT NOT NULL,
  PRIMARY KEY (session_key, channel, account_id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS subagents (
  child_key TEXT PRIMARY KEY,
  requester_key TEXT NOT NULL,
  status TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  archive_at INTEGER,
  data TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS subagents_requester ON subagents (requester_key, status);
CREATE INDEX IF NOT EXISTS subagents_status ON subagents (status);
CREATE INDEX IF NOT EXISTS subagents_archive ON subagents (archive_at) WHERE archive_at IS NOT NULL;
CREATE TABLE IF NOT EXISTS thread_bindings (
  channel TEXT NOT NULL,
  account_id TEXT NOT NULL,
  thread_id TEXT NOT NULL,
  session_key TEXT NOT NULL,
  data TEXT NOT NULL,
  PRIMARY KEY (channel, account_id, thread_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS thread_bindings_session ON thread_bindings (session_key);
`;

const columnsOf = (db: Database.Database, table: string) =>
  new Set((db.prepare(`PRAGMA table_info(${table})`).all() as { name: string }[]).map((c) => c.name));

/** Version 1 first shipped without `runs.follow_up_pending`; such files still say version 1. */
function ensureFollowUpPending(db: Database.Database): void {
  if (!columnsOf(db, "runs").has("follow_up_pending")) {
    // Those gateways had no follow-ups, so 0 is right for every existing row.
    db.exec("ALTER TABLE runs ADD COLUMN follow_up_pending INTEGER NOT NULL DEFAULT 0");
  }
  db.exec(
    "CREATE INDEX IF NOT EXISTS runs_follow_up ON runs (follow_up_pending) WHERE follow_up_pending = 1",
  );
}

// Version 4: full-text search. Part of a released migration once shipped: never change it, add a migration instead.
// Both indexes are contentless (the text stays in messages.data and entries only) and keyed by a small number per
// session key (search_keys.id): a message is row `id << 32 | seq`, a session's key, label and display name row `id`.
// Triggers keep them in step with every write of the two tables, in the writer's own transaction. A new message goes
// to messages_search_pending first: FTS5 writes a segment per transaction, which would cost every run's start and end
// more than all the rest of their writes, so the pending rows are moved into messages_search in batches (and before
// every search, in the search's own unit: a search always sees every committed message).
export const SEARCH_TOKENIZER = `tokenize = "unicode61 remove_diacritics 0 categories 'L* N* Co M* Cn'"`;
/** The searched text of a message (`searchableText` of @sessions/core) from its JSON in column `data` of `row`. */
export const messageText = (row: string) => `CASE WHEN json_valid(${row}.data) THEN
    CASE WHEN json_extract(${row}.data, '$.role') IN ('toolResult', 'tool') THEN NULL
      WHEN json_type(${row}.data, '$.content') = 'text' THEN json_extract(${row}.data, '$.content')
      WHEN json_type(${row}.data, '$.content') = 'array' THEN (
        SELECT group_concat(json_extract(p.value, '$.text'), char(10)) FROM json_each(${row}.data, '$.content') AS p
        WHERE json_extract(p.value, '$.type') = 'text' AND json_type(p.value, '$.text') = 'text')
    END
  END`;
/** The searched text of a session (`searchableSessionText` of @sessions/core): key without `agent:<id>:`, label, display name. */
const sessionText = (
  row: string,
) => `CASE WHEN substr(${row}.key, 1, 6) = 'agent:' AND instr(substr(${row}.key, 7), ':') > 0
    THEN substr(${row}.key, 7 + instr(substr(${row}.key, 7), ':')) ELSE ${row}.key END
    || ' ' || coalesce(${row}.label, '') || ' ' || coalesce(${row}.display_name, '')`;
const messageRow = (row: string) =>
  `(SELECT (id << 32) + ${row}.seq FROM search_keys WHERE key = ${row}.session_key)`;
const indexMessage = (row: string) => `INSERT OR REPLACE INTO messages_search_pending (rowid, text)
    SELECT (k.id << 32) + ${row}.seq, t.text FROM search_keys k, (SELECT ${messageText(row)} AS text) t
    WHERE k.key = ${row}.session_key AND ${row}.seq BETWEEN 0 AND 4294967295 AND t.text <> ''`;
const indexSession = (row: string) => `INSERT INTO entries_search (rowid, text)
    SELECT k.id, ${sessionText(row)} FROM search_keys k WHERE k.key = ${row}.key`;
const VERSION_4 = `
CREATE TABLE search_keys (id INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE);
CREATE VIRTUAL TABLE messages_search USING fts5(text, content = '', contentless_delete = 1, ${SEARCH_TOKENIZER});
CREATE VIRTUAL TABLE entries_search USING fts5(text, content = '', contentless_delete = 1, ${SEARCH_TOKENIZER});
CREATE TABLE messages_search_pending (rowid INTEGER PRIMARY KEY, text TEXT NOT NULL);

CREATE TRIGGER messages_search_insert AFTER INSERT ON messages BEGIN
  INSERT OR IGNORE INTO search_keys (key) VALUES (new.session_key);
  ${indexMessage("new")};
END;
CREATE TRIGGER messages_search_delete AFTER DELETE ON messages BEGIN
  DELETE FROM messages_search WHERE rowid = ${messageRow("old")};
  DELETE FROM messages_search_pending WHERE rowid = ${messageRow("old")};
END;
CREATE TRIGGER messages_search_update AFTER UPDATE ON messages BEGIN
  DELETE FROM messages_search WHERE rowid = ${messageRow("old")};
  DELETE FROM messages_search_pending WHERE rowid = ${messageRow("old")};
  INSERT OR IGNORE INTO search_keys (key) VALUES (new.session_key);
  ${indexMessage("new")};
END;

CREATE TRIGGER entries_search_insert AFTER INSERT ON entries BEGIN
  INSERT OR IGNORE INTO search_keys (key) VALUES (new.key);
  ${indexSession("new")};
END;
CREATE TRIGGER entries_search_delete AFTER DELETE ON entries BEGIN
  DELETE FROM entries_search WHERE rowid = (SELECT id FROM search_keys WHERE key = old.key);
END;
-- Most writes of an entry set only updated_at and data: they leave the index alone.
CREATE TRIGGER entries_search_update AFTER UPDATE OF key, label, display_name ON entries
  WHEN old.key IS NOT new.key OR old.label IS NOT new.label OR old.display_name IS NOT new.display_name BEGIN
  DELETE FROM entries_search WHERE rowid = (SELECT id FROM search_keys WHERE key = old.key);
  INSERT OR IGNORE INTO search_keys (key) VALUES (new.key);
  ${indexSession("new")};
END;

INSERT OR IGNORE INTO search_keys (key) SELECT key FROM entries;
INSERT OR IGNORE INTO search_keys (key) SELECT DISTINCT session_key FROM messages;
INSERT INTO entries_search (rowid, text) SELECT k.id, ${sessionText("e")} FROM entries e JOIN search_keys k ON k.key = e.key;
INSERT INTO messages_search (rowid, text)
  SELECT id, text FROM (
    SELECT (k.id << 32) + m.seq AS id, ${messageText("m")} AS text FROM messages m JOIN search_keys k ON k.key = m.session_key
    WHERE m.seq BETWEEN 0 AND 4294967295)
  WHERE text <> '';
`;

// Version 5: the transcripts' index leaves the store's file for one of its own (`<file>-search`), written by an indexer
// on a thread of its own (search-index.ts): a run's transaction writes nothing of it. The store keeps the session
// index (entries_search, and search_keys: a session's number, made by the store with the session's first message or
// entry) and `search_forget`, the sessions whose messages were deleted (their indexed rows to drop), counted so that
// an indexer that read a count never drops a later deletion's row.
const VERSION_5 = `
DROP TRIGGER IF EXISTS messages_search_insert;
DROP TRIGGER IF EXISTS messages_search_update;
DROP TRIGGER IF EXISTS messages_search_delete;
DROP TABLE IF EXISTS messages_search;
DROP TABLE IF EXISTS messages_search_pending;
CREATE TABLE search_forget (key TEXT PRIMARY KEY, n INTEGER NOT NULL) WITHOUT ROWID;
`;

/** Every schema version in order. Append only: a released migration never changes. */
export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    description: "entries, transcripts, runs, outbox, routes, sub-agents, thread bindings",
    up(db) {
      db.exec(VERSION_1);
      ensureFollowUpPending(db);
    },
  },
  {
    version: 2,
    description: "run owners, delivery leases, the leases table",
    up(db) {
      ensureFollowUpPending(db);
      db.exec(`
        ALTER TABLE runs ADD COLUMN owner TEXT;
        ALTER TABLE deliveries ADD COLUMN lease_owner TEXT;
        ALTER TABLE deliveries ADD COLUMN lease_until INTEGER;
        CREATE TABLE leases (
          name TEXT PRIMARY KEY,
          owner TEXT NOT NULL,
          acquired_at INTEGER NOT NULL,
          expires_at INTEGER NOT NULL,
          data TEXT
        );
      `);
    },
  },
  {
    version: 3,
    description: "the runs of a tree by their root (runs.root_run_id, runs_root)",
    up(db) {
      // Only runs that have a root are indexed: a tree's first run (most runs) costs the index nothing.
      db.exec(`
        ALTER TABLE runs ADD COLUMN root_run_id TEXT;
        UPDATE runs SET root_run_id = json_extract(data, '$.rootRunId') WHERE data LIKE '%"rootRunId"%';
        CREATE INDEX runs_root ON runs (root_run_id) WHERE root_run_id IS NOT NULL;
      `);
    },
  },
  {
    version: 4,
    description: "full-text search of transcripts and session keys, labels and display names (FTS5)",
    up(db) {
      db.exec(VERSION_4);
    },
  },
  {
    version: 5,
    description: "the transcripts' search index in a file of its own, written off the request path",
    up(db) {
      db.exec(VERSION_5);
    },
  },
];

export const SCHEMA_VERSION = MIGRATIONS[MIGRATIONS.length - 1]?.version ?? 0;

/** The version recorded in `meta.schema_version`; 0 for a new, empty file. */
export function schemaVersion(db: Database.Database): number {
  const meta = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'").get();
  if (meta === undefined) return 0;
  const row = db.prepare("SELECT value FROM meta WHERE key = 'schema_version'").get() as
    | { value: string }
    | undefined;
  return row === undefined ? 0 : Number(row.value);
}

/** Refuses a file written by a newer gateway (the existing typed error). */
export function assertKnownVersion(version: number, file: string): void {
  if (version > SCHEMA_VERSION) {
    throw new SessionsError(
      "unavailable",
      `SQLite store at ${file} has schema version ${version}; this @sessions/gateway understands up to ${SCHEMA_VERSION}`,
      { field: "path" },
    );
  }
}

/** Brings the file to `SCHEMA_VERSION`, one migration per transaction (a second opener waits, then skips). */
export function migrate(db: Database.Database, file: string): void {
  for (const migration of MIGRATIONS) {
    db.transaction(() => {
      const version = schemaVersion(db);
      assertKnownVersion(version, file);
      if (version >= migration.version) return;
      migration.up(db);
      db.prepare(
        "INSERT INTO meta (key, value) VALUES ('schema_version', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
      ).run(String(migration.version));
    }).immediate();
  }
}
