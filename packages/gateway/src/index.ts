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
export type { ClusterOptions, ExclusiveConnection, HeldConnection } from "./cluster/index.js";
export { createGateway } from "./create-gateway.js";
export type { OutboxOptions } from "./delivery/outbox.js";
export type {
  ActiveRun,
  AgentsListPayload,
  ChatHistoryPayload,
  Gateway,
  GatewayEvent,
  GatewayOptions,
  GatewayRow,
  GatewayTool,
  HistoryWireMessage,
  RunTree,
  RunTreeNode,
  SessionSearchResult,
  SessionsListPayload,
  SessionsSearchPayload,
  WaitResult,
} from "./gateway.js";
export type {
  DeliveryAttemptInfo,
  LifecycleHooks,
  RequestToolCallInfo,
  RunDraft,
  ToolCallInfo,
} from "./lifecycle.js";
export {
  importOpenClaw,
  type OpenClawImportedSession,
  type OpenClawImportOptions,
  type OpenClawImportProblem,
  type OpenClawImportReport,
  type OpenClawLayout,
  type OpenClawSessionOutcome,
} from "./openclaw-import/import.js";
export {
  type RecordedEvent,
  type RecordingLine,
  type RecordingSink,
  recordingRunner,
} from "./runner/recording.js";
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
export type { GatewayToken, OperatorScope } from "./server/auth.js";
export type { GatewayServer, ListenOptions } from "./server/listen.js";
export { toWireError } from "./server/wire-errors.js";
export { createMemoryStore } from "./store/memory.js";
export { createSqliteStore, type SqliteStoreOptions } from "./store/sqlite.js";
export type * from "./store/types.js";
export { messageText } from "./transcript.js";
