import type Database from "better-sqlite3";
import type { ListDeliveriesQuery, ListEntriesQuery, SubagentStatus } from "../types.js";

/** The SQL of every fixed statement of the store. */
const SQL = {
  begin: "BEGIN IMMEDIATE",
  commit: "COMMIT",
  rollback: "ROLLBACK",
  getEntry: "SELECT data FROM entries WHERE key = ?",
  entriesBySessionId: "SELECT data FROM entries WHERE session_id = ?",
  entriesByLabel: "SELECT data FROM entries WHERE label = ?",
  // A new entry, or the common write of an existing one: only `updated_at` and the record change. Setting only
  // those columns spares the indexes on the others (a random page each, for `session_id`); when another column
  // changed the upsert changes nothing (0 rows) and `replaceEntry` writes them all.
  putEntry: `INSERT INTO entries (key, session_id, agent_id, kind, updated_at, spawned_by, label, display_name, archived, data)
       VALUES (@key, @sessionId, @agentId, @kind, @updatedAt, @spawnedBy, @label, @displayName, @archived, @data)
       ON CONFLICT (key) DO UPDATE SET updated_at = excluded.updated_at, data = excluded.data
       WHERE entries.session_id = excluded.session_id AND entries.agent_id = excluded.agent_id
         AND entries.kind = excluded.kind AND entries.spawned_by IS excluded.spawned_by
         AND entries.label IS excluded.label AND entries.display_name IS excluded.display_name
         AND entries.archived = excluded.archived`,
  // The common write of an entry the writer has cached: only `updated_at` and the record change.
  touchEntry: "UPDATE entries SET updated_at = ?, data = ? WHERE key = ?",
  replaceEntry: `UPDATE entries SET session_id = @sessionId, agent_id = @agentId, kind = @kind, updated_at = @updatedAt,
         spawned_by = @spawnedBy, label = @label, display_name = @displayName, archived = @archived, data = @data
       WHERE key = @key`,
  deleteEntry: "DELETE FROM entries WHERE key = ?",
  deleteMessages: "DELETE FROM messages WHERE session_key = ?",
  /** The session's indexed messages are to go (the search indexer drops them, then the row: see schema version 5). */
  forgetSearch:
    "INSERT INTO search_forget (key, n) VALUES (?, 1) ON CONFLICT (key) DO UPDATE SET n = search_forget.n + 1",
  countEntries: "SELECT COUNT(*) AS n FROM entries",
  lastSeq: "SELECT seq FROM messages WHERE session_key = ? ORDER BY seq DESC LIMIT 1",
  insertMessage: "INSERT INTO messages (session_key, seq, data) VALUES (?, ?, ?)",
  readMessages: "SELECT seq, data FROM messages WHERE session_key = ? AND seq < ? ORDER BY seq DESC LIMIT ?",
  // Sequence numbers are contiguous from 1, so the last one is the count (an index seek, not a scan).
  countMessages: "SELECT COALESCE(MAX(seq), 0) AS n FROM messages WHERE session_key = ?",
  // A run keeps its idempotency key: later writes leave that (random) index alone. Should the key differ, the
  // upsert changes nothing (0 rows) and `replaceRun` writes every column.
  putRun: `INSERT INTO runs (run_id, status, idempotency_key, follow_up_pending, owner, root_run_id, data)
       VALUES (@runId, @status, @idempotencyKey, @followUpPending, @owner, @rootRunId, @data)
       ON CONFLICT (run_id) DO UPDATE SET status = excluded.status, follow_up_pending = excluded.follow_up_pending,
         owner = excluded.owner, data = excluded.data
       WHERE runs.idempotency_key IS excluded.idempotency_key`,
  replaceRun: `UPDATE runs SET status = @status, idempotency_key = @idempotencyKey, follow_up_pending = @followUpPending,
         owner = @owner, root_run_id = @rootRunId, data = @data
       WHERE run_id = @runId`,
  // The end of a run, fenced: written only while the run is under way and still the caller's.
  endRun: `UPDATE runs SET status = @status, follow_up_pending = @followUpPending, owner = @owner, data = @data
       WHERE run_id = @runId AND status IN ('queued', 'running') AND owner IS @expectedOwner`,
  getRun: "SELECT data FROM runs WHERE run_id = ?",
  runByKey: "SELECT data FROM runs WHERE idempotency_key = ?",
  // One JSON array parameter, whatever the number of statuses: the SQL text never depends on it.
  runsByStatus: "SELECT data FROM runs WHERE status IN (SELECT value FROM json_each(?))",
  pendingFollowUps: "SELECT data FROM runs WHERE follow_up_pending = 1",
  // A root is found by its id; the others by runs_root (schema version 3), which holds only runs that have a root.
  runTree: `SELECT data FROM runs WHERE run_id = @root OR root_run_id = @root
       ORDER BY run_id <> @root, json_extract(data, '$.createdAt'), run_id LIMIT @limit`,
  insertDelivery: `INSERT INTO deliveries (id, idempotency_key, session_key, run_id, status, next_attempt_at, created_at,
         lease_owner, lease_until, data)
       VALUES (@id, @idempotencyKey, @sessionKey, @runId, @status, @nextAttemptAt, @createdAt,
         @leaseOwner, @leaseUntil, @data)
       ON CONFLICT (idempotency_key) DO NOTHING`,
  putDelivery: `INSERT INTO deliveries (id, idempotency_key, session_key, run_id, status, next_attempt_at, created_at,
         lease_owner, lease_until, data)
       VALUES (@id, @idempotencyKey, @sessionKey, @runId, @status, @nextAttemptAt, @createdAt,
         @leaseOwner, @leaseUntil, @data)
       ON CONFLICT (id) DO UPDATE SET status = excluded.status, next_attempt_at = excluded.next_attempt_at,
         lease_owner = excluded.lease_owner, lease_until = excluded.lease_until, data = excluded.data`,
  getDelivery: "SELECT data FROM deliveries WHERE id = ?",
  deliveryByKey: "SELECT data FROM deliveries WHERE idempotency_key = ?",
  queuedDeliveries:
    "SELECT data FROM deliveries WHERE status = 'queued' ORDER BY next_attempt_at ASC LIMIT ?",
  // One statement, so claiming is atomic; the result is sorted by the caller (RETURNING has no order).
  claimDeliveries: `UPDATE deliveries SET lease_owner = @owner, lease_until = @until,
         data = json_set(data, '$.leaseOwner', @owner, '$.leaseUntil', @until)
       WHERE id IN (
         SELECT id FROM deliveries
         WHERE status = 'queued' AND next_attempt_at <= @now AND (lease_until IS NULL OR lease_until <= @now)
         ORDER BY next_attempt_at ASC, id ASC LIMIT @limit)
       RETURNING data`,
  putRoute: `INSERT INTO routes (session_key, channel, account_id, updated_at, data) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (session_key, channel, account_id) DO UPDATE SET updated_at = excluded.updated_at, data = excluded.data`,
  listRoutes: "SELECT data FROM routes WHERE session_key = ? ORDER BY updated_at DESC",
  putSubagent: `INSERT INTO subagents (child_key, requester_key, status, created_at, archive_at, data) VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT (child_key) DO UPDATE SET requester_key = excluded.requester_key, status = excluded.status,
         archive_at = excluded.archive_at, data = excluded.data`,
  getSubagent: "SELECT data FROM subagents WHERE child_key = ?",
  archiveDue:
    "SELECT data FROM subagents WHERE archive_at IS NOT NULL AND archive_at <= ? ORDER BY archive_at ASC",
  nextArchive: "SELECT MIN(archive_at) AS at FROM subagents WHERE archive_at IS NOT NULL",
  putBinding: `INSERT INTO thread_bindings (channel, account_id, thread_id, session_key, data) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (channel, account_id, thread_id) DO UPDATE SET session_key = excluded.session_key, data = excluded.data`,
  getBinding: "SELECT data FROM thread_bindings WHERE channel = ? AND account_id = ? AND thread_id = ?",
  bindingsBySession: "SELECT data FROM thread_bindings WHERE session_key = ?",
  allBindings: "SELECT data FROM thread_bindings",
  deleteBinding: "DELETE FROM thread_bindings WHERE channel = ? AND account_id = ? AND thread_id = ?",
  // Takes a free or expired lease, or renews the caller's own (keeping when it was first taken).
  acquireLease: `INSERT INTO leases (name, owner, acquired_at, expires_at, data) VALUES (@name, @owner, @now, @expiresAt, @data)
       ON CONFLICT (name) DO UPDATE SET
         acquired_at = CASE WHEN leases.owner = excluded.owner THEN leases.acquired_at ELSE excluded.acquired_at END,
         data = CASE WHEN leases.owner = excluded.owner THEN coalesce(excluded.data, leases.data) ELSE excluded.data END,
         owner = excluded.owner, expires_at = excluded.expires_at
       WHERE leases.owner = excluded.owner OR leases.expires_at <= @lapsedBefore
       RETURNING name, owner, acquired_at, expires_at, data`,
  renewLease: "UPDATE leases SET expires_at = ? WHERE name = ? AND owner = ?",
  releaseLease: "DELETE FROM leases WHERE name = ? AND owner = ?",
  getLease: "SELECT name, owner, acquired_at, expires_at, data FROM leases WHERE name = ?",
  listLeases:
    "SELECT name, owner, acquired_at, expires_at, data FROM leases WHERE substr(name, 1, length(@prefix)) = @prefix ORDER BY name",
} as const;

export type Statements = { [K in keyof typeof SQL]: Database.Statement };

/** Every fixed statement, prepared once per connection. */
export function prepareStatements(db: Database.Database): Statements {
  const prepared: Record<string, Database.Statement> = {};
  for (const [name, sql] of Object.entries(SQL)) prepared[name] = db.prepare(sql);
  return prepared as Statements;
}

/**
 * The list queries whose optional filters change the SQL. Array filters are one JSON parameter each, so the
 * text depends only on which filters are present: at most 2^11 entry lists (nine filters, two orders, records or
 * keys) + 2^3 delivery lists + 2^2 sub-agent lists = 2,060 cached statements per connection, whatever the callers
 * pass.
 */
export interface ListStatements {
  size(): number;
  /** The matching entries' `data`, or (`"key"`) only their keys, plucked: the index answers those alone. */
  entries(query: ListEntriesQuery, column?: "data" | "key"): PreparedQuery;
  deliveries(query: ListDeliveriesQuery): PreparedQuery;
  subagents(query: {
    requesterKey?: string | undefined;
    statuses?: readonly SubagentStatus[] | undefined;
  }): PreparedQuery;
}

export interface PreparedQuery {
  stmt: Database.Statement;
  params: unknown[];
}

/**
 * Statements prepared on first use and kept, by their SQL text: for queries whose text varies with the filters
 * present (a bounded number of shapes, never the values).
 */
export function statementCache(db: Database.Database): {
  statement: (sql: string) => Database.Statement;
  size: () => number;
} {
  const cache = new Map<string, Database.Statement>();
  const statement = (sql: string) => {
    let stmt = cache.get(sql);
    if (stmt === undefined) {
      stmt = db.prepare(sql);
      cache.set(sql, stmt);
    }
    return stmt;
  };
  return { statement, size: () => cache.size };
}

export function createListStatements(db: Database.Database): ListStatements {
  const { statement, size } = statementCache(db);
  const where = (clauses: string[]) => (clauses.length > 0 ? `WHERE ${clauses.join(" AND ")}` : "");

  return {
    size,
    entries(query, column = "data") {
      const clauses: string[] = [];
      const params: unknown[] = [];
      // In key order, `+` keeps SQLite from picking an index on `archived` (every live row) and sorting all it holds:
      // the walk goes through the primary key's index from its cursor, reading about `limit` rows.
      if (!query.includeArchived) clauses.push(query.order === "key" ? "+archived = 0" : "archived = 0");
      if (query.kinds !== undefined) {
        clauses.push("kind IN (SELECT value FROM json_each(?))");
        params.push(JSON.stringify(query.kinds));
      }
      if (query.agentIds !== undefined) {
        clauses.push("agent_id IN (SELECT value FROM json_each(?))");
        params.push(JSON.stringify(query.agentIds));
      }
      if (query.spawnedBy !== undefined) {
        clauses.push("spawned_by = ?");
        params.push(query.spawnedBy);
      }
      if (query.label !== undefined) {
        clauses.push("label = ?");
        params.push(query.label);
      }
      if (query.updatedSince !== undefined) {
        clauses.push("updated_at >= ?");
        params.push(query.updatedSince);
      }
      if (query.search !== undefined) {
        clauses.push(
          "instr(lower(key || ' ' || coalesce(label, '') || ' ' || coalesce(display_name, '')), ?) > 0",
        );
        params.push(query.search.toLowerCase());
      }
      if (query.after !== undefined) {
        // Written so the index range starts at the cursor (an OR alone would rescan from the newest row).
        clauses.push("updated_at <= ? AND (updated_at < ? OR key > ?)");
        params.push(query.after.updatedAt, query.after.updatedAt, query.after.key);
      }
      if (query.afterKey !== undefined) {
        clauses.push("key > ?");
        params.push(query.afterKey);
      }
      params.push(Math.max(0, Math.floor(query.limit)), Math.max(0, Math.floor(query.offset ?? 0)));
      const order = query.order === "key" ? "key ASC" : "updated_at DESC, key ASC";
      const sql = `SELECT ${column} FROM entries ${where(clauses)} ORDER BY ${order} LIMIT ? OFFSET ?`;
      const stmt = statement(sql);
      if (column === "key") stmt.pluck();
      return { stmt, params };
    },
    deliveries(query) {
      const clauses: string[] = [];
      const params: unknown[] = [];
      if (query.sessionKey !== undefined) {
        clauses.push("session_key = ?");
        params.push(query.sessionKey);
      }
      if (query.runId !== undefined) {
        clauses.push("run_id = ?");
        params.push(query.runId);
      }
      if (query.status !== undefined) {
        clauses.push("status = ?");
        params.push(query.status);
      }
      params.push(query.limit ?? 100);
      const sql = `SELECT data FROM deliveries ${where(clauses)} ORDER BY created_at DESC, id DESC LIMIT ?`;
      return { stmt: statement(sql), params };
    },
    subagents(query) {
      const clauses: string[] = [];
      const params: unknown[] = [];
      if (query.requesterKey !== undefined) {
        clauses.push("requester_key = ?");
        params.push(query.requesterKey);
      }
      if (query.statuses !== undefined) {
        clauses.push("status IN (SELECT value FROM json_each(?))");
        params.push(JSON.stringify(query.statuses));
      }
      const sql = `SELECT data FROM subagents ${where(clauses)} ORDER BY created_at ASC`;
      return { stmt: statement(sql), params };
    },
  };
}
