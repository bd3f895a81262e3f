import type { TranscriptMessage } from "@sessions/core";
import type {
  DeliveryRecord,
  ListDeliveriesQuery,
  ListEntriesQuery,
  RouteRecord,
  RunRecord,
  RunStatus,
  StoredEntry,
  StoredMessage,
  SubagentRecord,
  SubagentStatus,
  ThreadBindingRecord,
} from "@sessions/gateway";
import type { KnownTails } from "./known-tails.js";
import { deliveriesQuery, entriesQuery, subagentsQuery } from "./lists.js";
import { createSearchOperations } from "./search.js";
import type { Db } from "./units.js";

type DataRow = { data: string };
export type DeliveryRow = { data: string; lease_owner: string | null; lease_until: string | number | null };

const parse = <T>(row: DataRow | undefined): T | undefined =>
  row === undefined ? undefined : (JSON.parse(row.data) as T);
const parseAll = <T>(rows: DataRow[]): T[] => rows.map((row) => JSON.parse(row.data) as T);

/** The lease columns are the truth about a delivery's claim (claims update only them). */
export function toDelivery(row: DeliveryRow): DeliveryRecord {
  const record = JSON.parse(row.data) as DeliveryRecord;
  delete record.leaseOwner;
  delete record.leaseUntil;
  if (row.lease_owner !== null) record.leaseOwner = row.lease_owner;
  if (row.lease_until !== null) record.leaseUntil = Number(row.lease_until);
  return record;
}

/**
 * A run's `rootRunId` as its JSON text spells it (escapes and all), read with a pattern rather than a cast to jsonb,
 * which would fail on the escaped NUL Postgres's JSON types refuse. Inside a JSON string every quote is escaped, so
 * only the key matches. Part of migration 3's index `runs_root`: a released migration never changes, nor this.
 */
export const ROOT_OF_RUN = `substring(data from '"rootRunId":"((?:[^"\\\\]|\\\\.)*)"')`;

/** Which runs `runs_root` holds: those that have a root (a tree's first run, most runs, costs the index nothing). */
export const HAS_ROOT = `data LIKE '%"rootRunId":"%'`;

/** Names of the per-record locks units take (see `Db.lock`); one session lock covers entry and transcript. */
export const lockName = {
  session: (key: string) => `s:${key}`,
  idempotency: (key: string) => `i:${key}`,
  run: (runId: string) => `r:${runId}`,
  deliveryKey: (key: string) => `k:${key}`,
  delivery: (id: string) => `d:${id}`,
  subagent: (childKey: string) => `a:${childKey}`,
  binding: (channel: string, accountId: string, threadId: string) =>
    `b:${channel}\u001f${accountId}\u001f${threadId}`,
};

/** Store operations that must be atomic on their own (several statements, or a change to publish). */
export const ATOMIC_OPS = new Set([
  "putEntry",
  "deleteEntry",
  "putRun",
  "endRun",
  "enqueueDelivery",
  "putDelivery",
  "finishDelivery",
] as const);

/**
 * The store's operations as SQL on the tables of schema `s` (quoted). Each takes the `Db` it runs on: a unit's
 * connection (then reads and writes of one record take that record's lock) or the pool.
 */
/** `tails`: what this process knows of each transcript's newest messages (fed with commits, read for windows). */
export function createOperations(s: string, tails: KnownTails) {
  const search = createSearchOperations(s);
  const deliveryColumns = "data, lease_owner, lease_until";
  const deliveryParams = (r: DeliveryRecord) => [
    r.id,
    r.idempotencyKey,
    r.sessionKey,
    r.runId ?? null,
    r.status,
    r.nextAttemptAt,
    r.createdAt,
    r.leaseOwner ?? null,
    r.leaseUntil ?? null,
    JSON.stringify(r),
  ];

  return {
    async getEntry(db: Db, key: string): Promise<StoredEntry | undefined> {
      await db.lock(lockName.session(key));
      const { rows } = await db.query<DataRow>(`SELECT data FROM ${s}.entries WHERE key = $1`, [key]);
      return parse<StoredEntry>(rows[0]);
    },
    async findEntriesBySessionId(db: Db, sessionId: string): Promise<StoredEntry[]> {
      const { rows } = await db.query<DataRow>(`SELECT data FROM ${s}.entries WHERE session_id = $1`, [
        sessionId,
      ]);
      return parseAll<StoredEntry>(rows);
    },
    async findEntriesByLabel(db: Db, label: string): Promise<StoredEntry[]> {
      const { rows } = await db.query<DataRow>(`SELECT data FROM ${s}.entries WHERE label = $1`, [label]);
      return parseAll<StoredEntry>(rows);
    },
    async putEntry(db: Db, entry: StoredEntry): Promise<void> {
      await db.lock(lockName.session(entry.key));
      await db.query(
        `INSERT INTO ${s}.entries (key, session_id, agent_id, kind, updated_at, spawned_by, label, display_name, archived, data)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
         ON CONFLICT (key) DO UPDATE SET session_id = excluded.session_id, agent_id = excluded.agent_id,
           kind = excluded.kind, updated_at = excluded.updated_at, spawned_by = excluded.spawned_by,
           label = excluded.label, display_name = excluded.display_name, archived = excluded.archived,
           data = excluded.data`,
        [
          entry.key,
          entry.sessionId,
          entry.agentId,
          entry.kind,
          entry.updatedAt,
          entry.spawnedBy ?? null,
          entry.label ?? null,
          entry.displayName ?? null,
          entry.archivedAt !== undefined,
          JSON.stringify(entry),
        ],
      );
      db.emit({ type: "entry", key: entry.key, op: "put" });
    },
    async deleteEntry(db: Db, key: string, options?: { transcript?: boolean | undefined }): Promise<boolean> {
      await db.lock(lockName.session(key));
      const deleted = await db.query(`DELETE FROM ${s}.entries WHERE key = $1`, [key]);
      let transcript = false;
      if (options?.transcript !== false) {
        await db.query(`DELETE FROM ${s}.messages WHERE session_key = $1`, [key]);
        const counter = await db.query(`DELETE FROM ${s}.transcripts WHERE session_key = $1`, [key]);
        transcript = (counter.rowCount ?? 0) > 0;
      }
      const existed = (deleted.rowCount ?? 0) > 0;
      // Announced for a transcript without an entry too: its sequence starts again at 1, and every gateway's known
      // tail of it must go (known-tails.ts).
      if (existed || transcript) db.emit({ type: "entry", key, op: "delete" });
      return existed;
    },
    async listEntries(db: Db, query: ListEntriesQuery): Promise<StoredEntry[]> {
      if (query.kinds?.length === 0 || query.agentIds?.length === 0) return [];
      const { text, values } = entriesQuery(s, query);
      return parseAll<StoredEntry>((await db.query<DataRow>(text, values)).rows);
    },
    async countEntries(db: Db): Promise<number> {
      const { rows } = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${s}.entries`);
      return rows[0]?.n ?? 0;
    },
    searchSessions: search.searchSessions,
    listAgentIds: search.listAgentIds,

    async appendMessage(db: Db, sessionKey: string, message: TranscriptMessage): Promise<StoredMessage> {
      const text = JSON.stringify(message);
      await db.lock(lockName.session(sessionKey));
      // One statement: the per-session counter row is the lock that keeps sequence numbers contiguous.
      const { rows } = await db.query<{ seq: string }>(
        `WITH next AS (
           INSERT INTO ${s}.transcripts (session_key, last_seq) VALUES ($1, 1)
           ON CONFLICT (session_key) DO UPDATE SET last_seq = ${s}.transcripts.last_seq + 1
           RETURNING last_seq)
         INSERT INTO ${s}.messages (session_key, seq, data) SELECT $1, last_seq, $2 FROM next RETURNING seq`,
        [sessionKey, text],
      );
      const stored = { ...message, seq: Number(rows[0]?.seq) } as StoredMessage;
      db.afterCommit(() => tails.add(sessionKey, stored.seq, text));
      return stored;
    },
    async readMessages(
      db: Db,
      sessionKey: string,
      options: { limit: number; beforeSeq?: number | undefined },
    ): Promise<StoredMessage[]> {
      const limit = Math.max(0, Math.floor(options.limit));
      if (limit === 0) return [];
      // A window that ends before a given message (a run's history) may be known already: no round trip.
      const known =
        options.beforeSeq === undefined ? undefined : tails.read(sessionKey, limit, options.beforeSeq);
      if (known !== undefined) return known;
      const values = [sessionKey, options.beforeSeq ?? Number.MAX_SAFE_INTEGER, limit];
      // Sequence numbers are contiguous from 1 up to the counter, so the window is a range of seq bounded on both
      // sides: whatever plan the statistics (or their absence) lead to, it reads at most `limit` rows. With
      // `seq < $2` alone, a planner that guesses the session small scans and sorts the whole transcript.
      let { rows } = await db.query<{ seq: string; data: string }>(
        `SELECT seq, data FROM ${s}.messages
          WHERE session_key = $1 AND seq < $2
            AND seq >= (SELECT least($2::bigint, last_seq + 1) - $3 FROM ${s}.transcripts WHERE session_key = $1)
          ORDER BY seq DESC LIMIT $3`,
        values,
      );
      // A short window that does not reach seq 1 means the sequence has gaps (or no counter): read it unbounded.
      const lowest = rows[rows.length - 1];
      if (rows.length < limit && (lowest === undefined || Number(lowest.seq) > 1)) {
        ({ rows } = await db.query<{ seq: string; data: string }>(
          `SELECT seq, data FROM ${s}.messages WHERE session_key = $1 AND seq < $2 ORDER BY seq DESC LIMIT $3`,
          values,
        ));
      }
      rows.reverse();
      // Contiguous (no gap): known from now on, once what it read is surely committed (a unit may roll back).
      const first = rows[0];
      if (first !== undefined && Number(rows[rows.length - 1]?.seq) - Number(first.seq) === rows.length - 1) {
        const texts = rows.map((row) => row.data);
        db.afterCommit(() => tails.fill(sessionKey, Number(first.seq), texts));
      }
      return rows.map((row) => ({ ...(JSON.parse(row.data) as TranscriptMessage), seq: Number(row.seq) }));
    },
    async countMessages(db: Db, sessionKey: string): Promise<number> {
      // Sequence numbers are contiguous from 1, so the counter is the count.
      const { rows } = await db.query<{ n: string }>(
        `SELECT last_seq AS n FROM ${s}.transcripts WHERE session_key = $1`,
        [sessionKey],
      );
      return rows[0] === undefined ? 0 : Number(rows[0].n);
    },

    async putRun(db: Db, run: RunRecord): Promise<void> {
      await db.lock(lockName.run(run.runId));
      await db.query(
        `INSERT INTO ${s}.runs (run_id, status, idempotency_key, follow_up_pending, owner, data)
         VALUES ($1, $2, $3, $4, $5, $6)
         ON CONFLICT (run_id) DO UPDATE SET status = excluded.status, idempotency_key = excluded.idempotency_key,
           follow_up_pending = excluded.follow_up_pending, owner = excluded.owner, data = excluded.data`,
        [
          run.runId,
          run.status,
          run.idempotencyKey ?? null,
          run.followUp !== undefined && run.followUpDone !== true,
          run.owner ?? null,
          JSON.stringify(run),
        ],
      );
      db.emit({ type: "run", runId: run.runId, sessionKey: run.sessionKey, status: run.status });
    },
    /** One conditional statement: a run that ended meanwhile (recovery) or changed hands is left as it is. */
    async endRun(db: Db, run: RunRecord, owner: string | undefined): Promise<boolean> {
      await db.lock(lockName.run(run.runId));
      const result = await db.query(
        `UPDATE ${s}.runs SET status = $2, follow_up_pending = $3, owner = $4, data = $5
         WHERE run_id = $1 AND status IN ('queued', 'running') AND owner IS NOT DISTINCT FROM $6`,
        [
          run.runId,
          run.status,
          run.followUp !== undefined && run.followUpDone !== true,
          run.owner ?? null,
          JSON.stringify(run),
          owner ?? null,
        ],
      );
      if ((result.rowCount ?? 0) === 0) return false;
      db.emit({ type: "run", runId: run.runId, sessionKey: run.sessionKey, status: run.status });
      return true;
    },
    async getRun(db: Db, runId: string): Promise<RunRecord | undefined> {
      await db.lock(lockName.run(runId));
      const { rows } = await db.query<DataRow>(`SELECT data FROM ${s}.runs WHERE run_id = $1`, [runId]);
      return parse<RunRecord>(rows[0]);
    },
    async findRunByIdempotencyKey(db: Db, key: string): Promise<RunRecord | undefined> {
      // Inside a unit this lock makes check-then-create of one key happen once across every process.
      await db.lock(lockName.idempotency(key));
      const { rows } = await db.query<DataRow>(`SELECT data FROM ${s}.runs WHERE idempotency_key = $1`, [
        key,
      ]);
      return parse<RunRecord>(rows[0]);
    },
    async listRunsByStatus(db: Db, statuses: readonly RunStatus[]): Promise<RunRecord[]> {
      if (statuses.length === 0) return [];
      const { rows } = await db.query<DataRow>(
        `SELECT data FROM ${s}.runs WHERE status = ANY($1::text[]) ORDER BY run_id`,
        [[...statuses]],
      );
      return parseAll<RunRecord>(rows);
    },
    async listRunTree(db: Db, rootRunId: string, limit: number): Promise<RunRecord[]> {
      // The expression and predicate are the index's (runs_root, migration 3), word for word.
      const { rows } = await db.query<DataRow>(
        `SELECT data FROM ${s}.runs WHERE run_id = $1 OR (${HAS_ROOT} AND ${ROOT_OF_RUN} = $3)
           ORDER BY run_id <> $1, substring(data from '"createdAt":([0-9]+)')::bigint, run_id LIMIT $2`,
        // The root as the JSON text of its children spells it.
        [rootRunId, limit, JSON.stringify(rootRunId).slice(1, -1)],
      );
      return parseAll<RunRecord>(rows);
    },
    async listPendingFollowUps(db: Db): Promise<RunRecord[]> {
      const { rows } = await db.query<DataRow>(
        `SELECT data FROM ${s}.runs WHERE follow_up_pending ORDER BY run_id`,
      );
      return parseAll<RunRecord>(rows);
    },

    async enqueueDelivery(
      db: Db,
      record: DeliveryRecord,
    ): Promise<{ record: DeliveryRecord; created: boolean }> {
      await db.lock(lockName.deliveryKey(record.idempotencyKey));
      const inserted = await db.query(
        `INSERT INTO ${s}.deliveries (id, idempotency_key, session_key, run_id, status, next_attempt_at, created_at,
           lease_owner, lease_until, data)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
         ON CONFLICT (idempotency_key) DO NOTHING`,
        deliveryParams(record),
      );
      if ((inserted.rowCount ?? 0) > 0) {
        db.emit({ type: "delivery", id: record.id, sessionKey: record.sessionKey, status: record.status });
        return { record: structuredClone(record), created: true };
      }
      const { rows } = await db.query<DeliveryRow>(
        `SELECT ${deliveryColumns} FROM ${s}.deliveries WHERE idempotency_key = $1`,
        [record.idempotencyKey],
      );
      return { record: toDelivery(rows[0] as DeliveryRow), created: false };
    },
    async putDelivery(db: Db, record: DeliveryRecord): Promise<void> {
      await db.lock(lockName.delivery(record.id));
      await db.query(
        `INSERT INTO ${s}.deliveries (id, idempotency_key, session_key, run_id, status, next_attempt_at, created_at,
           lease_owner, lease_until, data)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
         ON CONFLICT (id) DO UPDATE SET status = excluded.status, next_attempt_at = excluded.next_attempt_at,
           lease_owner = excluded.lease_owner, lease_until = excluded.lease_until, data = excluded.data`,
        deliveryParams(record),
      );
      db.emit({ type: "delivery", id: record.id, sessionKey: record.sessionKey, status: record.status });
    },
    /** One conditional statement: a delivery another gateway claimed (or finished) since is left as it is. */
    async finishDelivery(db: Db, record: DeliveryRecord, owner: string): Promise<boolean> {
      await db.lock(lockName.delivery(record.id));
      const result = await db.query(
        `UPDATE ${s}.deliveries SET status = $2, next_attempt_at = $3, lease_owner = $4, lease_until = $5, data = $6
         WHERE id = $1 AND status = 'queued' AND (lease_owner IS NULL OR lease_owner = $7)`,
        [
          record.id,
          record.status,
          record.nextAttemptAt,
          record.leaseOwner ?? null,
          record.leaseUntil ?? null,
          JSON.stringify(record),
          owner,
        ],
      );
      if ((result.rowCount ?? 0) === 0) return false;
      db.emit({ type: "delivery", id: record.id, sessionKey: record.sessionKey, status: record.status });
      return true;
    },
    async getDelivery(db: Db, id: string): Promise<DeliveryRecord | undefined> {
      await db.lock(lockName.delivery(id));
      const { rows } = await db.query<DeliveryRow>(
        `SELECT ${deliveryColumns} FROM ${s}.deliveries WHERE id = $1`,
        [id],
      );
      return rows[0] === undefined ? undefined : toDelivery(rows[0]);
    },
    async listDeliveries(db: Db, query: ListDeliveriesQuery): Promise<DeliveryRecord[]> {
      const { text, values } = deliveriesQuery(s, query);
      return (await db.query<DeliveryRow>(text, values)).rows.map(toDelivery);
    },
    async listQueuedDeliveries(db: Db, limit: number): Promise<DeliveryRecord[]> {
      const { rows } = await db.query<DeliveryRow>(
        `SELECT ${deliveryColumns} FROM ${s}.deliveries WHERE status = 'queued'
         ORDER BY next_attempt_at ASC, id ASC LIMIT $1`,
        [Math.max(0, Math.floor(limit))],
      );
      return rows.map(toDelivery);
    },

    async putRoute(db: Db, route: RouteRecord): Promise<void> {
      await db.lock(lockName.session(route.sessionKey));
      await db.query(
        `INSERT INTO ${s}.routes (session_key, channel, account_id, updated_at, data) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (session_key, channel, account_id) DO UPDATE SET updated_at = excluded.updated_at, data = excluded.data`,
        [route.sessionKey, route.channel, route.accountId, route.updatedAt, JSON.stringify(route)],
      );
    },
    async listRoutes(db: Db, sessionKey: string): Promise<RouteRecord[]> {
      const { rows } = await db.query<DataRow>(
        `SELECT data FROM ${s}.routes WHERE session_key = $1 ORDER BY updated_at DESC`,
        [sessionKey],
      );
      return parseAll<RouteRecord>(rows);
    },

    async putSubagent(db: Db, record: SubagentRecord): Promise<void> {
      await db.lock(lockName.subagent(record.childKey));
      await db.query(
        `INSERT INTO ${s}.subagents (child_key, requester_key, status, created_at, archive_at, data)
         VALUES ($1, $2, $3, $4, $5, $6)
         ON CONFLICT (child_key) DO UPDATE SET requester_key = excluded.requester_key, status = excluded.status,
           archive_at = excluded.archive_at, data = excluded.data`,
        [
          record.childKey,
          record.requesterKey,
          record.status,
          record.createdAt,
          record.archiveAt ?? null,
          JSON.stringify(record),
        ],
      );
    },
    async getSubagent(db: Db, childKey: string): Promise<SubagentRecord | undefined> {
      await db.lock(lockName.subagent(childKey));
      const { rows } = await db.query<DataRow>(`SELECT data FROM ${s}.subagents WHERE child_key = $1`, [
        childKey,
      ]);
      return parse<SubagentRecord>(rows[0]);
    },
    async listSubagents(
      db: Db,
      query: { requesterKey?: string | undefined; statuses?: readonly SubagentStatus[] | undefined },
    ): Promise<SubagentRecord[]> {
      if (query.statuses?.length === 0) return [];
      const { text, values } = subagentsQuery(s, query);
      return parseAll<SubagentRecord>((await db.query<DataRow>(text, values)).rows);
    },
    async listArchiveDue(db: Db, now: number): Promise<SubagentRecord[]> {
      const { rows } = await db.query<DataRow>(
        `SELECT data FROM ${s}.subagents WHERE archive_at IS NOT NULL AND archive_at <= $1 ORDER BY archive_at ASC`,
        [now],
      );
      return parseAll<SubagentRecord>(rows);
    },
    async nextArchiveAt(db: Db): Promise<number | undefined> {
      const { rows } = await db.query<{ at: string | null }>(
        `SELECT min(archive_at) AS at FROM ${s}.subagents WHERE archive_at IS NOT NULL`,
      );
      const at = rows[0]?.at;
      return at === null || at === undefined ? undefined : Number(at);
    },

    async putThreadBinding(db: Db, record: ThreadBindingRecord): Promise<void> {
      await db.lock(lockName.binding(record.channel, record.accountId, record.threadId));
      await db.query(
        `INSERT INTO ${s}.thread_bindings (channel, account_id, thread_id, session_key, data) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (channel, account_id, thread_id) DO UPDATE SET session_key = excluded.session_key, data = excluded.data`,
        [record.channel, record.accountId, record.threadId, record.sessionKey, JSON.stringify(record)],
      );
    },
    async getThreadBinding(
      db: Db,
      channel: string,
      accountId: string,
      threadId: string,
    ): Promise<ThreadBindingRecord | undefined> {
      await db.lock(lockName.binding(channel, accountId, threadId));
      const { rows } = await db.query<DataRow>(
        `SELECT data FROM ${s}.thread_bindings WHERE channel = $1 AND account_id = $2 AND thread_id = $3`,
        [channel, accountId, threadId],
      );
      return parse<ThreadBindingRecord>(rows[0]);
    },
    async listThreadBindings(
      db: Db,
      query?: { sessionKey?: string | undefined },
    ): Promise<ThreadBindingRecord[]> {
      const { rows } =
        query?.sessionKey === undefined
          ? await db.query<DataRow>(
              `SELECT data FROM ${s}.thread_bindings ORDER BY channel, account_id, thread_id`,
            )
          : await db.query<DataRow>(
              `SELECT data FROM ${s}.thread_bindings WHERE session_key = $1 ORDER BY channel, account_id, thread_id`,
              [query.sessionKey],
            );
      return parseAll<ThreadBindingRecord>(rows);
    },
    async deleteThreadBinding(
      db: Db,
      channel: string,
      accountId: string,
      threadId: string,
    ): Promise<boolean> {
      await db.lock(lockName.binding(channel, accountId, threadId));
      const result = await db.query(
        `DELETE FROM ${s}.thread_bindings WHERE channel = $1 AND account_id = $2 AND thread_id = $3`,
        [channel, accountId, threadId],
      );
      return (result.rowCount ?? 0) > 0;
    },
  };
}

export type Operations = ReturnType<typeof createOperations>;
