import type { SessionKind, TranscriptMessage } from "@sessions/core";
import type {
  DeliveryRecord,
  DeliveryStatus,
  RouteRecord,
  RunRecord,
  RunStatus,
  RunUsage,
  StoredEntry,
  StoredMessage,
  SubagentRecord,
  SubagentStatus,
  ThreadBindingRecord,
} from "./records.js";

export * from "./records.js";

/** Filters, order and paging of `listEntries` (newest `updatedAt` first unless `order` says `key`). */
export interface ListEntriesQuery {
  /** Only these agents. */
  agentIds?: readonly string[] | undefined;
  kinds?: readonly SessionKind[] | undefined;
  spawnedBy?: string | undefined;
  label?: string | undefined;
  /** Case-insensitive substring of key, label or displayName. */
  search?: string | undefined;
  /** Only entries with `updatedAt >= updatedSince`. */
  updatedSince?: number | undefined;
  includeArchived?: boolean | undefined;
  limit: number;
  /** Rows to skip (operator paging); prefer `after` for deep pages. */
  offset?: number | undefined;
  /** Keyset cursor from the previous page (`updatedAt` and `key` of its last row). */
  after?: { updatedAt: number; key: string } | undefined;
  /**
   * `updatedAt` (the default): newest first, ties by key. `key`: by key, ascending, in code point order (the byte
   * order of UTF-8). Keys never change, so a walk in key order paged with `afterKey` never skips or repeats a row
   * that exists throughout, whatever is written between its pages.
   */
  order?: "updatedAt" | "key" | undefined;
  /** Only keys after this one, in key order: the last key of the previous page of a walk in key order. */
  afterKey?: string | undefined;
}

/**
 * What `searchSessions` looks for, and in which sessions. Visibility is part of the query: a session outside
 * `keys`, `agentIds`, `kinds` (or in `excludeKeys`, or archived) never matches, and is never counted in `hasMore`.
 */
export interface SearchSessionsQuery {
  /**
   * The user's text. Its words (`searchTerms` of `@sessions/core`: letters and digits, lowercased; any query syntax
   * is plain text) must all appear in one message, or all in the session's key, label and display name. A word of
   * 3+ characters also matches longer words it starts. Text without a word matches nothing.
   */
  text: string;
  /** Only these sessions. */
  keys?: readonly string[] | undefined;
  /** Only sessions of these agents. */
  agentIds?: readonly string[] | undefined;
  kinds?: readonly SessionKind[] | undefined;
  /** Never these sessions. */
  excludeKeys?: readonly string[] | undefined;
  /** Only sessions with `updatedAt >= updatedSince`. */
  updatedSince?: number | undefined;
  includeArchived?: boolean | undefined;
  limit: number;
  /** Results to skip: the page starts after the first `offset` results. */
  offset?: number | undefined;
  /** Best-matching messages returned per session (default 1; 0 for none). */
  messagesPerSession?: number | undefined;
  /**
   * Most matching messages ranked (default `SEARCH_MAX_MESSAGES` of `@sessions/core`: 20,000), which bounds the cost of a query whose words
   * are in most messages: beyond it, only the messages of the most recent sessions in scope are ranked (newest
   * first; "recent" as the store can tell cheaply: created on SQLite and in memory, updated on Postgres), and the
   * page says `truncated`.
   */
  maxMessages?: number | undefined;
}

/** A message that matched a search: its seq, role, time, and a snippet with the matching words' ranges. */
export interface SearchMessageMatch {
  seq: number;
  role: string;
  ts?: number | undefined;
  /** At most 160 characters around the first match (`searchSnippet` of `@sessions/core`). */
  snippet: string;
  /** `[start, end)` ranges of `snippet` that matched. */
  highlights: [number, number][];
}

/** One session a search found. */
export interface SessionSearchHit {
  entry: StoredEntry;
  /**
   * Higher ranks first (ties: newer `updatedAt`, then key). `1 +` when the key, label or display name matched, plus
   * the best message's relevance mapped into [0, 1) (the store's own measure: BM25, `ts_rank`). Comparable within
   * one search only.
   */
  score: number;
  /** How many of its messages matched (of those ranked). */
  matchedMessages: number;
  /** Its best-matching messages, best first (newer first on ties), at most `messagesPerSession`. */
  messages: SearchMessageMatch[];
}

/** One page of a search: the hits, best first, and whether more follow. */
export interface SessionSearchPage {
  hits: SessionSearchHit[];
  hasMore: boolean;
  /** More messages in scope matched than were ranked (`maxMessages`): the hits come from the most recent ones. */
  truncated: boolean;
}

/** Filters of `listDeliveries`. */
export interface ListDeliveriesQuery {
  sessionKey?: string | undefined;
  runId?: string | undefined;
  status?: DeliveryStatus | undefined;
  limit?: number | undefined;
}

/** A named, time-limited claim: one owner at a time; another may steal it once `expiresAt` has passed. */
export interface Lease {
  name: string;
  owner: string;
  acquiredAt: number;
  expiresAt: number;
  /** Who holds it, for people reading an error (pid, host, …). */
  data?: Record<string, unknown> | undefined;
}

/** Input of `acquireLease`: a named lease, its would-be owner and time to live. */
export interface AcquireLease {
  name: string;
  owner: string;
  ttlMs: number;
  now: number;
  data?: Record<string, unknown> | undefined;
  /**
   * Another owner's lease is taken only when it expired at or before this time (default `now`). A gateway passes
   * `now` less a margin for clocks that run at different rates, so it takes a lease over only once its holder has
   * surely stopped acting under it; and nothing older than when it last reached the store after an outage.
   */
  lapsedBefore?: number | undefined;
}

/** The lease taken, or the holder that has it. */
export type AcquireLeaseResult = { acquired: true; lease: Lease } | { acquired: false; holder: Lease };

/** Input of `claimDeliveries`: which queued deliveries a gateway takes, and for how long. */
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
  /** The entry of a stored key, if any. */
  getEntry(key: string): Promise<StoredEntry | undefined>;
  /** Entries whose `sessionId` matches (normally one). */
  findEntriesBySessionId(sessionId: string): Promise<StoredEntry[]>;
  /** Entries with this label. */
  findEntriesByLabel(label: string): Promise<StoredEntry[]>;
  /** Creates or replaces an entry. */
  putEntry(entry: StoredEntry): Promise<void>;
  /** Deletes an entry (and its transcript unless `transcript: false`); false when there was none. */
  deleteEntry(key: string, options?: { transcript?: boolean | undefined }): Promise<boolean>;
  /** Newest `updatedAt` first (ties by key), or by key (`order: "key"`). */
  listEntries(query: ListEntriesQuery): Promise<StoredEntry[]>;
  /** How many sessions are stored. */
  countEntries(): Promise<number>;
  /** Sessions matching a search, best first, one page (see `SearchSessionsQuery`). */
  searchSessions(query: SearchSessionsQuery): Promise<SessionSearchPage>;
  /** The agent ids of stored sessions (archived ones too), each once, in no particular order. */
  listAgentIds(): Promise<string[]>;

  /** Appends and returns the message with its sequence number. */
  appendMessage(sessionKey: string, message: TranscriptMessage): Promise<StoredMessage>;
  /** The newest `limit` messages before `beforeSeq` (exclusive), oldest first. Cost ∝ limit. */
  readMessages(
    sessionKey: string,
    options: { limit: number; beforeSeq?: number | undefined },
  ): Promise<StoredMessage[]>;
  /** How many messages a session's transcript holds. */
  countMessages(sessionKey: string): Promise<number>;

  /** Creates or replaces a run. */
  putRun(run: RunRecord): Promise<void>;
  /**
   * Records a run's end, only while the stored run is still under way (`queued` or `running`) and `owner`'s:
   * false, and nothing written, when it has ended already (another gateway recovered it while this one stalled)
   * or changed hands. The fence that keeps a gateway waking from a pause from overwriting that end. A queued run
   * starts through it too (`run` then has status `running`), so a start never overwrites such an end either.
   */
  endRun(run: RunRecord, owner: string | undefined): Promise<boolean>;
  /** A run by id, if any. */
  getRun(runId: string): Promise<RunRecord | undefined>;
  /** The run an idempotency key already started, if any. */
  findRunByIdempotencyKey(idempotencyKey: string): Promise<RunRecord | undefined>;
  /** Runs in any of these statuses. */
  listRunsByStatus(statuses: readonly RunStatus[]): Promise<RunRecord[]>;
  /** Runs with a `followUp` not yet marked done. */
  listPendingFollowUps(): Promise<RunRecord[]>;
  /**
   * The runs of one tree: the root `rootRunId` first, then every run whose `rootRunId` it is, oldest first (ties by
   * run id); at most `limit`.
   */
  listRunTree(rootRunId: string, limit: number): Promise<RunRecord[]>;

  /** Inserts unless a record with the same idempotency key exists; returns the stored one either way. */
  enqueueDelivery(record: DeliveryRecord): Promise<{ record: DeliveryRecord; created: boolean }>;
  /** Replaces an outbox record. */
  putDelivery(record: DeliveryRecord): Promise<void>;
  /**
   * Records an attempt's outcome, only while the stored delivery is still `queued` and claimed by `owner` or by
   * no one: false, and nothing written, when another gateway has claimed it since (this one's claim lapsed).
   */
  finishDelivery(record: DeliveryRecord, owner: string): Promise<boolean>;
  /** An outbox record by id, if any. */
  getDelivery(id: string): Promise<DeliveryRecord | undefined>;
  /** Outbox records matching the query. */
  listDeliveries(query: ListDeliveriesQuery): Promise<DeliveryRecord[]>;
  /** Queued deliveries, soonest `nextAttemptAt` first. */
  listQueuedDeliveries(limit: number): Promise<DeliveryRecord[]>;

  /** Records the route a session was last reached on (per channel and account). */
  putRoute(route: RouteRecord): Promise<void>;
  /** A session's recorded routes. */
  listRoutes(sessionKey: string): Promise<RouteRecord[]>;

  /** Creates or replaces a sub-agent record. */
  putSubagent(record: SubagentRecord): Promise<void>;
  /** The sub-agent record of a child session, if any. */
  getSubagent(childKey: string): Promise<SubagentRecord | undefined>;
  /** Sub-agent records matching the query. */
  listSubagents(query: {
    requesterKey?: string | undefined;
    statuses?: readonly SubagentStatus[] | undefined;
  }): Promise<SubagentRecord[]>;
  /** Records with `archiveAt <= now` whose child is not yet archived. */
  listArchiveDue(now: number): Promise<SubagentRecord[]>;
  /** The earliest archive deadline still pending, if any. */
  nextArchiveAt(): Promise<number | undefined>;

  /** Creates or replaces a thread binding. */
  putThreadBinding(record: ThreadBindingRecord): Promise<void>;
  /** The binding of a platform thread, if any. */
  getThreadBinding(
    channel: string,
    accountId: string,
    threadId: string,
  ): Promise<ThreadBindingRecord | undefined>;
  /** Thread bindings, optionally of one session. */
  listThreadBindings(query?: { sessionKey?: string | undefined }): Promise<ThreadBindingRecord[]>;
  /** Removes a thread binding; false when there was none. */
  deleteThreadBinding(channel: string, accountId: string, threadId: string): Promise<boolean>;
}

/** The start of a run as one unit of work (see `store/run-units.ts`, which does it through `transaction`). */
export interface RunStartUnit {
  sessionKey: string;
  /** A run with this key already: nothing is written, and that run is the answer. */
  idempotencyKey?: string | undefined;
  /** The run's id: `runId` when set; else `preferredRunId` unless a run already has it; else `freshRunId`. */
  runId?: string | undefined;
  preferredRunId?: string | undefined;
  freshRunId: string;
  /**
   * The session entry (if there is one) gets this `updatedAt`, unless it is already less than a second behind it
   * (`TOUCH_GRAIN_MS`): a busy session's starts do not each rewrite its entry (nor do its runs' ends).
   */
  now: number;
  /** The input message, appended to the transcript with the run's id. */
  input: TranscriptMessage;
  /** The run as recorded, but for its id, `idempotencyKey` and `inputSeq` (the input's seq), which the unit adds. */
  run: Omit<RunRecord, "runId" | "inputSeq" | "idempotencyKey">;
  /**
   * A lease the run needs to start now (the session's lane in a cluster), tried once with the start as
   * `acquireLease` does. Not taken: the run is recorded `queued`, without `startedAt`, whatever `run` says.
   */
  lease?: AcquireLease | undefined;
}

/**
 * What a run's start recorded: a new run, or the first run of a repeated idempotency key (nothing written).
 * `lease`: how the asked-for lease went, when it was tried (a repeat may have taken it: give it back).
 */
export type RunStartResult =
  | {
      created: true;
      run: RunRecord;
      input: StoredMessage;
      entry: StoredEntry | undefined;
      lease?: AcquireLeaseResult | undefined;
    }
  | { created: false; run: RunRecord; lease?: AcquireLeaseResult | undefined };

/** What the end of a run does to its session entry, if the session has one. */
export interface EntryRunDelta {
  /** The end's time: the entry's `updatedAt` unless that is less than a second behind it (`TOUCH_GRAIN_MS`). */
  updatedAt: number;
  /** Added to the entry's token counts (a count absent here is left as it is). */
  tokens?: RunUsage | undefined;
  systemSent?: true | undefined;
  /** `true` sets the flag; `false` clears it where the entry has it. */
  abortedLastRun?: boolean | undefined;
}

/** The end of a run as one unit of work: the reply, the session's usage, the reply's delivery, the final record. */
export interface RunEndUnit {
  /** The run's final record; it is written only if the run is still `queued`/`running` and `owner`'s (as `endRun`). */
  run: RunRecord;
  owner: string | undefined;
  /** Appended to the transcript. */
  reply?: TranscriptMessage | undefined;
  entry: EntryRunDelta;
  /** Enqueued as `enqueueDelivery` does: once per idempotency key. */
  delivery?: DeliveryRecord | undefined;
  /**
   * A lease given up with the end (the session's lane in a cluster), as `releaseLease` does: in the same
   * transaction, or right after it. Kept when the run was ended elsewhere.
   */
  releaseLease?: { name: string; owner: string } | undefined;
  /**
   * The lease the run executed under (the session's lane in a cluster), as its fencing token: the end is written
   * only while no other owner holds it. An end that arrives after another gateway took the lane (it was held up in
   * a partition past the lease) is refused as a fenced one is (`ended: false`), and nothing of it is written.
   */
  fence?: LeaseFence | undefined;
  /**
   * The next run of the session, queued behind this one on the same gateway, as it starts (`running`): recorded in
   * the same unit, only while it is still `queued` and `owner`'s (as `endRun` would), so that the lane passes to it
   * without a write of its own. `nextStarted` in the result says whether it was.
   */
  next?: RunRecord | undefined;
}

/** A lease as a fencing token: a write carrying it lands only while no other owner holds the lease. */
export interface LeaseFence {
  name: string;
  owner: string;
}

/** `ended: false`: the run was ended elsewhere (or changed hands), and nothing of this end was written. */
export type RunEndResult =
  | {
      ended: true;
      delivery?: { record: DeliveryRecord; created: boolean } | undefined;
      /** The session's entry as the end left it (undefined: the session has none, or the store did not say). */
      entry?: StoredEntry | undefined;
      /** Whether `next` was recorded as started (false: it was no longer queued, or not the owner's). */
      nextStarted?: boolean | undefined;
    }
  | { ended: false };

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
   * (a throw out of it undoes only its own writes). Whether units run one at a time (SQLite, memory) or side by
   * side (Postgres, where units touching the same record take turns) is the store's business.
   */
  transaction<T>(work: (tx: StoreOps) => Promise<T>): Promise<T>;
  /**
   * Optional: a run's start as one native operation (one round trip), doing exactly what `recordRunStart` in
   * `store/run-units.ts` does through `transaction`, under the same record locks. Absent, or answering `undefined`
   * (it wrote nothing and declines this one), the gateway does it through `transaction`.
   */
  recordRunStart?(unit: RunStartUnit): Promise<RunStartResult | undefined>;
  /** Optional: a run's end as one native operation; see `recordRunStart`. */
  recordRunEnd?(unit: RunEndUnit): Promise<RunEndResult | undefined>;
  /**
   * Committed changes, from this process and (for networked stores) every other one sharing the database.
   * A listener that throws is ignored: the write stands and the other listeners still hear of it.
   */
  watch(listener: (change: StoreChange) => void): () => void;
  /**
   * Optional, for stores several processes share: sends a JSON-serialisable `message` to every `subscribe`
   * listener of every process on the store (this process's own at once, possibly the object itself: treat what
   * you hear as read-only). Not stored: at most once, heard only by whoever listens at that moment; messages one
   * process publishes arrive in the order it published them. Gateways use it to stream run events to clients
   * connected elsewhere. Stores for one process leave it out.
   */
  publish?(message: unknown): void;
  /** Hears what `publish` sends (see there); returns the unsubscribe. Present exactly when `publish` is. */
  subscribe?(listener: (message: unknown) => void): () => void;

  /** Takes `name` if it is free, expired, or already `owner`'s (then it is renewed); else reports the holder. */
  acquireLease(input: AcquireLease): Promise<AcquireLeaseResult>;
  /** Extends `owner`'s lease to `now + ttlMs`; false when it is no longer `owner`'s (lost or stolen). */
  renewLease(name: string, owner: string, ttlMs: number, now: number): Promise<boolean>;
  /** Gives the lease up; false when `owner` did not hold it. */
  releaseLease(name: string, owner: string): Promise<boolean>;
  /**
   * A lease's current holder, if any. Inside a unit of work the read joins it, and a store that other processes
   * write to keeps the lease as read until the unit ends (Postgres: `FOR SHARE`), so that a write fenced by it
   * cannot be overtaken by a takeover.
   */
  getLease(name: string): Promise<Lease | undefined>;
  /** Leases whose name starts with `prefix`, by name; lapsed ones not yet taken over are included. */
  listLeases(prefix: string): Promise<Lease[]>;
  /**
   * Claims up to `limit` queued deliveries due by `now` whose lease is free or expired, for `owner` until
   * `now + ttlMs` (soonest due first). Two owners never hold the same delivery at once.
   */
  claimDeliveries(input: ClaimDeliveries): Promise<DeliveryRecord[]>;

  /** Closes the store (after which every call fails). */
  close(): Promise<void>;
}

/** The `StoreOps` that write: a store wraps these for write errors; tests count them. */
export const STORE_WRITES = [
  "putEntry",
  "deleteEntry",
  "appendMessage",
  "putRun",
  "endRun",
  "enqueueDelivery",
  "putDelivery",
  "finishDelivery",
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
