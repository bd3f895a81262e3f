import type {
  Budget,
  BudgetStatus,
  ChatType,
  DeliveryContext,
  GatewayMethodName,
  InboundMessage,
  Logger,
  MethodParams,
  QueueMode,
  ReceiveResult,
  SessionsConfig,
  SessionsConfigInput,
  SessionToolName,
  Visibility,
} from "@sessions/core";
import type { ChannelAdapterV1 } from "./adapter.js";
import type { Clock } from "./clock.js";
import type { ClusterOptions, ExclusiveConnection, HeldConnection } from "./cluster/index.js";
import type { OutboxOptions } from "./delivery/outbox.js";
import type { GatewayEvent } from "./events.js";
import type { LifecycleHooks } from "./lifecycle.js";
import type { RecordingSink } from "./runner/recording.js";
import type { AgentRunner, RunnerTool } from "./runner/types.js";
import type { GatewayServer, ListenOptions } from "./server/listen.js";
import type {
  DeliveryRecord,
  RunKind,
  RunRecord,
  SearchMessageMatch,
  SessionStore,
  StoredMessage,
} from "./store/types.js";

/**
 * The public shape of a gateway: its options, the object `createGateway` returns, its events and payloads.
 * The runtime behind it is composed in `create-gateway.ts` from the feature folders.
 */

export interface GatewayOptions {
  /** The sessions config (validated with the core schema; defaults filled in). */
  config?: SessionsConfigInput | undefined;
  /** Where everything is kept. Default: a SQLite file at `path`. */
  store?: SessionStore | undefined;
  /** SQLite file used when no `store` is given (default `./.sessions/sessions.db`). */
  path?: string | undefined;
  runner: AgentRunner;
  adapters?: readonly ChannelAdapterV1[] | undefined;
  /** Extra tools every agent gets (sub-agents too, unless `tools.subagents.tools` filters them). */
  tools?: readonly RunnerTool[] | undefined;
  logger?: Logger | undefined;
  clock?: Clock | undefined;
  /** Model ids accepted for `sessions_spawn({ model })`; default: the runner's list, else any. */
  models?: readonly string[] | undefined;
  outbox?: OutboxOptions | undefined;
  /** How many recent messages a run sees (default 50). */
  historyWindow?: number | undefined;
  /**
   * OpenTelemetry traces of every run tree (docs/tracing.md), through `@opentelemetry/api` when it is installed and
   * a tracer provider is registered: on by default, at no cost without one; `false` turns it off.
   */
  tracing?: boolean | undefined;
  /**
   * Records every runner turn (what the gateway asked, what the runner streamed and called, and the tools'
   * answers) and every delivery's outcome as JSONL: a file path (appended to) or a function per line. Replay it as a
   * test with `createReplayRunner` from `@sessions/testing` (docs/agent-trees.md).
   */
  record?: RecordingSink | undefined;
  /**
   * Several gateways on one shared store (e.g. `@sessions/store-postgres`): session lanes hold across them, each
   * looks for the work of dead gateways every `recoveryIntervalMs`, and runs on other gateways raise their start
   * and end events here. On by default for every store but SQLite and memory; `false` turns it off.
   */
  cluster?: boolean | ClusterOptions | undefined;
}

export type { GatewayEvent } from "./events.js";

/** A run's outcome from `agentWait`; `timeout` without `endedAt` means the wait ran out, not the run. */
export interface WaitResult {
  runId: string;
  status: "ok" | "error" | "timeout";
  startedAt?: number | undefined;
  endedAt?: number | undefined;
  error?: string | undefined;
  reply?: string | undefined;
  /** The run that took this run's message and answers it (queue modes): wait on that one for the reply. */
  mergedInto?: string | undefined;
  /** The run's tree has a budget: its limits, what the tree's runs have spent and what is left (`agent.wait`). */
  budget?: BudgetStatus | undefined;
}

/** A session tool (or an extra tool) bound to a requester, as `gateway.tools` returns it. */
export interface GatewayTool extends RunnerTool {
  name: SessionToolName | string;
}

/** A running gateway, from `createGateway`: sessions, runs, tools, the wire methods, and its WebSocket server. */
export interface Gateway {
  readonly config: SessionsConfig;
  readonly store: SessionStore;
  /** Resolves when recovery after a restart has finished; every method waits for it. */
  readonly ready: Promise<void>;
  /** The tools for a requester session, bound to it, with their zod contracts. */
  tools(requesterKey: string, options?: { sandboxed?: boolean | undefined }): Promise<GatewayTool[]>;
  /** Executes one session tool as `requesterKey` (validates params; invalid → `invalid_params`). */
  callTool(
    requesterKey: string,
    name: string,
    params: unknown,
    options?: { sandboxed?: boolean | undefined },
  ): Promise<unknown>;
  /** Takes a chat message from an adapter: routes it, runs the agent, delivers the reply. */
  receive(inbound: InboundMessage): Promise<ReceiveResult>;
  /** Calls a gateway method by its wire name with validated params. */
  call(method: GatewayMethodName, params?: unknown): Promise<unknown>;
  sessions: {
    /** `sessions.list`: one page of sessions, newest first; or by key (`sortBy: "key"`), walked with `cursor`. */
    list(params?: MethodParams<"sessions.list">): Promise<SessionsListPayload>;
    /**
     * `sessions.search`: sessions whose transcript, key, label or display name match `query`, best first, paged by
     * `offset`; with `requesterKey`, only those that session's tools may see.
     */
    search(params: MethodParams<"sessions.search">): Promise<SessionsSearchPayload>;
    /** `sessions.resolve`: the one session matching a key, sessionId or label. */
    resolve(params: MethodParams<"sessions.resolve">): Promise<{ ok: true; key: string; agentId: string }>;
    /** `entry`: the patched session's list row (the same `kind` as `sessions.list`). */
    patch(params: MethodParams<"sessions.patch">): Promise<{ ok: true; key: string; entry: GatewayRow }>;
    /** `sessions.delete`: stops the session's runs, ends its thread bindings, deletes it (and its transcript). */
    delete(
      params: MethodParams<"sessions.delete">,
    ): Promise<{ ok: true; key: string; deleted: boolean; archived: string[] }>;
  };
  chat: {
    /** `chat.history`: a session's messages, oldest first; the page before `cursor` or `offset` (from the newest). */
    history(params: MethodParams<"chat.history">): Promise<ChatHistoryPayload>;
    /** `chat.send`: a user turn into a session and a run; idempotent by `idempotencyKey`. */
    send(
      params: MethodParams<"chat.send">,
    ): Promise<{ runId: string; status: "started" | "in_flight" | "ok" | "error" }>;
    /** `chat.abort`: stops a session's runs in progress. */
    abort(params: MethodParams<"chat.abort">): Promise<{ ok: true; aborted: boolean; runIds: string[] }>;
  };
  /** `agent`: starts a run (accepted at once); idempotent by `idempotencyKey`. */
  agent(
    params: MethodParams<"agent">,
  ): Promise<{ runId: string; sessionKey: string; agentId: string; status: "accepted"; acceptedAt: number }>;
  /** `agent.wait`: waits for a run to end, server-side; never cancels it; answers after a restart. */
  agentWait(params: MethodParams<"agent.wait">): Promise<WaitResult>;
  /** `agents.list`: the configured agents and the default one. */
  agents: {
    /** `agents.list`: the configured agents, the default agent id and the main session key. */
    list(params?: MethodParams<"agents.list">): Promise<AgentsListPayload>;
  };
  runs: {
    /** `runs.list`: the runs queued or running now, on every gateway of the store, oldest first. */
    list(params?: MethodParams<"runs.list">): Promise<{ runs: ActiveRun[] }>;
    /** `runs.tree`: every run of the tree `runId` belongs to (what caused each, what it cost and delivered). */
    tree(params: MethodParams<"runs.tree">): Promise<RunTree>;
  };
  deliveries: {
    /** `deliveries.get`: one outbox record. */
    get(params: MethodParams<"deliveries.get">): Promise<DeliveryRecord>;
    /** `deliveries.list`: outbox records, by session, run or status. */
    list(params?: MethodParams<"deliveries.list">): Promise<{ deliveries: DeliveryRecord[] }>;
  };
  /** Serves this gateway over WebSocket (docs/protocol.md) until the server or the gateway is closed. */
  listen(options?: ListenOptions): Promise<GatewayServer>;
  /** Runs the archive and thread-binding sweeps now (they also run on their own timers). */
  sweep(): Promise<void>;
  /** An adapter reports a platform thread archived or deleted; its binding (if any) ends. */
  threadClosed(event: {
    channel: string;
    accountId?: string | undefined;
    threadId: string;
  }): Promise<boolean>;
  /** Listens to every gateway event; returns the unsubscribe function. */
  subscribe(listener: (event: GatewayEvent) => void): () => void;
  /**
   * Runs a connection that only one gateway on the store may hold at a time (a Discord gateway socket, Telegram
   * long polling) under the lease `connection:<name>`: this gateway starts it when it takes the lease, and another
   * gateway takes it over (calling its own `start`) once this one dies or lets go. `close()` releases it. A
   * gateway alone on its store starts it at once. Adapters offer theirs as `adapter.connection` (with its name):
   * `gateway.holdConnection(adapter.connection)` in place of starting the bot yourself.
   *
   * @throws SessionsError `invalid_params` (field `name` or `connection`) for a name that is not 1–200 characters or
   * a connection without `start()` and `stop()`; `unavailable` once the gateway is closed.
   */
  holdConnection(name: string, connection: ExclusiveConnection): HeldConnection;
  /** The hooks of runs and deliveries on this gateway (the ones its own follow-ups and tracing use). */
  readonly lifecycle: {
    /**
     * Subscribes to some hooks: a run recorded, started, calling a tool, ended; a delivery attempted, final. Hooks
     * are called synchronously in order; one that throws is logged and never breaks the run. Returns the
     * unsubscribe.
     */
    subscribe(hooks: Partial<LifecycleHooks>): () => void;
  };
  /**
   * The same, for a connection that carries its own lease name (`adapter.connection`).
   *
   * @throws SessionsError `invalid_params` (field `name` or `connection`) for a name that is not 1–200 characters or
   * a connection without `start()` and `stop()`; `unavailable` once the gateway is closed.
   * @example
   * ```ts
   * const held = gateway.holdConnection(telegram.connection); // instead of bot.start()
   * ```
   */
  holdConnection(connection: ExclusiveConnection & { readonly name: string }): HeldConnection;
  /** Stops timers, waits for work under way (up to `drainMs`), closes the store. */
  close(options?: { drainMs?: number | undefined }): Promise<void>;
}

/** A `sessions.list` row as operators see it. */
export interface GatewayRow {
  key: string;
  kind: "direct" | "group" | "global" | "unknown";
  label?: string | undefined;
  displayName?: string | undefined;
  channel?: string | undefined;
  chatType?: ChatType | undefined;
  updatedAt: number;
  sessionId: string;
  spawnedBy?: string | undefined;
  sendPolicy?: "allow" | "deny" | undefined;
  /** The session's own queue mode (set with `sessions.patch` or `/queue`), when it has one. */
  queueMode?: QueueMode | undefined;
  /** The session's own budget for the trees its users' messages start (`sessions.patch`). */
  budget?: Budget | undefined;
  /** The session's own visibility override (set with `sessions.patch`), when it has one. */
  visibility?: Visibility | undefined;
  model?: string | undefined;
  contextTokens?: number | undefined;
  inputTokens?: number | undefined;
  outputTokens?: number | undefined;
  totalTokens?: number | undefined;
  thinkingLevel?: string | undefined;
  systemSent?: boolean | undefined;
  abortedLastRun?: boolean | undefined;
  lastChannel?: string | undefined;
  lastTo?: string | undefined;
  lastAccountId?: string | undefined;
  deliveryContext?: DeliveryContext | undefined;
  /** A run of this session is queued or running now, on any gateway of the store. */
  hasActiveRun?: boolean | undefined;
  /** Those runs, oldest first (present when `hasActiveRun`). */
  activeRunIds?: string[] | undefined;
}

/** A run under way (`runs.list`): queued for its session's lane, or running on `owner`. */
export interface ActiveRun {
  runId: string;
  sessionKey: string;
  agentId: string;
  kind: RunKind;
  status: "queued" | "running";
  createdAt: number;
  startedAt?: number | undefined;
  /** The gateway instance that runs it. */
  owner?: string | undefined;
}

/** One run of a tree (`runs.tree`): who caused it, where it ran, how it went, what it cost and delivered. */
export interface RunTreeNode
  extends Pick<
    RunRecord,
    | "runId"
    | "cause"
    | "hops"
    | "guards"
    | "sessionKey"
    | "agentId"
    | "kind"
    | "status"
    | "createdAt"
    | "startedAt"
    | "endedAt"
    | "error"
    | "usage"
    | "mergedInto"
  > {
  /** The run that caused it as shown: absent on the root (and on runs recorded before causes were). */
  parentRunId?: string | undefined;
  /** The outbox records it produced (its reply; the announce of its follow-up), oldest first. */
  deliveries: DeliveryRecord[];
}

/** `runs.tree` payload: the tree's runs, oldest first; `truncated` when it has more than the limit. */
export interface RunTree {
  rootRunId: string;
  runs: RunTreeNode[];
  truncated: boolean;
  /** The tree has a budget: its limits, what all its runs have spent and what is left. */
  budget?: BudgetStatus | undefined;
}

/** `sessions.list` payload: one page of rows, `nextOffset` for the next (and `nextCursor` with `sortBy: "key"`). */
export interface SessionsListPayload {
  ts: number;
  count: number;
  totalCount?: number | undefined;
  hasMore: boolean;
  nextOffset: number | null;
  /** With `sortBy: "key"`: the `cursor` of the next page, `null` on the last. */
  nextCursor?: string | null | undefined;
  sessions: GatewayRow[];
}

/** One session `sessions.search` found: its list row, score and best-matching messages (best first). */
export interface SessionSearchResult {
  key: string;
  /** Higher ranks first; 1 or more when the key, label or display name matched. Comparable within one search only. */
  score: number;
  /** How many of its messages matched. */
  matchedMessages: number;
  messages: SearchMessageMatch[];
  session: GatewayRow;
}

/** `sessions.search` payload: one page of results, best first; `nextOffset` for the next. */
export interface SessionsSearchPayload {
  ts: number;
  count: number;
  hasMore: boolean;
  nextOffset: number | null;
  /** The words are in more messages than a search ranks (20,000): the results come from the most recent sessions. */
  truncated: boolean;
  results: SessionSearchResult[];
}

/** A transcript message on the wire: `ts`/`seq`, and the same as `timestamp`/`__openclaw.seq` for OpenClaw readers. */
export type HistoryWireMessage = StoredMessage & {
  timestamp: number;
  __openclaw: { seq: number; runId?: string | undefined };
};

/** `sessionId` is absent when the session does not exist (its history is empty, as on OpenClaw). */
export interface ChatHistoryPayload {
  sessionKey: string;
  sessionId?: string | undefined;
  messages: HistoryWireMessage[];
  totalMessages: number;
  hasMore: boolean;
  nextOffset: number | null;
  /** The `cursor` of the page before this one (older messages), `null` on the oldest. */
  nextCursor: string | null;
}

/** `agents.list` payload. */
export interface AgentsListPayload {
  defaultId: string;
  mainKey: string;
  scope: string;
  agents: { id: string; name?: string | undefined }[];
}
