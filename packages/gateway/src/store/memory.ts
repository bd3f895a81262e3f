import { searchInMemory } from "./memory-search.js";
import type {
  AcquireLease,
  AcquireLeaseResult,
  ClaimDeliveries,
  DeliveryRecord,
  Lease,
  ListDeliveriesQuery,
  ListEntriesQuery,
  RouteRecord,
  RunRecord,
  SessionStore,
  StoredEntry,
  StoredMessage,
  SubagentRecord,
  ThreadBindingRecord,
} from "./types.js";
import { LEASE_WRITES, STORE_WRITES } from "./types.js";
import { createUnitCoordinator, type SyncStoreOps, type UnitHooks } from "./unit-of-work.js";

const clone = <T>(value: T): T => structuredClone(value);

/** Entry ordering shared by both stores: newest first, then key. */
export function compareEntries(
  a: { updatedAt: number; key: string },
  b: { updatedAt: number; key: string },
): number {
  return b.updatedAt - a.updatedAt || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0);
}

// Surrogates (U+D800–DFFF) sort above U+E000–FFFF in code point order, below them in UTF-16 order.
const codePointRank = (unit: number) =>
  unit >= 0xe000 ? unit - 0x800 : unit >= 0xd800 ? unit + 0x2000 : unit;

/** Keys in code point order: the byte order SQLite and Postgres (`COLLATE "C"`) compare UTF-8 text in. */
function compareKeys(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) return codePointRank(x) - codePointRank(y);
  }
  return a.length - b.length;
}

export function matchesEntryQuery(entry: StoredEntry, query: ListEntriesQuery): boolean {
  if (!query.includeArchived && entry.archivedAt !== undefined) return false;
  if (query.agentIds !== undefined && !query.agentIds.includes(entry.agentId)) return false;
  if (query.kinds !== undefined && !query.kinds.includes(entry.kind)) return false;
  if (query.spawnedBy !== undefined && entry.spawnedBy !== query.spawnedBy) return false;
  if (query.label !== undefined && entry.label !== query.label) return false;
  if (query.updatedSince !== undefined && entry.updatedAt < query.updatedSince) return false;
  if (query.search !== undefined) {
    const needle = query.search.toLowerCase();
    const hay = `${entry.key} ${entry.label ?? ""} ${entry.displayName ?? ""}`.toLowerCase();
    if (!hay.includes(needle)) return false;
  }
  if (query.after !== undefined && compareEntries(entry, query.after) <= 0) return false;
  if (query.afterKey !== undefined && compareKeys(entry.key, query.afterKey) <= 0) return false;
  return true;
}

/**
 * An in-memory store for tests and throwaway gateways. Passes the same contract suite as the SQLite store.
 * Transactions keep an undo log of every write and replay it backwards on a throw.
 */
export function createMemoryStore(): SessionStore {
  const entries = new Map<string, StoredEntry>();
  const transcripts = new Map<string, StoredMessage[]>();
  const runs = new Map<string, RunRecord>();
  const deliveries = new Map<string, DeliveryRecord>();
  const deliveryByKey = new Map<string, string>();
  const routes = new Map<string, RouteRecord>();
  const subagents = new Map<string, SubagentRecord>();
  const bindings = new Map<string, ThreadBindingRecord>();
  const leases = new Map<string, Lease>();
  const bindingKey = (channel: string, accountId: string, threadId: string) =>
    `${channel}\u0000${accountId}\u0000${threadId}`;

  // Set while a transaction is open; `marks[depth - 1]` is where savepoint `depth` starts in it.
  let undo: (() => void)[] | undefined;
  const marks: number[] = [];
  const undoTo = (length: number) => {
    while (undo !== undefined && undo.length > length) undo.pop()?.();
  };
  const hooks: UnitHooks = {
    begin: () => {
      undo = [];
    },
    commit: () => {
      undo = undefined;
      marks.length = 0;
    },
    rollback: () => {
      undoTo(0);
      undo = undefined;
      marks.length = 0;
    },
    savepoint: (depth) => {
      marks[depth - 1] = undo?.length ?? 0;
    },
    releaseSavepoint: (depth) => {
      marks.length = depth - 1;
    },
    rollbackToSavepoint: (depth) => {
      undoTo(marks[depth - 1] ?? 0);
      marks.length = depth - 1;
    },
    intact: () => undo !== undefined,
  };
  function set<K, V>(map: Map<K, V>, key: K, value: V): void {
    if (undo !== undefined) {
      const had = map.has(key);
      const previous = map.get(key) as V;
      undo.push(() => (had ? map.set(key, previous) : map.delete(key)));
    }
    map.set(key, value);
  }
  function remove<K, V>(map: Map<K, V>, key: K): boolean {
    if (!map.has(key)) return false;
    if (undo !== undefined) {
      const previous = map.get(key) as V;
      undo.push(() => map.set(key, previous));
    }
    return map.delete(key);
  }

  const core: SyncStoreOps = {
    getEntry(key) {
      const entry = entries.get(key);
      return entry === undefined ? undefined : clone(entry);
    },
    findEntriesBySessionId(sessionId) {
      return [...entries.values()].filter((e) => e.sessionId === sessionId).map(clone);
    },
    findEntriesByLabel(label) {
      return [...entries.values()].filter((e) => e.label === label).map(clone);
    },
    putEntry(entry) {
      set(entries, entry.key, clone(entry));
      units.emit({ type: "entry", key: entry.key, op: "put" });
    },
    deleteEntry(key, options) {
      const existed = remove(entries, key);
      if (options?.transcript !== false) remove(transcripts, key);
      if (existed) units.emit({ type: "entry", key, op: "delete" });
      return existed;
    },
    listEntries(query) {
      return [...entries.values()]
        .filter((e) => matchesEntryQuery(e, query))
        .sort(query.order === "key" ? (a, b) => compareKeys(a.key, b.key) : compareEntries)
        .slice(query.offset ?? 0, (query.offset ?? 0) + query.limit)
        .map(clone);
    },
    countEntries() {
      return entries.size;
    },
    searchSessions(query) {
      return searchInMemory(entries, transcripts, query);
    },
    listAgentIds() {
      return [...new Set([...entries.values()].map((e) => e.agentId))];
    },
    appendMessage(sessionKey, message) {
      let list = transcripts.get(sessionKey);
      if (list === undefined) {
        list = [];
        set(transcripts, sessionKey, list);
      }
      const stored = { ...clone(message), seq: (list[list.length - 1]?.seq ?? 0) + 1 } as StoredMessage;
      list.push(stored);
      const appended = list;
      undo?.push(() => appended.pop());
      return clone(stored);
    },
    readMessages(sessionKey, { limit, beforeSeq }) {
      const list = transcripts.get(sessionKey) ?? [];
      let end = list.length;
      if (beforeSeq !== undefined) {
        while (end > 0 && (list[end - 1]?.seq ?? 0) >= beforeSeq) end--;
      }
      return list.slice(Math.max(0, end - limit), end).map(clone);
    },
    countMessages(sessionKey) {
      const list = transcripts.get(sessionKey);
      return list?.[list.length - 1]?.seq ?? 0;
    },
    putRun(run) {
      set(runs, run.runId, clone(run));
      units.emit({ type: "run", runId: run.runId, sessionKey: run.sessionKey, status: run.status });
    },
    endRun(run, owner) {
      const stored = runs.get(run.runId);
      if (stored === undefined || (stored.status !== "queued" && stored.status !== "running")) return false;
      if (stored.owner !== owner) return false;
      set(runs, run.runId, clone(run));
      units.emit({ type: "run", runId: run.runId, sessionKey: run.sessionKey, status: run.status });
      return true;
    },
    getRun(runId) {
      const run = runs.get(runId);
      return run === undefined ? undefined : clone(run);
    },
    findRunByIdempotencyKey(idempotencyKey) {
      for (const run of runs.values()) if (run.idempotencyKey === idempotencyKey) return clone(run);
      return undefined;
    },
    listRunsByStatus(statuses) {
      return [...runs.values()].filter((r) => statuses.includes(r.status)).map(clone);
    },
    listPendingFollowUps() {
      return [...runs.values()].filter((r) => r.followUp !== undefined && r.followUpDone !== true).map(clone);
    },
    listRunTree(rootRunId, limit) {
      return (
        [...runs.values()]
          .filter((r) => r.runId === rootRunId || r.rootRunId === rootRunId)
          // The root first (its runs may share its millisecond), then oldest first.
          .sort(
            (a, b) =>
              Number(a.runId !== rootRunId) - Number(b.runId !== rootRunId) ||
              a.createdAt - b.createdAt ||
              (a.runId < b.runId ? -1 : a.runId > b.runId ? 1 : 0),
          )
          .slice(0, limit)
          .map(clone)
      );
    },
    enqueueDelivery(record) {
      const existingId = deliveryByKey.get(record.idempotencyKey);
      const existing = existingId === undefined ? undefined : deliveries.get(existingId);
      if (existing !== undefined) return { record: clone(existing), created: false };
      set(deliveries, record.id, clone(record));
      set(deliveryByKey, record.idempotencyKey, record.id);
      units.emit({ type: "delivery", id: record.id, sessionKey: record.sessionKey, status: record.status });
      return { record: clone(record), created: true };
    },
    putDelivery(record) {
      set(deliveries, record.id, clone(record));
      set(deliveryByKey, record.idempotencyKey, record.id);
      units.emit({ type: "delivery", id: record.id, sessionKey: record.sessionKey, status: record.status });
    },
    finishDelivery(record, owner) {
      const stored = deliveries.get(record.id);
      if (stored === undefined || stored.status !== "queued") return false;
      if (stored.leaseOwner !== undefined && stored.leaseOwner !== owner) return false;
      set(deliveries, record.id, clone(record));
      units.emit({ type: "delivery", id: record.id, sessionKey: record.sessionKey, status: record.status });
      return true;
    },
    getDelivery(id) {
      const record = deliveries.get(id);
      return record === undefined ? undefined : clone(record);
    },
    listDeliveries(query: ListDeliveriesQuery) {
      return [...deliveries.values()]
        .filter(
          (d) =>
            (query.sessionKey === undefined || d.sessionKey === query.sessionKey) &&
            (query.runId === undefined || d.runId === query.runId) &&
            (query.status === undefined || d.status === query.status),
        )
        .sort((a, b) => b.createdAt - a.createdAt || (a.id < b.id ? 1 : -1))
        .slice(0, query.limit ?? 100)
        .map(clone);
    },
    listQueuedDeliveries(limit) {
      return [...deliveries.values()]
        .filter((d) => d.status === "queued")
        .sort((a, b) => a.nextAttemptAt - b.nextAttemptAt)
        .slice(0, limit)
        .map(clone);
    },
    putRoute(route) {
      set(routes, `${route.sessionKey}\u0000${route.channel}\u0000${route.accountId}`, clone(route));
    },
    listRoutes(sessionKey) {
      return [...routes.values()]
        .filter((r) => r.sessionKey === sessionKey)
        .sort((a, b) => b.updatedAt - a.updatedAt)
        .map(clone);
    },
    putSubagent(record) {
      set(subagents, record.childKey, clone(record));
    },
    getSubagent(childKey) {
      const record = subagents.get(childKey);
      return record === undefined ? undefined : clone(record);
    },
    listSubagents(query) {
      return [...subagents.values()]
        .filter(
          (s) =>
            (query.requesterKey === undefined || s.requesterKey === query.requesterKey) &&
            (query.statuses === undefined || query.statuses.includes(s.status)),
        )
        .sort((a, b) => a.createdAt - b.createdAt)
        .map(clone);
    },
    listArchiveDue(now) {
      return [...subagents.values()]
        .filter((s) => s.archiveAt !== undefined && s.archiveAt <= now)
        .sort((a, b) => (a.archiveAt ?? 0) - (b.archiveAt ?? 0))
        .map(clone);
    },
    nextArchiveAt() {
      let next: number | undefined;
      for (const s of subagents.values()) {
        if (s.archiveAt !== undefined && (next === undefined || s.archiveAt < next)) next = s.archiveAt;
      }
      return next;
    },
    putThreadBinding(record) {
      set(bindings, bindingKey(record.channel, record.accountId, record.threadId), clone(record));
    },
    getThreadBinding(channel, accountId, threadId) {
      const record = bindings.get(bindingKey(channel, accountId, threadId));
      return record === undefined ? undefined : clone(record);
    },
    listThreadBindings(query) {
      return [...bindings.values()]
        .filter((b) => query?.sessionKey === undefined || b.sessionKey === query.sessionKey)
        .map(clone);
    },
    deleteThreadBinding(channel, accountId, threadId) {
      return remove(bindings, bindingKey(channel, accountId, threadId));
    },
  };

  const leaseOps = {
    acquireLease({ name, owner, ttlMs, now, data, lapsedBefore }: AcquireLease): AcquireLeaseResult {
      const held = leases.get(name);
      if (held !== undefined && held.owner !== owner && held.expiresAt > (lapsedBefore ?? now)) {
        return { acquired: false, holder: clone(held) };
      }
      const kept = held?.owner === owner ? held : undefined;
      const nextData = data ?? kept?.data;
      const lease: Lease = {
        name,
        owner,
        acquiredAt: kept?.acquiredAt ?? now,
        expiresAt: now + ttlMs,
        ...(nextData === undefined ? {} : { data: clone(nextData) }),
      };
      set(leases, name, lease);
      return { acquired: true, lease: clone(lease) };
    },
    renewLease(name: string, owner: string, ttlMs: number, now: number): boolean {
      const held = leases.get(name);
      if (held?.owner !== owner) return false;
      set(leases, name, { ...held, expiresAt: now + ttlMs });
      return true;
    },
    releaseLease(name: string, owner: string): boolean {
      return leases.get(name)?.owner === owner && remove(leases, name);
    },
    getLease(name: string): Lease | undefined {
      const lease = leases.get(name);
      return lease === undefined ? undefined : clone(lease);
    },
    listLeases(prefix: string): Lease[] {
      return [...leases.values()]
        .filter((l) => l.name.startsWith(prefix))
        .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
        .map(clone);
    },
    claimDeliveries({ owner, now, ttlMs, limit }: ClaimDeliveries): DeliveryRecord[] {
      const due = [...deliveries.values()]
        .filter(
          (d) =>
            d.status === "queued" &&
            d.nextAttemptAt <= now &&
            (d.leaseUntil === undefined || d.leaseUntil <= now),
        )
        .sort((a, b) => a.nextAttemptAt - b.nextAttemptAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
        .slice(0, Math.max(0, limit));
      return due.map((d) => {
        const claimed = { ...d, leaseOwner: owner, leaseUntil: now + ttlMs };
        set(deliveries, d.id, claimed);
        return clone(claimed);
      });
    },
  };

  // Nothing to save by committing units together: each is its own transaction, reads wait between them.
  const units = createUnitCoordinator(hooks, core, { groupCommit: false });
  const subscribers = new Set<(message: unknown) => void>();
  const always = () => {};
  return {
    kind: "memory",
    ...units.guard(core, STORE_WRITES, always),
    ...units.guard(leaseOps, LEASE_WRITES, always),
    transaction: (work) => units.transaction(work),
    watch: (listener) => units.watch(listener),
    // Shared by gateways only inside one process (tests): messages go to every subscriber, in order.
    publish(message) {
      for (const listener of [...subscribers]) {
        try {
          listener(structuredClone(message));
        } catch {
          // A subscriber's bug is its own.
        }
      }
    },
    subscribe(listener) {
      const own = (message: unknown) => listener(message);
      subscribers.add(own);
      return () => void subscribers.delete(own);
    },
    close: () => units.drain(),
  };
}
