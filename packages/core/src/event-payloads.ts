import { z } from "zod";

/**
 * The payloads of the `chat` and `agent` events as `@sessions/gateway-client` reads them (`ChatEventPayload`,
 * `AgentEventPayload` in `wire-events.ts`), as schemas: what our gateway and OpenClaw's send must pass. Loose:
 * fields a gateway adds are kept.
 */
const ChatMessageSchema = z.looseObject({
  role: z.string(),
  content: z.union([z.string(), z.array(z.looseObject({ type: z.string(), text: z.string().optional() }))]),
});

/** A `chat` event's payload: a run's reply as it streams, and how it ended. */
export const ChatEventPayloadSchema = z.looseObject({
  runId: z.string(),
  sessionKey: z.string(),
  seq: z.number(),
  state: z.string(),
  phase: z.string().optional(),
  deltaText: z.string().optional(),
  message: z.union([ChatMessageSchema, z.string()]).optional(),
  usage: z.unknown().optional(),
  stopReason: z.string().optional(),
  errorMessage: z.string().optional(),
  errorKind: z.string().optional(),
});

/** An `agent` event's payload: a run's lifecycle, assistant text and tool calls. */
export const AgentEventPayloadSchema = z.looseObject({
  runId: z.string(),
  seq: z.number(),
  stream: z.string(),
  ts: z.number(),
  data: z.unknown(),
});

/** The payload schema of each event the client types (`chat`, `agent`); other events' payloads are opaque. */
export const EVENT_PAYLOADS = {
  chat: ChatEventPayloadSchema,
  agent: AgentEventPayloadSchema,
} as const;
