import type { TranscriptMessage } from "@sessions/core";
import type {
  DeliveryRecord,
  ListDeliveriesQuery,
  ListEntriesQuery,
  RouteRecord,
  RunRecord,
  RunStatus,
  SessionStore,
  StoredEntry,
  StoredMessage,
  SubagentRecord,
  SubagentStatus,
  ThreadBindingRecord,
} from "./types.js";

const clone = <T>(value: T): T => structuredClone(value);

/** Entry ordering shared by both stores: newest first, then key. */
export function compareEntries(
  a: { updatedAt: number; key: string },
  b: { updatedAt: number; key: string },
): number {
  return b.updatedAt - a.updatedAt || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0);
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
  return true;
}

/** An in-memory store for tests and throwaway gateways. Passes the same contract suite as the SQLite store. */
export function createMemoryStore(): SessionStore {
  const entries = new Map<string, StoredEntry>();
  const transcripts = new Map<string, StoredMessage[]>();
  const runs = new Map<string, RunRecord>();
  const deliveries = new Map<string, DeliveryRecord>();
  const deliveryByKey = new Map<string, string>();
  const routes = new Map<string, RouteRecord>();
  const subagents = new Map<string, SubagentRecord>();
  const bindings = new Map<string, ThreadBindingRecord>();
  const bindingKey = (channel: string, accountId: string, threadId: string) =>
    `${channel}\u0000${accountId}\u0000${threadId}`;

  return {
    kind: "memory",
    async getEntry(key) {
      const entry = entries.get(key);
      return entry === undefined ? undefined : clone(entry);
    },
    async findEntriesBySessionId(sessionId) {
      return [...entries.values()].filter((e) => e.sessionId === sessionId).map(clone);
    },
    async findEntriesByLabel(label) {
      return [...entries.values()].filter((e) => e.label === label).map(clone);
    },
    async putEntry(entry) {
      entries.set(entry.key, clone(entry));
    },
    async deleteEntry(key, options) {
      const existed = entries.delete(key);
      if (options?.transcript !== false) transcripts.delete(key);
      return existed;
    },
    async listEntries(query) {
      return [...entries.values()]
        .filter((e) => matchesEntryQuery(e, query))
        .sort(compareEntries)
        .slice(query.offset ?? 0, (query.offset ?? 0) + query.limit)
        .map(clone);
    },
    async countEntries() {
      return entries.size;
    },
    async appendMessage(sessionKey, message: TranscriptMessage) {
      let list = transcripts.get(sessionKey);
      if (list === undefined) {
        list = [];
        transcripts.set(sessionKey, list);
      }
      const stored = { ...clone(message), seq: (list[list.length - 1]?.seq ?? 0) + 1 } as StoredMessage;
      list.push(stored);
      return clone(stored);
    },
    async readMessages(sessionKey, { limit, beforeSeq }) {
      const list = transcripts.get(sessionKey) ?? [];
      let end = list.length;
      if (beforeSeq !== undefined) {
        while (end > 0 && (list[end - 1]?.seq ?? 0) >= beforeSeq) end--;
      }
      return list.slice(Math.max(0, end - limit), end).map(clone);
    },
    async countMessages(sessionKey) {
      const list = transcripts.get(sessionKey);
      return list?.[list.length - 1]?.seq ?? 0;
    },
    async putRun(run) {
      runs.set(run.runId, clone(run));
    },
    async getRun(runId) {
      const run = runs.get(runId);
      return run === undefined ? undefined : clone(run);
    },
    async findRunByIdempotencyKey(idempotencyKey) {
      for (const run of runs.values()) if (run.idempotencyKey === idempotencyKey) return clone(run);
      return undefined;
    },
    async listRunsByStatus(statuses: readonly RunStatus[]) {
      return [...runs.values()].filter((r) => statuses.includes(r.status)).map(clone);
    },
    async listPendingFollowUps() {
      return [...runs.values()].filter((r) => r.followUp !== undefined && r.followUpDone !== true).map(clone);
    },
    async enqueueDelivery(record) {
      const existingId = deliveryByKey.get(record.idempotencyKey);
      const existing = existingId === undefined ? undefined : deliveries.get(existingId);
      if (existing !== undefined) return { record: clone(existing), created: false };
      deliveries.set(record.id, clone(record));
      deliveryByKey.set(record.idempotencyKey, record.id);
      return { record: clone(record), created: true };
    },
    async putDelivery(record) {
      deliveries.set(record.id, clone(record));
      deliveryByKey.set(record.idempotencyKey, record.id);
    },
    async getDelivery(id) {
      const record = deliveries.get(id);
      return record === undefined ? undefined : clone(record);
    },
    async listDeliveries(query: ListDeliveriesQuery) {
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
    async listQueuedDeliveries(limit) {
      return [...deliveries.values()]
        .filter((d) => d.status === "queued")
        .sort((a, b) => a.nextAttemptAt - b.nextAttemptAt)
        .slice(0, limit)
        .map(clone);
    },
    async putRoute(route) {
      routes.set(`${route.sessionKey}\u0000${route.channel}\u0000${route.accountId}`, clone(route));
    },
    async listRoutes(sessionKey) {
      return [...routes.values()]
        .filter((r) => r.sessionKey === sessionKey)
        .sort((a, b) => b.updatedAt - a.updatedAt)
        .map(clone);
    },
    async putSubagent(record) {
      subagents.set(record.childKey, clone(record));
    },
    async getSubagent(childKey) {
      const record = subagents.get(childKey);
      return record === undefined ? undefined : clone(record);
    },
    async listSubagents(query: { requesterKey?: string; statuses?: readonly SubagentStatus[] }) {
      return [...subagents.values()]
        .filter(
          (s) =>
            (query.requesterKey === undefined || s.requesterKey === query.requesterKey) &&
            (query.statuses === undefined || query.statuses.includes(s.status)),
        )
        .sort((a, b) => a.createdAt - b.createdAt)
        .map(clone);
    },
    async listArchiveDue(now) {
      return [...subagents.values()]
        .filter((s) => s.archiveAt !== undefined && s.archiveAt <= now)
        .sort((a, b) => (a.archiveAt ?? 0) - (b.archiveAt ?? 0))
        .map(clone);
    },
    async nextArchiveAt() {
      let next: number | undefined;
      for (const s of subagents.values()) {
        if (s.archiveAt !== undefined && (next === undefined || s.archiveAt < next)) next = s.archiveAt;
      }
      return next;
    },
    async putThreadBinding(record) {
      bindings.set(bindingKey(record.channel, record.accountId, record.threadId), clone(record));
    },
    async getThreadBinding(channel, accountId, threadId) {
      const record = bindings.get(bindingKey(channel, accountId, threadId));
      return record === undefined ? undefined : clone(record);
    },
    async listThreadBindings(query) {
      return [...bindings.values()]
        .filter((b) => query?.sessionKey === undefined || b.sessionKey === query.sessionKey)
        .map(clone);
    },
    async deleteThreadBinding(channel, accountId, threadId) {
      return bindings.delete(bindingKey(channel, accountId, threadId));
    },
    async close() {},
  };
}
