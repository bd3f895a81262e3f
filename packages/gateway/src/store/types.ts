import type {
  DeliveryContext,
  DeliveryKind,
  SessionEntry,
  SessionKind,
  TranscriptMessage,
} from "@sessions/core";

/** A session entry as stored: the spec's fields plus the kind computed when it was written (for indexed filters). */
export interface StoredEntry extends SessionEntry {
  kind: SessionKind;
}

/** A transcript message with its per-session sequence number (1, 2, 3, …). */
export type StoredMessage = TranscriptMessage & { seq: number };

export type RunStatus = "queued" | "running" | "ok" | "error" | "timeout" | "aborted";
export type RunKind =
  | "chat"
  | "agent"
  | "inter_session"
  | "ping_pong"
  | "announce"
  | "subagent"
  | "subagent_announce";

export interface RunUsage {
  inputTokens?: number;
  outputTokens?: number;
  totalTokens?: number;
  costUsd?: number;
}

export interface RunRecord {
  runId: string;
  sessionKey: string;
  agentId: string;
  kind: RunKind;
  status: RunStatus;
  createdAt: number;
  startedAt?: number;
  endedAt?: number;
  error?: string;
  /** The text of this run's final assistant message. */
  reply?: string;
  idempotencyKey?: string;
  /** Deliver the reply to this context when the run ends (send policy checked at delivery). */
  deliverTo?: DeliveryContext;
  usage?: RunUsage;
  /** The seq of the message that started the run. */
  inputSeq?: number;
  /** Work that must follow the run even across a restart (the agent-to-agent loop and announce). */
  followUp?: { kind: "agent_to_agent"; requesterKey: string; requesterChannel: string; request: string };
  followUpDone?: boolean;
}

export type DeliveryStatus = "queued" | "delivered" | "suppressed" | "failed";
export type { DeliveryKind } from "@sessions/core";

export interface DeliveryRecord {
  id: string;
  /** Unique: enqueueing the same key twice returns the first record. */
  idempotencyKey: string;
  kind: DeliveryKind;
  sessionKey: string;
  runId?: string;
  channel: string;
  to: string;
  accountId?: string;
  threadId?: string;
  text: string;
  status: DeliveryStatus;
  attempts: number;
  nextAttemptAt: number;
  createdAt: number;
  updatedAt: number;
  lastError?: string;
  /** Platform message ids returned by the adapter. */
  receipt?: string[];
}

export interface RouteRecord {
  sessionKey: string;
  channel: string;
  accountId: string;
  to: string;
  threadId?: string;
  updatedAt: number;
}

export type SubagentStatus = "running" | "announcing" | "done";

export interface SubagentRecord {
  childKey: string;
  requesterKey: string;
  runId: string;
  task: string;
  label?: string;
  mode: "run" | "session";
  cleanup: "delete" | "keep";
  status: SubagentStatus;
  createdAt: number;
  endedAt?: number;
  outcome?: "ok" | "error" | "timeout" | "unknown";
  error?: string;
  /** When the child session is archived (`cleanup: keep`). */
  archiveAt?: number;
  announceDeliveryId?: string;
}

export interface ThreadBindingRecord {
  channel: string;
  accountId: string;
  threadId: string;
  sessionKey: string;
  to: string;
  parentTo?: string;
  boundAt: number;
  lastActivityAt: number;
  idleHours: number;
  maxAgeHours: number;
}

export interface ListEntriesQuery {
  /** Only these agents. */
  agentIds?: readonly string[];
  kinds?: readonly SessionKind[];
  spawnedBy?: string;
  label?: string;
  /** Case-insensitive substring of key, label or displayName. */
  search?: string;
  /** Only entries with `updatedAt >= updatedSince`. */
  updatedSince?: number;
  includeArchived?: boolean;
  limit: number;
  /** Rows to skip (operator paging); prefer `after` for deep pages. */
  offset?: number;
  /** Keyset cursor from the previous page (`updatedAt` and `key` of its last row). */
  after?: { updatedAt: number; key: string };
}

export interface ListDeliveriesQuery {
  sessionKey?: string;
  runId?: string;
  status?: DeliveryStatus;
  limit?: number;
}

/**
 * Where the gateway keeps everything. Two implementations pass one contract suite: `createSqliteStore` (default)
 * and `createMemoryStore` (tests). Every method is a single small operation: no whole-store rewrites.
 */
export interface SessionStore {
  readonly kind: string;
  /** Best-effort filesystem location of a transcript (for `transcriptPath`), if the store has one. */
  transcriptPath?(sessionId: string): string | undefined;

  getEntry(key: string): Promise<StoredEntry | undefined>;
  findEntriesBySessionId(sessionId: string): Promise<StoredEntry[]>;
  findEntriesByLabel(label: string): Promise<StoredEntry[]>;
  putEntry(entry: StoredEntry): Promise<void>;
  deleteEntry(key: string, options?: { transcript?: boolean }): Promise<boolean>;
  /** Newest `updatedAt` first (ties by key). */
  listEntries(query: ListEntriesQuery): Promise<StoredEntry[]>;
  countEntries(): Promise<number>;

  /** Appends and returns the message with its sequence number. */
  appendMessage(sessionKey: string, message: TranscriptMessage): Promise<StoredMessage>;
  /** The newest `limit` messages before `beforeSeq` (exclusive), oldest first. Cost ∝ limit. */
  readMessages(sessionKey: string, options: { limit: number; beforeSeq?: number }): Promise<StoredMessage[]>;
  countMessages(sessionKey: string): Promise<number>;

  putRun(run: RunRecord): Promise<void>;
  getRun(runId: string): Promise<RunRecord | undefined>;
  findRunByIdempotencyKey(idempotencyKey: string): Promise<RunRecord | undefined>;
  listRunsByStatus(statuses: readonly RunStatus[]): Promise<RunRecord[]>;
  /** Runs with a `followUp` not yet marked done. */
  listPendingFollowUps(): Promise<RunRecord[]>;

  /** Inserts unless a record with the same idempotency key exists; returns the stored one either way. */
  enqueueDelivery(record: DeliveryRecord): Promise<{ record: DeliveryRecord; created: boolean }>;
  putDelivery(record: DeliveryRecord): Promise<void>;
  getDelivery(id: string): Promise<DeliveryRecord | undefined>;
  listDeliveries(query: ListDeliveriesQuery): Promise<DeliveryRecord[]>;
  /** Queued deliveries, soonest `nextAttemptAt` first. */
  listQueuedDeliveries(limit: number): Promise<DeliveryRecord[]>;

  putRoute(route: RouteRecord): Promise<void>;
  listRoutes(sessionKey: string): Promise<RouteRecord[]>;

  putSubagent(record: SubagentRecord): Promise<void>;
  getSubagent(childKey: string): Promise<SubagentRecord | undefined>;
  listSubagents(query: {
    requesterKey?: string;
    statuses?: readonly SubagentStatus[];
  }): Promise<SubagentRecord[]>;
  /** Records with `archiveAt <= now` whose child is not yet archived. */
  listArchiveDue(now: number): Promise<SubagentRecord[]>;
  nextArchiveAt(): Promise<number | undefined>;

  putThreadBinding(record: ThreadBindingRecord): Promise<void>;
  getThreadBinding(
    channel: string,
    accountId: string,
    threadId: string,
  ): Promise<ThreadBindingRecord | undefined>;
  listThreadBindings(query?: { sessionKey?: string }): Promise<ThreadBindingRecord[]>;
  deleteThreadBinding(channel: string, accountId: string, threadId: string): Promise<boolean>;

  close(): Promise<void>;
}
