import type { Logger, SessionsConfig } from "@sessions/core";
import type { ChannelAdapterV1, DeliveryTarget } from "./adapter.js";
import type { Clock, DeadlineTimer } from "./clock.js";
import type { GatewayEvent } from "./events.js";
import type { Lanes } from "./lanes.js";
import type { Lifecycle } from "./lifecycle.js";
import type { RemoteAgents } from "./remotes/remote-agents.js";
import type { LaneLost, RunTable } from "./run-table.js";
import type { AgentRunner, RunnerTool } from "./runner/types.js";
import type {
  AcquireLease,
  DeliveryKind,
  DeliveryRecord,
  LeaseFence,
  RunRecord,
  RunToolsRecord,
  SessionStore,
  StoreOps,
  StreamPreview,
} from "./store/types.js";

/** The chat platforms this gateway can deliver to, by canonical channel id, and the aliases users type. */
export interface Channels {
  readonly adapters: ReadonlyMap<string, ChannelAdapterV1>;
  readonly aliases: Readonly<Record<string, string>>;
}

/** Work the gateway started on its own (follow-ups, sweeps, announces): tracked so `close()` can drain it. */
export interface Tasks {
  track<T>(promise: Promise<T>): Promise<T>;
  readonly closed: boolean;
}

/** Who is calling a session tool: the requester session and what it may see and do (stored as it is with a run). */
export type ToolContext = RunToolsRecord;

/** A delivery written inside a unit of work: call `committed()` once the unit has committed, to send it. */
export interface RecordedDelivery {
  record: DeliveryRecord;
  committed(): void;
}

/** A delivery to store and send. */
export interface EnqueueDelivery {
  /** The record's id when it is known beforehand (an announce's: see `a2a/receipt.ts`); else a fresh one. */
  id?: string | undefined;
  idempotencyKey: string;
  kind: DeliveryKind;
  sessionKey: string;
  runId?: string | undefined;
  target: DeliveryTarget;
  text: string;
  /** Recorded as `suppressed` right away (with this reason) instead of being sent. */
  suppressedReason?: string | undefined;
  /** The messages the reply was streamed into (`DeliveryRecord.stream`). */
  stream?: StreamPreview | undefined;
}

/** The durable outbox (`delivery/outbox.ts`): every delivery is stored before it is attempted. */
export interface Outbox {
  /** Stores a delivery and starts sending it (deduplicated by its idempotency key). */
  enqueue(input: EnqueueDelivery): Promise<DeliveryRecord>;
  /** Writes a delivery through `tx` (the store itself by default), claimed by this gateway, not yet sent. */
  record(input: EnqueueDelivery, tx?: StoreOps): Promise<RecordedDelivery>;
  /** The record a delivery is stored as, for a unit of work that writes it itself. */
  draft(input: EnqueueDelivery): DeliveryRecord;
  /** After the unit that stored a drafted delivery committed: a new one starts sending (or is reported). */
  committed(enqueued: { record: DeliveryRecord; created: boolean }): void;
  /** Sends everything queued (at start, after a restart, after recovery freed claims). */
  replay(): Promise<void>;
  /** Waits for attempts under way, at most `timeoutMs`. */
  drain(timeoutMs?: number): Promise<void>;
  stop(): void;
}

/** The lane lease a task runs under, which it may give up with its last write (`released` says it did). */
export interface LaneHold {
  readonly lease: { name: string; owner: string };
  /** Aborts (with `LaneLost`) when the lane is lost: the run stops at once, and writes nothing under it. */
  readonly signal?: AbortSignal | undefined;
  /**
   * Whether this gateway may still act under the lane right now (before its deadline by its own clock): asked
   * before a side effect no store write fences, such as an edit of a streamed reply.
   */
  valid?(): boolean;
  /**
   * Asked as the run's end is written: true when the lane may pass to the next run of the session waiting here (the
   * end then keeps the lease, and that run executes under it without a round trip); false: the end gives it up.
   */
  passOn?(): boolean;
  /** The end that kept the lease (`passOn`) is recorded: the lane goes to the next run here. */
  passed?(): void;
  /** The end gave the lease up with it. */
  released(): void;
}

/** The lane a run executes under, as its tools see it: the fence of their transcript lines, and how to stop. */
export interface RunLane {
  readonly lease: LeaseFence;
  /** The run's: aborted once it is stopped (its lane's deadline passed, a timeout, an abort). */
  readonly signal: AbortSignal;
  /** Stops the run at once: a write under the lane was refused (another gateway holds it now). */
  lost(reason: LaneLost): void;
}

/** What the run modules use of cluster mode (`cluster/`): the session lanes shared by every gateway on the store. */
export interface ClusterRuntime {
  /**
   * Runs `task` while this gateway holds the session's lane across the cluster (`taken`: by the run's start); the
   * task may give the lane up with its last write (`hold`).
   */
  lane<T>(sessionKey: string, task: (hold?: LaneHold) => Promise<T>, taken?: AcquireLease): Promise<T>;
  /**
   * The session's lane lease as this gateway asks for it now: a run whose start takes it is recorded `running` at
   * once; one whose start cannot is `queued` until it gets the lane.
   */
  laneLease(sessionKey: string): AcquireLease;
  /** Gives back a lane a run's start took for a run that was not created after all. */
  giveLane(sessionKey: string): Promise<void>;
  /** Gives back the session's lane kept for a next run here when none is running, waiting or being recorded. */
  giveKeptLane(sessionKey: string): void;
  /** Runs a short `task` holding the lease `name` across the cluster (one gateway at a time). */
  exclusive<T>(name: string, task: () => Promise<T>): Promise<T>;
  /**
   * The time before which another gateway's lease counts as lapsed: now less the grace for clocks, or 0 (none)
   * while this gateway's own contact with the store is too recent to judge by (see `StoreContact`).
   */
  lapsedBefore(): number;
}

/** Per-key locks for read-modify-write steps the store's transactions do not cover (they span adapter calls). */
export interface Locks {
  readonly bindings: Lanes;
  readonly idempotency: Lanes;
  readonly spawns: Lanes;
  /** One run start at a time per budgeted tree (its root's id), so that its budget is drawn atomically. */
  readonly budgets: Lanes;
}

/**
 * What every feature module receives: the shared services of one gateway, passed in, never captured. A module
 * reaches another module only through its exported functions, each of which takes this context.
 */
export interface GatewayContext {
  /** This gateway instance's id: runs and outbox claims carry it; its lease says it is alive. */
  readonly owner: string;
  readonly config: SessionsConfig;
  readonly store: SessionStore;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly runner: AgentRunner;
  /** The remote agents of `agents.remotes`: their sessions' runs go to them over A2A instead of `runner`. */
  readonly remotes: RemoteAgents;
  readonly channels: Channels;
  readonly outbox: Outbox;
  readonly runs: RunTable;
  readonly locks: Locks;
  readonly tasks: Tasks;
  readonly timers: { readonly archive: DeadlineTimer; readonly bindings: DeadlineTimer };
  /** The session tools of a run, bound to `tool.requesterKey` (wired in by `createGateway`: tools start runs). */
  toolsFor(tool: ToolContext, run: RunRecord, lane?: RunLane): RunnerTool[];
  /** Extra tools every agent gets (filtered for sub-agents by `tools.subagents.tools`). */
  readonly extraTools: readonly RunnerTool[];
  /** Model ids `sessions_spawn({ model })` accepts; undefined = any. */
  readonly knownModels: readonly string[] | undefined;
  /** How many recent messages a run sees. */
  readonly historyWindow: number;
  /** Set when several gateways share the store: session lanes then hold across all of them. */
  readonly cluster?: ClusterRuntime | undefined;
  emit(event: GatewayEvent): void;
  /** False while no one would hear an event (no subscriber, no cluster): hot paths then skip building it. */
  listening?(): boolean;
  /** The hooks of runs and deliveries: follow-ups, tracing and event routing subscribe to them. */
  readonly lifecycle: Lifecycle;
}
