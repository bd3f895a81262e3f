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
  /** Once set (by a sandboxed caller, a sandboxed parent or token), every run of this session is clamped. */
  sandboxed?: boolean;
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
  /** The gateway instance that runs it; recovery takes over only runs whose owner's lease has lapsed. */
  owner?: string;
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
  /** The gateway instance attempting it right now, until `leaseUntil` (see `claimDeliveries`). */
  leaseOwner?: string;
  leaseUntil?: number;
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

/** A named, time-limited claim: one owner at a time; another may steal it once `expiresAt` has passed. */
export interface Lease {
  name: string;
  owner: string;
  acquiredAt: number;
  expiresAt: number;
  /** Who holds it, for people reading an error (pid, host, …). */
  data?: Record<string, unknown>;
}

export interface AcquireLease {
  name: string;
  owner: string;
  ttlMs: number;
  now: number;
  data?: Record<string, unknown>;
}

export type AcquireLeaseResult = { acquired: true; lease: Lease } | { acquired: false; holder: Lease };

export interface ClaimDeliveries {
  owner: string;
  now: number;
  ttlMs: number;
  limit: number;
}

/**
 * What committed writes look like to watchers: enough to wake a wait or push an event, never the whole record.
 * Published only after the transaction that made the change has committed, once per change.
 */
export type StoreChange =
  | { type: "run"; runId: string; sessionKey: string; status: RunStatus }
  | { type: "entry"; key: string; op: "put" | "delete" }
  | { type: "delivery"; id: string; sessionKey: string; status: DeliveryStatus };

/** Reads and writes a unit of work may do. Inside `transaction` they all commit together or not at all. */
export interface StoreOps {
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
}

/**
 * Where the gateway keeps everything. Implementations pass one contract suite (`store.contract.ts`):
 * `createSqliteStore` (default), `createMemoryStore` (tests) and, for several gateways, a networked store.
 * Every method is a single small operation; `transaction` makes several of them one atomic unit of work.
 */
export interface SessionStore extends StoreOps {
  readonly kind: string;
  /** Best-effort filesystem location of a transcript (for `transcriptPath`), if the store has one. */
  transcriptPath?(sessionId: string): string | undefined;

  /**
   * Runs `work` as one transaction: every write through `tx` commits together, or none does if `work` throws.
   * Other callers never see a half-done unit: they wait for it, or read the committed state. Calls on the store
   * itself from inside `work` join the unit instead of waiting for it; a nested `transaction` is a savepoint
   * (a throw out of it undoes only its own writes). Transactions on one store run one at a time.
   */
  transaction<T>(work: (tx: StoreOps) => Promise<T>): Promise<T>;
  /**
   * Committed changes, from this process and (for networked stores) every other one sharing the database.
   * A listener that throws is ignored: the write stands and the other listeners still hear of it.
   */
  watch(listener: (change: StoreChange) => void): () => void;

  /** Takes `name` if it is free, expired, or already `owner`'s (then it is renewed); else reports the holder. */
  acquireLease(input: AcquireLease): Promise<AcquireLeaseResult>;
  /** Extends `owner`'s lease to `now + ttlMs`; false when it is no longer `owner`'s (lost or stolen). */
  renewLease(name: string, owner: string, ttlMs: number, now: number): Promise<boolean>;
  /** Gives the lease up; false when `owner` did not hold it. */
  releaseLease(name: string, owner: string): Promise<boolean>;
  getLease(name: string): Promise<Lease | undefined>;
  /** Leases whose name starts with `prefix`, by name; lapsed ones not yet taken over are included. */
  listLeases(prefix: string): Promise<Lease[]>;
  /**
   * Claims up to `limit` queued deliveries due by `now` whose lease is free or expired, for `owner` until
   * `now + ttlMs` (soonest due first). Two owners never hold the same delivery at once.
   */
  claimDeliveries(input: ClaimDeliveries): Promise<DeliveryRecord[]>;

  close(): Promise<void>;
}

/** The `StoreOps` that write: a store wraps these for write errors; tests count them. */
export const STORE_WRITES = [
  "putEntry",
  "deleteEntry",
  "appendMessage",
  "putRun",
  "enqueueDelivery",
  "putDelivery",
  "putRoute",
  "putSubagent",
  "putThreadBinding",
  "deleteThreadBinding",
] as const satisfies readonly (keyof StoreOps)[];

/** The `SessionStore` lease and claim calls, which write too. */
export const LEASE_WRITES = [
  "acquireLease",
  "renewLease",
  "releaseLease",
  "claimDeliveries",
] as const satisfies readonly (keyof SessionStore)[];
