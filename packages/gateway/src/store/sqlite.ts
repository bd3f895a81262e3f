import { mkdirSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { SessionsError, type TranscriptMessage } from "@sessions/core";
import Database from "better-sqlite3";
import type {
  DeliveryRecord,
  ListEntriesQuery,
  RouteRecord,
  RunRecord,
  SessionStore,
  StoredEntry,
  StoredMessage,
  SubagentRecord,
  ThreadBindingRecord,
} from "./types.js";

export interface SqliteStoreOptions {
  /** The database file (created with its folder if missing). `":memory:"` for a private in-memory database. */
  path: string;
  /**
   * `normal` (default) survives a killed process, which is what crash safety here means; `full` also survives
   * power loss at the cost of an fsync per write.
   */
  synchronous?: "normal" | "full";
}

const SCHEMA_VERSION = 1;

const SCHEMA = `
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

type Row = { data: string };
const parse = <T>(row: Row | undefined): T | undefined =>
  row === undefined ? undefined : (JSON.parse(row.data) as T);
const parseAll = <T>(rows: Row[]): T[] => rows.map((r) => JSON.parse(r.data) as T);

/** The default store: one SQLite file (WAL) holding entries, transcripts, runs, the outbox, routes and sub-agents. */
export function createSqliteStore(options: SqliteStoreOptions): SessionStore {
  if (typeof options?.path !== "string" || options.path.trim() === "") {
    throw new SessionsError("invalid_config", 'createSqliteStore: path must be a file path or ":memory:"', {
      field: "path",
    });
  }
  const file = options.path === ":memory:" ? ":memory:" : resolve(options.path);
  if (file !== ":memory:") mkdirSync(dirname(file), { recursive: true });
  let db: Database.Database;
  try {
    db = new Database(file);
  } catch (cause) {
    throw new SessionsError(
      "unavailable",
      `Cannot open SQLite store at ${file}: ${(cause as Error).message}`,
      {
        field: "path",
        cause,
      },
    );
  }
  db.pragma("journal_mode = WAL");
  db.pragma(`synchronous = ${options.synchronous === "full" ? "FULL" : "NORMAL"}`);
  db.pragma("busy_timeout = 5000");
  db.pragma("foreign_keys = OFF");
  db.exec(SCHEMA);
  const runColumns = db.prepare("PRAGMA table_info(runs)").all() as { name: string }[];
  if (!runColumns.some((c) => c.name === "follow_up_pending")) {
    db.exec("ALTER TABLE runs ADD COLUMN follow_up_pending INTEGER NOT NULL DEFAULT 0");
  }
  db.exec(
    "CREATE INDEX IF NOT EXISTS runs_follow_up ON runs (follow_up_pending) WHERE follow_up_pending = 1",
  );
  const version = db.prepare("SELECT value FROM meta WHERE key = 'schema_version'").get() as
    | { value: string }
    | undefined;
  if (version === undefined) {
    db.prepare("INSERT INTO meta (key, value) VALUES ('schema_version', ?)").run(String(SCHEMA_VERSION));
  } else if (Number(version.value) > SCHEMA_VERSION) {
    db.close();
    throw new SessionsError(
      "unavailable",
      `SQLite store at ${file} has schema version ${version.value}; this @sessions/gateway understands up to ${SCHEMA_VERSION}`,
      { field: "path" },
    );
  }

  const s = {
    getEntry: db.prepare("SELECT data FROM entries WHERE key = ?"),
    entriesBySessionId: db.prepare("SELECT data FROM entries WHERE session_id = ?"),
    entriesByLabel: db.prepare("SELECT data FROM entries WHERE label = ?"),
    putEntry: db.prepare(
      `INSERT INTO entries (key, session_id, agent_id, kind, updated_at, spawned_by, label, display_name, archived, data)
       VALUES (@key, @sessionId, @agentId, @kind, @updatedAt, @spawnedBy, @label, @displayName, @archived, @data)
       ON CONFLICT (key) DO UPDATE SET session_id = excluded.session_id, agent_id = excluded.agent_id,
         kind = excluded.kind, updated_at = excluded.updated_at, spawned_by = excluded.spawned_by,
         label = excluded.label, display_name = excluded.display_name, archived = excluded.archived, data = excluded.data`,
    ),
    deleteEntry: db.prepare("DELETE FROM entries WHERE key = ?"),
    deleteMessages: db.prepare("DELETE FROM messages WHERE session_key = ?"),
    countEntries: db.prepare("SELECT COUNT(*) AS n FROM entries"),
    lastSeq: db.prepare("SELECT seq FROM messages WHERE session_key = ? ORDER BY seq DESC LIMIT 1"),
    insertMessage: db.prepare("INSERT INTO messages (session_key, seq, data) VALUES (?, ?, ?)"),
    readMessages: db.prepare(
      "SELECT seq, data FROM messages WHERE session_key = ? AND seq < ? ORDER BY seq DESC LIMIT ?",
    ),
    // Sequence numbers are contiguous from 1, so the last one is the count (an index seek, not a scan).
    countMessages: db.prepare("SELECT COALESCE(MAX(seq), 0) AS n FROM messages WHERE session_key = ?"),
    putRun: db.prepare(
      `INSERT INTO runs (run_id, status, idempotency_key, follow_up_pending, data)
       VALUES (@runId, @status, @idempotencyKey, @followUpPending, @data)
       ON CONFLICT (run_id) DO UPDATE SET status = excluded.status, idempotency_key = excluded.idempotency_key,
         follow_up_pending = excluded.follow_up_pending, data = excluded.data`,
    ),
    getRun: db.prepare("SELECT data FROM runs WHERE run_id = ?"),
    runByKey: db.prepare("SELECT data FROM runs WHERE idempotency_key = ?"),
    pendingFollowUps: db.prepare("SELECT data FROM runs WHERE follow_up_pending = 1"),
    insertDelivery: db.prepare(
      `INSERT INTO deliveries (id, idempotency_key, session_key, run_id, status, next_attempt_at, created_at, data)
       VALUES (@id, @idempotencyKey, @sessionKey, @runId, @status, @nextAttemptAt, @createdAt, @data)
       ON CONFLICT (idempotency_key) DO NOTHING`,
    ),
    putDelivery: db.prepare(
      `INSERT INTO deliveries (id, idempotency_key, session_key, run_id, status, next_attempt_at, created_at, data)
       VALUES (@id, @idempotencyKey, @sessionKey, @runId, @status, @nextAttemptAt, @createdAt, @data)
       ON CONFLICT (id) DO UPDATE SET status = excluded.status, next_attempt_at = excluded.next_attempt_at, data = excluded.data`,
    ),
    getDelivery: db.prepare("SELECT data FROM deliveries WHERE id = ?"),
    deliveryByKey: db.prepare("SELECT data FROM deliveries WHERE idempotency_key = ?"),
    queuedDeliveries: db.prepare(
      "SELECT data FROM deliveries WHERE status = 'queued' ORDER BY next_attempt_at ASC LIMIT ?",
    ),
    putRoute: db.prepare(
      `INSERT INTO routes (session_key, channel, account_id, updated_at, data) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (session_key, channel, account_id) DO UPDATE SET updated_at = excluded.updated_at, data = excluded.data`,
    ),
    listRoutes: db.prepare("SELECT data FROM routes WHERE session_key = ? ORDER BY updated_at DESC"),
    putSubagent: db.prepare(
      `INSERT INTO subagents (child_key, requester_key, status, created_at, archive_at, data) VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT (child_key) DO UPDATE SET requester_key = excluded.requester_key, status = excluded.status,
         archive_at = excluded.archive_at, data = excluded.data`,
    ),
    getSubagent: db.prepare("SELECT data FROM subagents WHERE child_key = ?"),
    archiveDue: db.prepare(
      "SELECT data FROM subagents WHERE archive_at IS NOT NULL AND archive_at <= ? ORDER BY archive_at ASC",
    ),
    nextArchive: db.prepare("SELECT MIN(archive_at) AS at FROM subagents WHERE archive_at IS NOT NULL"),
    putBinding: db.prepare(
      `INSERT INTO thread_bindings (channel, account_id, thread_id, session_key, data) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (channel, account_id, thread_id) DO UPDATE SET session_key = excluded.session_key, data = excluded.data`,
    ),
    getBinding: db.prepare(
      "SELECT data FROM thread_bindings WHERE channel = ? AND account_id = ? AND thread_id = ?",
    ),
    bindingsBySession: db.prepare("SELECT data FROM thread_bindings WHERE session_key = ?"),
    allBindings: db.prepare("SELECT data FROM thread_bindings"),
    deleteBinding: db.prepare(
      "DELETE FROM thread_bindings WHERE channel = ? AND account_id = ? AND thread_id = ?",
    ),
  };

  const append = db.transaction((sessionKey: string, message: TranscriptMessage): StoredMessage => {
    const last = s.lastSeq.get(sessionKey) as { seq: number } | undefined;
    const stored = { ...message, seq: (last?.seq ?? 0) + 1 } as StoredMessage;
    s.insertMessage.run(sessionKey, stored.seq, JSON.stringify(stored));
    return stored;
  });

  const deleteEntryTx = db.transaction((key: string, transcript: boolean) => {
    const existed = s.deleteEntry.run(key).changes > 0;
    if (transcript) s.deleteMessages.run(key);
    return existed;
  });

  const enqueueTx = db.transaction((record: DeliveryRecord) => {
    const inserted = s.insertDelivery.run(deliveryParams(record)).changes > 0;
    if (inserted) return { record, created: true };
    return {
      record: parse<DeliveryRecord>(s.deliveryByKey.get(record.idempotencyKey) as Row) as DeliveryRecord,
      created: false,
    };
  });

  const listCache = new Map<string, Database.Statement>();
  function listStatement(sql: string): Database.Statement {
    let stmt = listCache.get(sql);
    if (stmt === undefined) {
      stmt = db.prepare(sql);
      listCache.set(sql, stmt);
    }
    return stmt;
  }

  const listDeliveryCache = new Map<string, Database.Statement>();

  let closed = false;
  const open = () => {
    if (closed) throw new SessionsError("unavailable", "The SQLite store is closed");
  };

  return {
    kind: "sqlite",
    transcriptPath(sessionId) {
      return file === ":memory:" ? undefined : `${join(dirname(file), "transcripts", sessionId)}.jsonl`;
    },
    async getEntry(key) {
      open();
      return parse<StoredEntry>(s.getEntry.get(key) as Row | undefined);
    },
    async findEntriesBySessionId(sessionId) {
      open();
      return parseAll<StoredEntry>(s.entriesBySessionId.all(sessionId) as Row[]);
    },
    async findEntriesByLabel(label) {
      open();
      return parseAll<StoredEntry>(s.entriesByLabel.all(label) as Row[]);
    },
    async putEntry(entry) {
      open();
      s.putEntry.run({
        key: entry.key,
        sessionId: entry.sessionId,
        agentId: entry.agentId,
        kind: entry.kind,
        updatedAt: entry.updatedAt,
        spawnedBy: entry.spawnedBy ?? null,
        label: entry.label ?? null,
        displayName: entry.displayName ?? null,
        archived: entry.archivedAt === undefined ? 0 : 1,
        data: JSON.stringify(entry),
      });
    },
    async deleteEntry(key, options) {
      open();
      return deleteEntryTx(key, options?.transcript !== false);
    },
    async listEntries(query: ListEntriesQuery) {
      open();
      const where: string[] = [];
      const params: unknown[] = [];
      if (!query.includeArchived) where.push("archived = 0");
      if (query.kinds !== undefined) {
        if (query.kinds.length === 0) return [];
        where.push(`kind IN (${query.kinds.map(() => "?").join(", ")})`);
        params.push(...query.kinds);
      }
      if (query.agentIds !== undefined) {
        if (query.agentIds.length === 0) return [];
        where.push(`agent_id IN (${query.agentIds.map(() => "?").join(", ")})`);
        params.push(...query.agentIds);
      }
      if (query.spawnedBy !== undefined) {
        where.push("spawned_by = ?");
        params.push(query.spawnedBy);
      }
      if (query.label !== undefined) {
        where.push("label = ?");
        params.push(query.label);
      }
      if (query.updatedSince !== undefined) {
        where.push("updated_at >= ?");
        params.push(query.updatedSince);
      }
      if (query.search !== undefined) {
        where.push(
          "instr(lower(key || ' ' || coalesce(label, '') || ' ' || coalesce(display_name, '')), ?) > 0",
        );
        params.push(query.search.toLowerCase());
      }
      if (query.after !== undefined) {
        // Written so the index range starts at the cursor (an OR alone would rescan from the newest row).
        where.push("updated_at <= ? AND (updated_at < ? OR key > ?)");
        params.push(query.after.updatedAt, query.after.updatedAt, query.after.key);
      }
      const sql = `SELECT data FROM entries ${where.length > 0 ? `WHERE ${where.join(" AND ")}` : ""} ORDER BY updated_at DESC, key ASC LIMIT ? OFFSET ?`;
      params.push(Math.max(0, Math.floor(query.limit)), Math.max(0, Math.floor(query.offset ?? 0)));
      return parseAll<StoredEntry>(listStatement(sql).all(...params) as Row[]);
    },
    async countEntries() {
      open();
      return (s.countEntries.get() as { n: number }).n;
    },
    async appendMessage(sessionKey, message) {
      open();
      return append(sessionKey, message);
    },
    async readMessages(sessionKey, { limit, beforeSeq }) {
      open();
      const rows = s.readMessages.all(
        sessionKey,
        beforeSeq ?? Number.MAX_SAFE_INTEGER,
        Math.max(0, limit),
      ) as Row[];
      rows.reverse();
      return parseAll<StoredMessage>(rows);
    },
    async countMessages(sessionKey) {
      open();
      return (s.countMessages.get(sessionKey) as { n: number }).n;
    },
    async putRun(run: RunRecord) {
      open();
      s.putRun.run({
        runId: run.runId,
        status: run.status,
        idempotencyKey: run.idempotencyKey ?? null,
        followUpPending: run.followUp !== undefined && run.followUpDone !== true ? 1 : 0,
        data: JSON.stringify(run),
      });
    },
    async getRun(runId) {
      open();
      return parse<RunRecord>(s.getRun.get(runId) as Row | undefined);
    },
    async findRunByIdempotencyKey(idempotencyKey) {
      open();
      return parse<RunRecord>(s.runByKey.get(idempotencyKey) as Row | undefined);
    },
    async listRunsByStatus(statuses) {
      open();
      if (statuses.length === 0) return [];
      const sql = `SELECT data FROM runs WHERE status IN (${statuses.map(() => "?").join(", ")})`;
      return parseAll<RunRecord>(listStatement(sql).all(...statuses) as Row[]);
    },
    async listPendingFollowUps() {
      open();
      return parseAll<RunRecord>(s.pendingFollowUps.all() as Row[]);
    },
    async enqueueDelivery(record) {
      open();
      return enqueueTx(record);
    },
    async putDelivery(record) {
      open();
      s.putDelivery.run(deliveryParams(record));
    },
    async getDelivery(id) {
      open();
      return parse<DeliveryRecord>(s.getDelivery.get(id) as Row | undefined);
    },
    async listDeliveries(query) {
      open();
      const where: string[] = [];
      const params: unknown[] = [];
      if (query.sessionKey !== undefined) {
        where.push("session_key = ?");
        params.push(query.sessionKey);
      }
      if (query.runId !== undefined) {
        where.push("run_id = ?");
        params.push(query.runId);
      }
      if (query.status !== undefined) {
        where.push("status = ?");
        params.push(query.status);
      }
      const sql = `SELECT data FROM deliveries ${where.length > 0 ? `WHERE ${where.join(" AND ")}` : ""} ORDER BY created_at DESC, id DESC LIMIT ?`;
      let stmt = listDeliveryCache.get(sql);
      if (stmt === undefined) {
        stmt = db.prepare(sql);
        listDeliveryCache.set(sql, stmt);
      }
      params.push(query.limit ?? 100);
      return parseAll<DeliveryRecord>(stmt.all(...params) as Row[]);
    },
    async listQueuedDeliveries(limit) {
      open();
      return parseAll<DeliveryRecord>(s.queuedDeliveries.all(limit) as Row[]);
    },
    async putRoute(route: RouteRecord) {
      open();
      s.putRoute.run(
        route.sessionKey,
        route.channel,
        route.accountId,
        route.updatedAt,
        JSON.stringify(route),
      );
    },
    async listRoutes(sessionKey) {
      open();
      return parseAll<RouteRecord>(s.listRoutes.all(sessionKey) as Row[]);
    },
    async putSubagent(record: SubagentRecord) {
      open();
      s.putSubagent.run(
        record.childKey,
        record.requesterKey,
        record.status,
        record.createdAt,
        record.archiveAt ?? null,
        JSON.stringify(record),
      );
    },
    async getSubagent(childKey) {
      open();
      return parse<SubagentRecord>(s.getSubagent.get(childKey) as Row | undefined);
    },
    async listSubagents(query) {
      open();
      const where: string[] = [];
      const params: unknown[] = [];
      if (query.requesterKey !== undefined) {
        where.push("requester_key = ?");
        params.push(query.requesterKey);
      }
      if (query.statuses !== undefined) {
        if (query.statuses.length === 0) return [];
        where.push(`status IN (${query.statuses.map(() => "?").join(", ")})`);
        params.push(...query.statuses);
      }
      const sql = `SELECT data FROM subagents ${where.length > 0 ? `WHERE ${where.join(" AND ")}` : ""} ORDER BY created_at ASC`;
      return parseAll<SubagentRecord>(listStatement(sql).all(...params) as Row[]);
    },
    async listArchiveDue(now) {
      open();
      return parseAll<SubagentRecord>(s.archiveDue.all(now) as Row[]);
    },
    async nextArchiveAt() {
      open();
      const row = s.nextArchive.get() as { at: number | null };
      return row.at ?? undefined;
    },
    async putThreadBinding(record: ThreadBindingRecord) {
      open();
      s.putBinding.run(
        record.channel,
        record.accountId,
        record.threadId,
        record.sessionKey,
        JSON.stringify(record),
      );
    },
    async getThreadBinding(channel, accountId, threadId) {
      open();
      return parse<ThreadBindingRecord>(s.getBinding.get(channel, accountId, threadId) as Row | undefined);
    },
    async listThreadBindings(query) {
      open();
      const rows =
        query?.sessionKey === undefined ? s.allBindings.all() : s.bindingsBySession.all(query.sessionKey);
      return parseAll<ThreadBindingRecord>(rows as Row[]);
    },
    async deleteThreadBinding(channel, accountId, threadId) {
      open();
      return s.deleteBinding.run(channel, accountId, threadId).changes > 0;
    },
    async close() {
      if (closed) return;
      closed = true;
      db.close();
    },
  };
}

function deliveryParams(record: DeliveryRecord) {
  return {
    id: record.id,
    idempotencyKey: record.idempotencyKey,
    sessionKey: record.sessionKey,
    runId: record.runId ?? null,
    status: record.status,
    nextAttemptAt: record.nextAttemptAt,
    createdAt: record.createdAt,
    data: JSON.stringify(record),
  };
}
