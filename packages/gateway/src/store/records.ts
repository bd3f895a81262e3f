import type {
  BudgetLimits,
  DeliveryContext,
  DeliveryKind,
  SessionEntry,
  SessionKind,
  TranscriptMessage,
  Visibility,
} from "@sessions/core";

// The records a store keeps (sessions, transcripts, runs, the outbox, routes, sub-agents, thread bindings): what
// every store reads and writes, whatever it keeps them in. Its operations are in `types.ts`.

/** A session entry as stored: the spec's fields plus the kind computed when it was written (for indexed filters). */
export interface StoredEntry extends SessionEntry {
  kind: SessionKind;
  /** Once set (by a sandboxed caller, a sandboxed parent or token), every run of this session is clamped. */
  sandboxed?: boolean | undefined;
  /** What this session's tools may see, set by an operator with `sessions.patch`; wins over the configured visibility. */
  visibility?: Visibility | undefined;
  /** A session of a remote agent (`agent:<remote>:a2a:<name>`): the A2A context it is, once the remote named it. */
  a2a?: RemoteContext | undefined;
}

/** The A2A context a session of a remote agent is, and the task the remote left waiting for an answer. */
export interface RemoteContext {
  contextId: string;
  /** Set while the remote's last task waits for input (`input-required`): the next message answers it. */
  taskId?: string | undefined;
  /**
   * The task a run has under way at the remote, from the remote's first word until the run ends: a run that a
   * crash cuts short is ended by recovery, which cancels this task.
   */
  running?: { runId: string; taskId: string } | undefined;
}

/** A transcript message with its per-session sequence number (1, 2, 3, …). */
export type StoredMessage = TranscriptMessage & { seq: number };

/** Where a run is: waiting for its session's lane, running, or how it ended. */
export type RunStatus = "queued" | "running" | "ok" | "error" | "timeout" | "aborted";
/** Why a run exists: a chat or agent call, an inbound message, an inter-session send, a reply-back turn, an announce, a sub-agent. */
export type RunKind =
  | "chat"
  | "agent"
  | "inter_session"
  | "ping_pong"
  | "announce"
  | "subagent"
  | "subagent_announce";

/** Token counts (and cost, when known) a run reported. */
export interface RunUsage {
  inputTokens?: number | undefined;
  outputTokens?: number | undefined;
  totalTokens?: number | undefined;
  costUsd?: number | undefined;
}

/**
 * What made a run: a wire or API request, an adapter's inbound message, a session tool call of another run
 * (`sessions_send`, `sessions_spawn`), or work that follows another run's end (a reply-back turn, an announce).
 */
export type RunCause =
  | { kind: "request"; method: string }
  | { kind: "inbound"; channel: string; messageId?: string | undefined }
  | { kind: "tool"; runId: string; toolCallId: string; tool: string }
  | {
      kind: "follow_up";
      runId: string;
      step: "reply_back" | "announce" | "subagent_announce";
      turn?: number | undefined;
    };

/** A call of a run that the tree's guards refused: why, the limit, and the sessions the request went through. */
export interface GuardRecord {
  code: "max_hops" | "loop" | "budget_exceeded";
  tool: string;
  limit: number;
  chain: string[];
}

/**
 * Who is calling a session tool: the requester session and what it may see and do (the gateway's `ToolContext`),
 * as recorded with a run (see `RunRecord.rerun`).
 */
export interface RunToolsRecord {
  requesterKey: string;
  agentId: string;
  sandboxed: boolean;
  depth: number;
  isSubagent: boolean;
  /** The session's own visibility override (`sessions.patch`), taken when the run starts. */
  visibility?: Visibility | undefined;
  /** Outside any run (`sessions.tools.call`): the trace context the runs its tools start continue. */
  traceparent?: string | undefined;
}

/**
 * What a run needs besides its record and input message to run on another gateway: recorded with its start in a
 * cluster, so that when its gateway loses the store mid-run, the gateway that takes the session over runs it again.
 */
export interface RerunRecord {
  system?: string[] | undefined;
  /** null: the run has no session tools (announce steps). */
  tools: RunToolsRecord | null;
  timeoutMs?: number | undefined;
  model?: string | undefined;
  thinking?: string | undefined;
  subagentSlot?: boolean | undefined;
}

/** A stored run: its session, input, status, reply, usage and follow-up work. */
export interface RunRecord {
  runId: string;
  sessionKey: string;
  agentId: string;
  kind: RunKind;
  status: RunStatus;
  createdAt: number;
  startedAt?: number | undefined;
  endedAt?: number | undefined;
  error?: string | undefined;
  /** The text of this run's final assistant message. */
  reply?: string | undefined;
  idempotencyKey?: string | undefined;
  /** Deliver the reply to this context when the run ends (send policy checked at delivery). */
  deliverTo?: DeliveryContext | undefined;
  usage?: RunUsage | undefined;
  /** The seq of the message that started the run. */
  inputSeq?: number | undefined;
  /** Work that must follow the run even across a restart (the agent-to-agent loop and announce). */
  followUp?:
    | { kind: "agent_to_agent"; requesterKey: string; requesterChannel: string; request: string }
    | undefined;
  followUpDone?: boolean | undefined;
  /** The gateway instance that runs it; recovery takes over only runs whose owner's lease has lapsed. */
  owner?: string | undefined;
  /** What made this run (absent on runs recorded before causes were). */
  cause?: RunCause | undefined;
  /** The first run of this run's tree; absent on a root (its tree's id is its own `runId`). */
  rootRunId?: string | undefined;
  /** How many messages (sends, spawns) from its tree's first run this run is; absent: 0. */
  hops?: number | undefined;
  /**
   * The budget its whole tree shares (set on the root, copied to every run of the tree); absent: unlimited. Every
   * run of the tree draws from it when it starts (`runs/budget.ts`).
   */
  budget?: BudgetLimits | undefined;
  /**
   * The run answers a user's message (`chat.send`, `agent`, an adapter's inbound message): the session's queue mode
   * applies to it (merged, steered, interrupting). Absent on sends between sessions, reply-backs, announces.
   */
  userMessage?: true | undefined;
  /**
   * Set when the run never ran because its message was taken by another run of its session (queue modes `collect`,
   * `interrupt`, `steer`): that run's reply answers it. Such a run ends `ok` without a reply of its own.
   */
  mergedInto?: string | undefined;
  /** Its calls the tree's guards refused (hop limit, loop), recorded with its end (at most 20). */
  guards?: GuardRecord[] | undefined;
  /**
   * The W3C `traceparent` the run's tree continues from it: its own `invoke_agent` span's when the gateway that
   * recorded it traces, else the one it was started with (a caller's, or the run that caused it). Runs it causes,
   * and its deliveries, join that trace on any gateway and after a restart.
   */
  traceparent?: string | undefined;
  /**
   * Recorded in a cluster: what another gateway needs to run it again if its own gateway loses the store while it
   * is under way (its lease lapses, `runs/recovery.ts`). Absent on runs recorded outside a cluster.
   */
  rerun?: RerunRecord | undefined;
  /** How many times the run was started again after its gateway lost the store mid-run (absent: never). */
  repeats?: number | undefined;
  /**
   * The messages its reply streamed into so far (`delivery/streams.ts`), recorded as each is posted: its reply's
   * delivery edits them; a run that ends without a reply (recovery too) has them removed.
   */
  stream?: StreamPreview | undefined;
}

/** Where an outbox record is: `queued`, or how it ended. */
export type DeliveryStatus = "queued" | "delivered" | "suppressed" | "failed";
export type { DeliveryKind } from "@sessions/core";

/** A stored outbox record: the target, the text, attempts, status and the platform's receipt. */
export interface DeliveryRecord {
  id: string;
  /** Unique: enqueueing the same key twice returns the first record. */
  idempotencyKey: string;
  kind: DeliveryKind;
  sessionKey: string;
  runId?: string | undefined;
  channel: string;
  to: string;
  accountId?: string | undefined;
  threadId?: string | undefined;
  text: string;
  status: DeliveryStatus;
  attempts: number;
  nextAttemptAt: number;
  createdAt: number;
  updatedAt: number;
  lastError?: string | undefined;
  /** Platform message ids returned by the adapter. */
  receipt?: string[] | undefined;
  /**
   * The messages the reply was streamed into while its run wrote it: the delivery edits them into the reply (and
   * removes those it does not need) rather than post it again. With `text` empty it only removes them.
   */
  stream?: StreamPreview | undefined;
  /** The gateway instance attempting it right now, until `leaseUntil` (see `claimDeliveries`). */
  leaseOwner?: string | undefined;
  leaseUntil?: number | undefined;
}

/** Where a reply was streamed while its run wrote it, and the messages it posted there, in order. */
export interface StreamPreview {
  channel: string;
  to: string;
  accountId?: string | undefined;
  threadId?: string | undefined;
  messageIds: string[];
  /** The most characters one of its messages held: the reply is cut the same way when it edits them. */
  maxChars: number;
  /**
   * What each message showed when the stream ended (null: not known), in the preview the stream ends with only:
   * the reply's delivery leaves a message that already shows its piece as it is (no edit to the same text).
   */
  shown?: (string | null)[] | undefined;
}

/** The last route a session was reached on, per channel and account. */
export interface RouteRecord {
  sessionKey: string;
  channel: string;
  accountId: string;
  to: string;
  threadId?: string | undefined;
  updatedAt: number;
}

/** Where a sub-agent is: running, announcing its result, or done. */
export type SubagentStatus = "running" | "announcing" | "done";

/** A stored sub-agent: its requester, task, mode, cleanup, outcome and archive deadline. */
export interface SubagentRecord {
  childKey: string;
  requesterKey: string;
  runId: string;
  task: string;
  label?: string | undefined;
  mode: "run" | "session";
  cleanup: "delete" | "keep";
  status: SubagentStatus;
  createdAt: number;
  /**
   * The gateway instance that spawned it: until its run is recorded (its start follows the record), recovery leaves
   * the record alone while this gateway lives. Absent on records written before it was recorded.
   */
  owner?: string | undefined;
  endedAt?: number | undefined;
  outcome?: "ok" | "error" | "timeout" | "unknown" | undefined;
  error?: string | undefined;
  /** When the child session is archived (`cleanup: keep`). */
  archiveAt?: number | undefined;
  announceDeliveryId?: string | undefined;
}

/** A stored thread binding: a platform thread routed to a session, with its expiry. */
export interface ThreadBindingRecord {
  channel: string;
  accountId: string;
  threadId: string;
  sessionKey: string;
  to: string;
  parentTo?: string | undefined;
  boundAt: number;
  lastActivityAt: number;
  idleHours: number;
  maxAgeHours: number;
}
