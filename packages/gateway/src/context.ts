import type { Logger, SessionsConfig } from "@sessions/core";
import type { ChannelAdapterV1 } from "./adapter.js";
import type { Clock, DeadlineTimer } from "./clock.js";
import type { ClusterRuntime } from "./cluster/index.js";
import type { Outbox } from "./delivery/outbox.js";
import type { GatewayEvent } from "./gateway.js";
import type { Lanes } from "./lanes.js";
import type { AgentRunner, RunnerTool } from "./runner/types.js";
import type { RunTable } from "./runs/run-table.js";
import type { RunRecord, SessionStore } from "./store/types.js";

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

/** Per-key locks for read-modify-write steps the store's transactions do not cover (they span adapter calls). */
export interface Locks {
  readonly bindings: Lanes;
  readonly idempotency: Lanes;
  readonly spawns: Lanes;
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
  readonly channels: Channels;
  readonly outbox: Outbox;
  readonly runs: RunTable;
  readonly locks: Locks;
  readonly tasks: Tasks;
  readonly timers: { readonly archive: DeadlineTimer; readonly bindings: DeadlineTimer };
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
  /** Told of every run as soon as it is recorded, before it can emit an event (the server routes by it). */
  onRunCreated?(run: RunRecord): void;
}
