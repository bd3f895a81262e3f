import type { TranscriptMessage } from "@sessions/core";
import type Database from "better-sqlite3";
import type {
  AcquireLease,
  AcquireLeaseResult,
  ClaimDeliveries,
  DeliveryRecord,
  Lease,
  RouteRecord,
  RunRecord,
  StoreChange,
  StoredEntry,
  StoredMessage,
  SubagentRecord,
  ThreadBindingRecord,
} from "../types.js";
import type { SyncStoreOps } from "../unit-of-work.js";
import { createSqliteSearch, type SqliteSearch } from "./search.js";
import type { ListStatements, Statements } from "./statements.js";
import { copyJson } from "./transcript-tails.js";
import type { WriteLog, WriteMethod } from "./unit-hooks.js";
import { WriterCache } from "./writer-cache.js";

type Row = { data: string };
type LeaseRow = { name: string; owner: string; acquired_at: number; expires_at: number; data: string | null };

const parse = <T>(row: Row | undefined): T | undefined =>
  row === undefined ? undefined : (JSON.parse(row.data) as T);
const parseAll = <T>(rows: Row[]): T[] => rows.map((r) => JSON.parse(r.data) as T);

function toLease(row: LeaseRow): Lease {
  return {
    name: row.name,
    owner: row.owner,
    acquiredAt: row.acquired_at,
    expiresAt: row.expires_at,
    ...(row.data === null ? {} : { data: JSON.parse(row.data) as Record<string, unknown> }),
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
    leaseOwner: record.leaseOwner ?? null,
    leaseUntil: record.leaseUntil ?? null,
    data: JSON.stringify(record),
  };
}

/** What the operations report as they write: changes for the feed, transcript appends and deletions. */
export interface OperationEvents {
  emit(change: StoreChange): void;
  appended?(sessionKey: string, message: StoredMessage, size: number): void;
  transcriptDeleted?(sessionKey: string): void;
  /** An entry written (as stored; never to be changed), or deleted. */
  entryPut?(entry: StoredEntry): void;
  entryDeleted?(key: string): void;
  /** A message was appended, or a session's messages deleted: once committed, the search indexer takes them up. */
  searchAppended?(sessionKey: string, message: StoredMessage): void;
  searchDeleted?(sessionKey: string): void;
}

/**
 * The same statements, those that write (as SQLite says: not read-only) logging each successful call to `log`.
 * Transaction control is the unit hooks' business, never logged.
 */
function loggingWrites(s: Statements, log: WriteLog): Statements {
  const out: Record<string, unknown> = { ...s };
  for (const [name, stmt] of Object.entries(s)) {
    if (stmt.readonly || name === "begin" || name === "commit" || name === "rollback") continue;
    const call = (method: WriteMethod) => {
      const fn = (stmt[method] as (...args: unknown[]) => unknown).bind(stmt);
      return (...args: unknown[]) => {
        const result = fn(...args);
        log.record(stmt, method, args);
        return result;
      };
    };
    out[name] = { run: call("run"), get: call("get"), all: call("all") };
  }
  return out as Statements;
}

/** Options of the writing connection's operations: its write log, and the search it answers with. */
export interface WriterOptions {
  log: WriteLog;
  /** Searches (on the index's own connection, or this one), and what runs before each (in-thread indexing). */
  search?: { searcher: Pick<SqliteSearch, "searchSessions" | "size">; before(): void } | undefined;
}

/**
 * The store's operations as synchronous SQLite calls. Writes run inside the store's unit of work (a savepoint
 * of its open transaction), so a write of several statements is atomic without a transaction of its own.
 */
export function createSqliteOperations(
  db: Database.Database,
  statements: Statements,
  lists: ListStatements,
  events: OperationEvents,
  writer?: WriterOptions,
) {
  const { emit } = events;
  const s = writer === undefined ? statements : loggingWrites(statements, writer.log);
  const cache = writer === undefined ? undefined : new WriterCache();
  const own = createSqliteSearch(db);
  const search = writer?.search?.searcher ?? own;
  const beforeSearch = writer?.search?.before ?? (() => {});
  const lastSeq = (sessionKey: string): number => {
    const cached = cache?.lastSeq(sessionKey);
    if (cached !== undefined) return cached;
    return (s.lastSeq.get(sessionKey) as { seq: number } | undefined)?.seq ?? 0;
  };
  const append = (sessionKey: string, message: TranscriptMessage): StoredMessage => {
    const stored = { ...message, seq: lastSeq(sessionKey) + 1 } as StoredMessage;
    const data = JSON.stringify(stored);
    s.insertMessage.run(sessionKey, stored.seq, data);
    events.searchAppended?.(sessionKey, stored);
    cache?.appended(sessionKey, stored.seq);
    events.appended?.(sessionKey, stored, data.length);
    return stored;
  };

  const deleteEntry = (key: string, transcript: boolean) => {
    const existed = s.deleteEntry.run(key).changes > 0;
    if (transcript) {
      s.deleteMessages.run(key);
      s.forgetSearch.run(key);
      events.searchDeleted?.(key);
    }
    cache?.forget(key, transcript);
    events.entryDeleted?.(key);
    if (transcript) events.transcriptDeleted?.(key);
    return existed;
  };

  const getEntry = (key: string): StoredEntry | undefined => {
    if (cache === undefined) return parse<StoredEntry>(s.getEntry.get(key) as Row | undefined);
    const cached = cache.entry(key);
    if (cached !== undefined) return cached;
    const row = s.getEntry.get(key) as Row | undefined;
    if (row === undefined) return undefined;
    const entry = JSON.parse(row.data) as StoredEntry;
    cache.readEntry(copyJson(entry));
    return entry;
  };

  const enqueue = (record: DeliveryRecord) => {
    const inserted = s.insertDelivery.run(deliveryParams(record)).changes > 0;
    if (inserted) return { record, created: true };
    return {
      record: parse<DeliveryRecord>(s.deliveryByKey.get(record.idempotencyKey) as Row) as DeliveryRecord,
      created: false,
    };
  };

  const acquire = db.transaction((input: AcquireLease): AcquireLeaseResult => {
    const row = s.acquireLease.get({
      name: input.name,
      owner: input.owner,
      now: input.now,
      lapsedBefore: input.lapsedBefore ?? input.now,
      expiresAt: input.now + input.ttlMs,
      data: input.data === undefined ? null : JSON.stringify(input.data),
    }) as LeaseRow | undefined;
    if (row !== undefined) return { acquired: true, lease: toLease(row) };
    return { acquired: false, holder: toLease(s.getLease.get(input.name) as LeaseRow) };
  });

  const core: SyncStoreOps = {
    getEntry,
    findEntriesBySessionId: (sessionId) =>
      parseAll<StoredEntry>(s.entriesBySessionId.all(sessionId) as Row[]),
    findEntriesByLabel: (label) => parseAll<StoredEntry>(s.entriesByLabel.all(label) as Row[]),
    putEntry(entry) {
      // Cached with the same indexed columns (a session touched): write only what changed, the SQL way.
      if (
        cache?.sameColumns(entry) &&
        s.touchEntry.run(entry.updatedAt, JSON.stringify(entry), entry.key).changes > 0
      ) {
        events.entryPut?.(cache.putEntry(entry));
        emit({ type: "entry", key: entry.key, op: "put" });
        return;
      }
      const params = {
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
      };
      if (s.putEntry.run(params).changes === 0) s.replaceEntry.run(params);
      const stored = cache?.putEntry(entry);
      if (stored !== undefined) events.entryPut?.(stored);
      emit({ type: "entry", key: entry.key, op: "put" });
    },
    deleteEntry(key, options) {
      const existed = deleteEntry(key, options?.transcript !== false);
      if (existed) emit({ type: "entry", key, op: "delete" });
      return existed;
    },
    listEntries(query) {
      if (query.kinds?.length === 0 || query.agentIds?.length === 0) return [];
      const { stmt, params } = lists.entries(query);
      return parseAll<StoredEntry>(stmt.all(...params) as Row[]);
    },
    countEntries: () => (s.countEntries.get() as { n: number }).n,
    searchSessions(query) {
      // Without an indexer thread, what changed is indexed first, in this unit (see store.ts).
      beforeSearch();
      return search.searchSessions(query);
    },
    listAgentIds: () => own.listAgentIds(),
    appendMessage: (sessionKey, message) => append(sessionKey, message),
    readMessages(sessionKey, { limit, beforeSeq }) {
      const rows = s.readMessages.all(
        sessionKey,
        beforeSeq ?? Number.MAX_SAFE_INTEGER,
        Math.max(0, limit),
      ) as Row[];
      rows.reverse();
      return parseAll<StoredMessage>(rows);
    },
    countMessages: (sessionKey) => (s.countMessages.get(sessionKey) as { n: number }).n,
    putRun(run: RunRecord) {
      const params = {
        runId: run.runId,
        status: run.status,
        idempotencyKey: run.idempotencyKey ?? null,
        followUpPending: run.followUp !== undefined && run.followUpDone !== true ? 1 : 0,
        owner: run.owner ?? null,
        rootRunId: run.rootRunId ?? null,
        data: JSON.stringify(run),
      };
      if (s.putRun.run(params).changes === 0) s.replaceRun.run(params);
      emit({ type: "run", runId: run.runId, sessionKey: run.sessionKey, status: run.status });
    },
    endRun(run: RunRecord, owner: string | undefined) {
      const ended = s.endRun.run({
        runId: run.runId,
        status: run.status,
        followUpPending: run.followUp !== undefined && run.followUpDone !== true ? 1 : 0,
        owner: run.owner ?? null,
        expectedOwner: owner ?? null,
        data: JSON.stringify(run),
      });
      if (ended.changes === 0) return false;
      emit({ type: "run", runId: run.runId, sessionKey: run.sessionKey, status: run.status });
      return true;
    },
    getRun: (runId) => parse<RunRecord>(s.getRun.get(runId) as Row | undefined),
    findRunByIdempotencyKey: (key) => parse<RunRecord>(s.runByKey.get(key) as Row | undefined),
    listRunsByStatus(statuses) {
      if (statuses.length === 0) return [];
      return parseAll<RunRecord>(s.runsByStatus.all(JSON.stringify(statuses)) as Row[]);
    },
    listPendingFollowUps: () => parseAll<RunRecord>(s.pendingFollowUps.all() as Row[]),
    listRunTree: (root, limit) => parseAll<RunRecord>(s.runTree.all({ root, limit }) as Row[]),
    enqueueDelivery(record) {
      const result = enqueue(record);
      if (result.created) {
        emit({ type: "delivery", id: record.id, sessionKey: record.sessionKey, status: record.status });
      }
      return result;
    },
    putDelivery(record) {
      s.putDelivery.run(deliveryParams(record));
      emit({ type: "delivery", id: record.id, sessionKey: record.sessionKey, status: record.status });
    },
    finishDelivery(record: DeliveryRecord, owner: string) {
      // One process owns the file, and a synchronous read-then-write is not interleaved with any other.
      const stored = parse<DeliveryRecord>(s.getDelivery.get(record.id) as Row | undefined);
      if (stored === undefined || stored.status !== "queued") return false;
      if (stored.leaseOwner !== undefined && stored.leaseOwner !== owner) return false;
      s.putDelivery.run(deliveryParams(record));
      emit({ type: "delivery", id: record.id, sessionKey: record.sessionKey, status: record.status });
      return true;
    },
    getDelivery: (id) => parse<DeliveryRecord>(s.getDelivery.get(id) as Row | undefined),
    listDeliveries(query) {
      const { stmt, params } = lists.deliveries(query);
      return parseAll<DeliveryRecord>(stmt.all(...params) as Row[]);
    },
    listQueuedDeliveries: (limit) => parseAll<DeliveryRecord>(s.queuedDeliveries.all(limit) as Row[]),
    putRoute(route: RouteRecord) {
      s.putRoute.run(
        route.sessionKey,
        route.channel,
        route.accountId,
        route.updatedAt,
        JSON.stringify(route),
      );
    },
    listRoutes: (sessionKey) => parseAll<RouteRecord>(s.listRoutes.all(sessionKey) as Row[]),
    putSubagent(record: SubagentRecord) {
      s.putSubagent.run(
        record.childKey,
        record.requesterKey,
        record.status,
        record.createdAt,
        record.archiveAt ?? null,
        JSON.stringify(record),
      );
    },
    getSubagent: (childKey) => parse<SubagentRecord>(s.getSubagent.get(childKey) as Row | undefined),
    listSubagents(query) {
      if (query.statuses?.length === 0) return [];
      const { stmt, params } = lists.subagents(query);
      return parseAll<SubagentRecord>(stmt.all(...params) as Row[]);
    },
    listArchiveDue: (now) => parseAll<SubagentRecord>(s.archiveDue.all(now) as Row[]),
    nextArchiveAt: () => (s.nextArchive.get() as { at: number | null }).at ?? undefined,
    putThreadBinding(record: ThreadBindingRecord) {
      s.putBinding.run(
        record.channel,
        record.accountId,
        record.threadId,
        record.sessionKey,
        JSON.stringify(record),
      );
    },
    getThreadBinding: (channel, accountId, threadId) =>
      parse<ThreadBindingRecord>(s.getBinding.get(channel, accountId, threadId) as Row | undefined),
    listThreadBindings(query) {
      const rows =
        query?.sessionKey === undefined ? s.allBindings.all() : s.bindingsBySession.all(query.sessionKey);
      return parseAll<ThreadBindingRecord>(rows as Row[]);
    },
    deleteThreadBinding: (channel, accountId, threadId) =>
      s.deleteBinding.run(channel, accountId, threadId).changes > 0,
  };

  const leases = {
    acquireLease(input: AcquireLease): AcquireLeaseResult {
      // Its own savepoint inside an open transaction: when that rolls back, so must the log.
      const mark = writer?.log.mark() ?? 0;
      try {
        return acquire.immediate(input);
      } catch (error) {
        writer?.log.truncate(mark);
        throw error;
      }
    },
    renewLease: (name: string, owner: string, ttlMs: number, now: number): boolean =>
      s.renewLease.run(now + ttlMs, name, owner).changes > 0,
    releaseLease: (name: string, owner: string): boolean => s.releaseLease.run(name, owner).changes > 0,
    getLease(name: string): Lease | undefined {
      const row = s.getLease.get(name) as LeaseRow | undefined;
      return row === undefined ? undefined : toLease(row);
    },
    listLeases: (prefix: string): Lease[] => (s.listLeases.all({ prefix }) as LeaseRow[]).map(toLease),
    claimDeliveries({ owner, now, ttlMs, limit }: ClaimDeliveries): DeliveryRecord[] {
      const rows = s.claimDeliveries.all({
        owner,
        now,
        until: now + ttlMs,
        limit: Math.max(0, limit),
      }) as Row[];
      return parseAll<DeliveryRecord>(rows).sort(
        (a, b) => a.nextAttemptAt - b.nextAttemptAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0),
      );
    },
  };

  /** The newest `limit` messages of a transcript with the size of each, oldest first (to fill a cache). */
  const tail = (sessionKey: string, limit: number): { message: StoredMessage; size: number }[] => {
    const rows = s.readMessages.all(sessionKey, Number.MAX_SAFE_INTEGER, limit) as Row[];
    rows.reverse();
    return rows.map((row) => ({ message: JSON.parse(row.data) as StoredMessage, size: row.data.length }));
  };

  /** The connection's state moved back (rollback): what the cache holds may be gone. */
  const reset = () => cache?.clear();

  const searchStatements = () => own.size() + (search === own ? 0 : search.size());
  return { core, leases, tail, reset, searchStatements };
}
