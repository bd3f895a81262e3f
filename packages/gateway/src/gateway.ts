import type {
  AgentEventPayload,
  ChatEventPayload,
  ChatType,
  DeliveryContext,
  GatewayMethodName,
  InboundMessage,
  Logger,
  MethodParams,
  ReceiveResult,
  SessionsConfig,
  SessionsConfigInput,
  SessionToolName,
} from "@sessions/core";
import type { ChannelAdapterV1 } from "./adapter.js";
import type { Clock } from "./clock.js";
import type { OutboxOptions } from "./delivery/outbox.js";
import type { AgentRunner, RunnerTool } from "./runner/types.js";
import type { GatewayServer, ListenOptions } from "./server/listen.js";
import type { DeliveryRecord, SessionStore, StoredEntry, StoredMessage } from "./store/types.js";

/**
 * The public shape of a gateway: its options, the object `createGateway` returns, its events and payloads.
 * The runtime behind it is composed in `create-gateway.ts` from the feature folders.
 */

export interface GatewayOptions {
  /** The sessions config (validated with the core schema; defaults filled in). */
  config?: SessionsConfigInput;
  /** Where everything is kept. Default: a SQLite file at `path`. */
  store?: SessionStore;
  /** SQLite file used when no `store` is given (default `./.sessions/sessions.db`). */
  path?: string;
  runner: AgentRunner;
  adapters?: readonly ChannelAdapterV1[];
  /** Extra tools every agent gets (sub-agents too, unless `tools.subagents.tools` filters them). */
  tools?: readonly RunnerTool[];
  logger?: Logger;
  clock?: Clock;
  /** Model ids accepted for `sessions_spawn({ model })`; default: the runner's list, else any. */
  models?: readonly string[];
  outbox?: OutboxOptions;
  /** How many recent messages a run sees (default 50). */
  historyWindow?: number;
}

export type GatewayEvent =
  | ({ type: "chat" } & ChatEventPayload)
  | ({ type: "agent" } & AgentEventPayload)
  | { type: "sessions.changed"; key: string; reason: string }
  | { type: "delivery"; record: DeliveryRecord };

export interface WaitResult {
  runId: string;
  status: "ok" | "error" | "timeout";
  startedAt?: number;
  endedAt?: number;
  error?: string;
  reply?: string;
}

export interface GatewayTool extends RunnerTool {
  name: SessionToolName | string;
}

export interface Gateway {
  readonly config: SessionsConfig;
  readonly store: SessionStore;
  /** Resolves when recovery after a restart has finished; every method waits for it. */
  readonly ready: Promise<void>;
  /** The tools for a requester session, bound to it, with their zod contracts. */
  tools(requesterKey: string, options?: { sandboxed?: boolean }): Promise<GatewayTool[]>;
  /** Executes one session tool as `requesterKey` (validates params; invalid → `invalid_params`). */
  callTool(
    requesterKey: string,
    name: string,
    params: unknown,
    options?: { sandboxed?: boolean },
  ): Promise<unknown>;
  /** Takes a chat message from an adapter: routes it, runs the agent, delivers the reply. */
  receive(inbound: InboundMessage): Promise<ReceiveResult>;
  /** Calls a gateway method by its wire name with validated params. */
  call(method: GatewayMethodName, params?: unknown): Promise<unknown>;
  sessions: {
    list(params?: MethodParams<"sessions.list">): Promise<SessionsListPayload>;
    resolve(params: MethodParams<"sessions.resolve">): Promise<{ ok: true; key: string }>;
    patch(params: MethodParams<"sessions.patch">): Promise<{ ok: true; key: string; entry: StoredEntry }>;
    delete(params: MethodParams<"sessions.delete">): Promise<{ ok: true; key: string; deleted: boolean }>;
  };
  chat: {
    history(params: MethodParams<"chat.history">): Promise<ChatHistoryPayload>;
    send(
      params: MethodParams<"chat.send">,
    ): Promise<{ runId: string; status: "started" | "in_flight" | "ok" | "error" }>;
    abort(params: MethodParams<"chat.abort">): Promise<{ ok: true; aborted: boolean; runIds: string[] }>;
  };
  agent(
    params: MethodParams<"agent">,
  ): Promise<{ runId: string; sessionKey: string; agentId: string; status: "accepted"; acceptedAt: number }>;
  agentWait(params: MethodParams<"agent.wait">): Promise<WaitResult>;
  agents: { list(params?: MethodParams<"agents.list">): Promise<AgentsListPayload> };
  deliveries: {
    get(params: MethodParams<"deliveries.get">): Promise<DeliveryRecord>;
    list(params?: MethodParams<"deliveries.list">): Promise<{ deliveries: DeliveryRecord[] }>;
  };
  /** Serves this gateway over WebSocket (PROTOCOL.md) until the server or the gateway is closed. */
  listen(options?: ListenOptions): Promise<GatewayServer>;
  /** Runs the archive and thread-binding sweeps now (they also run on their own timers). */
  sweep(): Promise<void>;
  /** An adapter reports a platform thread archived or deleted; its binding (if any) ends. */
  threadClosed(event: { channel: string; accountId?: string; threadId: string }): Promise<boolean>;
  subscribe(listener: (event: GatewayEvent) => void): () => void;
  /** Stops timers, waits for work under way (up to `drainMs`), closes the store. */
  close(options?: { drainMs?: number }): Promise<void>;
}

export interface GatewayRow {
  key: string;
  kind: "direct" | "group" | "global" | "unknown";
  label?: string;
  displayName?: string;
  channel?: string;
  chatType?: ChatType;
  updatedAt: number;
  sessionId: string;
  spawnedBy?: string;
  sendPolicy?: "allow" | "deny";
  model?: string;
  contextTokens?: number;
  inputTokens?: number;
  outputTokens?: number;
  totalTokens?: number;
  thinkingLevel?: string;
  systemSent?: boolean;
  abortedLastRun?: boolean;
  lastChannel?: string;
  lastTo?: string;
  lastAccountId?: string;
  deliveryContext?: DeliveryContext;
}

export interface SessionsListPayload {
  ts: number;
  count: number;
  totalCount?: number;
  hasMore: boolean;
  nextOffset: number | null;
  sessions: GatewayRow[];
}

export interface ChatHistoryPayload {
  sessionKey: string;
  sessionId: string;
  messages: StoredMessage[];
  totalMessages: number;
  hasMore: boolean;
  nextOffset: number | null;
}

export interface AgentsListPayload {
  defaultId: string;
  mainKey: string;
  scope: string;
  agents: { id: string; name?: string }[];
}
