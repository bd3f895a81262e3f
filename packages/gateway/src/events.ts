import type { AgentEventPayload, ChatEventPayload } from "@sessions/core";
import type { DeliveryRecord } from "./store/types.js";

/** What `gateway.subscribe` reports: run events (`chat`, `agent`), session changes and delivery receipts. */
export type GatewayEvent =
  | ({ type: "chat" } & ChatEventPayload)
  | ({ type: "agent" } & AgentEventPayload)
  | { type: "sessions.changed"; key: string; reason: string }
  | { type: "delivery"; record: DeliveryRecord };
