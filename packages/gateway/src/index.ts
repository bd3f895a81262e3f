export type {
  ChannelAdapterV1,
  ChannelCapabilities,
  DeliveryReceipt,
  DeliveryTarget,
  InboundGateway,
  InboundMessage,
  OutboundMessage,
  ReceiveResult,
} from "./adapter.js";
export { type Clock, createManualClock, type ManualClock, systemClock } from "./clock.js";
export {
  type AgentsListPayload,
  type ChatHistoryPayload,
  createGateway,
  type Gateway,
  type GatewayEvent,
  type GatewayOptions,
  type GatewayRow,
  type GatewayTool,
  type SessionsListPayload,
  type WaitResult,
} from "./gateway.js";
export type { OutboxOptions } from "./outbox.js";
export {
  createScriptedRunner,
  type ScriptedAgent,
  type ScriptedReply,
  type ScriptedRunnerOptions,
  type ScriptedTurn,
} from "./runner/scripted.js";
export type {
  AgentRunEvent,
  AgentRunner,
  AgentRunRequest,
  AgentRunResult,
  RunnerTool,
} from "./runner/types.js";
export { type GatewayServer, type GatewayToken, type ListenOptions, toWireError } from "./server.js";
export { createMemoryStore } from "./store/memory.js";
export { createSqliteStore, type SqliteStoreOptions } from "./store/sqlite.js";
export type * from "./store/types.js";
export { messageText } from "./transcript.js";
