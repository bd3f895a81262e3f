export {
  type AgentEventPayload,
  type ChatEventPayload,
  type ChatMessage,
  chatMessageText,
  type HistoryMessage,
  isTerminalChatState,
} from "@sessions/core";
export {
  type ClientState,
  createGatewayClient,
  type GatewayClient,
  type GatewayClientOptions,
  type GatewayGap,
  type ReconnectOptions,
  type RequestOptions,
  type RunStreamItem,
  type WebSocketConstructor,
  type WebSocketLike,
} from "./client.js";
export { fromWireError, GatewayClientError } from "./errors.js";
export {
  createSessionTools,
  providerJsonSchema,
  runToolCall,
  type SessionTool,
  type SessionToolsOptions,
  toAnthropicTools,
  toOpenAiTools,
} from "./tools.js";
