import { z } from "zod";
import { SessionsError } from "./errors.js";
import { LIMITS } from "./limits.js";
import { toSessionsError } from "./schema-errors.js";

/**
 * The wire protocol (PROTOCOL.md): the session subset of the OpenClaw gateway protocol v4, plus our additions.
 * One set of zod schemas serves the server (validation) and the client (types).
 */
export const PROTOCOL_VERSION = 4;
/** Frames before a successful `connect` are capped at 64 KiB. */
export const PRE_CONNECT_MAX_PAYLOAD = 64 * 1024;

// ---------------------------------------------------------------- frames

const frameId = z.string().min(1).max(256);

export const RequestFrameSchema = z.strictObject({
  type: z.literal("req"),
  id: frameId,
  method: z.string().min(1).max(128),
  params: z.unknown().optional(),
});

export const WireErrorCodeSchema = z.enum([
  "INVALID_REQUEST",
  "FORBIDDEN",
  "UNAVAILABLE",
  "NOT_LINKED",
  "NOT_PAIRED",
]);
export type WireErrorCode = z.infer<typeof WireErrorCodeSchema>;

export const WireErrorSchema = z.object({
  code: z.string(),
  message: z.string(),
  details: z.record(z.string(), z.unknown()).optional(),
  retryable: z.boolean().optional(),
  retryAfterMs: z.number().optional(),
});
export type WireError = z.infer<typeof WireErrorSchema>;

export const ResponseFrameSchema = z.union([
  z.strictObject({
    type: z.literal("res"),
    id: z.string(),
    ok: z.literal(true),
    payload: z.unknown().optional(),
  }),
  z.strictObject({ type: z.literal("res"), id: z.string(), ok: z.literal(false), error: WireErrorSchema }),
]);

export const EventFrameSchema = z.strictObject({
  type: z.literal("event"),
  event: z.string(),
  payload: z.unknown().optional(),
  seq: z.int().optional(),
});

export type RequestFrame = z.infer<typeof RequestFrameSchema>;
export type ResponseFrame = z.infer<typeof ResponseFrameSchema>;
export type EventFrame = z.infer<typeof EventFrameSchema>;

export const ConnectParamsSchema = z.object({
  minProtocol: z.int(),
  maxProtocol: z.int(),
  client: z.object({
    id: z.string().min(1).max(LIMITS.clientField),
    version: z.string().max(LIMITS.clientField),
    platform: z.string().max(LIMITS.clientField),
    mode: z.string().max(LIMITS.clientField),
    displayName: z.string().max(LIMITS.displayName).optional(),
  }),
  role: z.string().max(LIMITS.clientField).optional(),
  scopes: z.array(z.string().max(LIMITS.scope)).max(LIMITS.scopes).optional(),
  caps: z.array(z.unknown()).max(LIMITS.caps).optional(),
  auth: z.object({ token: z.string().max(LIMITS.token).optional() }).optional(),
});
export type ConnectParams = z.infer<typeof ConnectParamsSchema>;

export interface HelloOk {
  type: "hello-ok";
  protocol: number;
  server: { version: string; connId: string };
  features: { methods: string[]; events: string[] };
  snapshot: {
    sessionDefaults: { defaultAgentId: string; mainKey: string; mainSessionKey: string; scope: string };
  };
  auth: { role: string; scopes: string[] };
  policy: { maxPayload: number; maxBufferedBytes: number; tickIntervalMs: number };
}

export const GATEWAY_EVENTS = [
  "connect.challenge",
  "tick",
  "shutdown",
  "chat",
  "agent",
  "sessions.changed",
  "delivery",
] as const;

// ---------------------------------------------------------------- method params (unknown keys are rejected; strings and arrays bounded by LIMITS)

const key = z.string().trim().min(1).max(LIMITS.key);
const optionalKey = z.string().max(LIMITS.key).optional();
const idempotencyKey = z.string().trim().min(1).max(LIMITS.idempotencyKey);
const idText = z.string().max(LIMITS.id);
const labelText = z.string().max(LIMITS.label);
const messageText = z.string().min(1).max(LIMITS.message);

export const SessionsListMethodParams = z.strictObject({
  limit: z.int().min(1).max(1000).optional(),
  offset: z.int().min(0).optional(),
  activeMinutes: z.int().min(1).optional(),
  agentId: z.string().trim().min(1).max(LIMITS.id).optional(),
  label: labelText.optional(),
  spawnedBy: optionalKey,
  search: z.string().max(LIMITS.search).optional(),
  includeGlobal: z.boolean().optional(),
  includeUnknown: z.boolean().optional(),
  kinds: z
    .array(z.enum(["main", "group", "cron", "hook", "node", "other"]))
    .max(LIMITS.kinds)
    .optional(),
  includeArchived: z.boolean().optional(),
});

export const SessionsResolveMethodParams = z.strictObject({
  key: optionalKey,
  sessionId: idText.optional(),
  label: labelText.optional(),
  agentId: idText.optional(),
  spawnedBy: optionalKey,
});

export const SessionsPatchMethodParams = z.strictObject({
  key,
  label: labelText.nullable().optional(),
  sendPolicy: z.enum(["allow", "deny"]).nullable().optional(),
  model: idText.nullable().optional(),
  thinkingLevel: idText.nullable().optional(),
  verboseLevel: idText.nullable().optional(),
});

export const SessionsDeleteMethodParams = z.strictObject({ key, deleteTranscript: z.boolean().optional() });

export const ChatHistoryMethodParams = z.strictObject({
  sessionKey: key,
  limit: z.int().min(1).max(1000).optional(),
  offset: z.int().min(0).optional(),
});

export const ChatSendMethodParams = z.strictObject({
  sessionKey: key,
  message: messageText,
  idempotencyKey,
  deliver: z.boolean().optional(),
  timeoutMs: z.int().min(0).optional(),
});

export const ChatAbortMethodParams = z.strictObject({ sessionKey: key, runId: idText.optional() });

export const InputProvenanceSchema = z.strictObject({
  kind: idText,
  sourceSessionKey: optionalKey,
  sourceChannel: idText.optional(),
  sourceTool: idText.optional(),
});

export const AgentMethodParams = z.strictObject({
  message: messageText,
  idempotencyKey,
  agentId: idText.optional(),
  sessionKey: optionalKey,
  deliver: z.boolean().optional(),
  channel: idText.optional(),
  to: z.string().max(LIMITS.target).optional(),
  accountId: idText.optional(),
  threadId: z.union([idText, z.number()]).optional(),
  lane: idText.optional(),
  label: labelText.optional(),
  extraSystemPrompt: z.string().max(LIMITS.extraSystemPrompt).optional(),
  inputProvenance: InputProvenanceSchema.optional(),
  spawnedBy: optionalKey,
  timeout: z.number().min(0).optional(),
});

export const AgentWaitMethodParams = z.strictObject({
  runId: z.string().trim().min(1).max(LIMITS.id),
  timeoutMs: z
    .int()
    .min(0)
    .max(24 * 3600_000)
    .optional(),
});

export const AgentsListMethodParams = z.strictObject({});

export const DeliveriesGetMethodParams = z.strictObject({ id: idText.min(1) });
export const DeliveriesListMethodParams = z.strictObject({
  sessionKey: optionalKey,
  runId: idText.optional(),
  status: z.enum(["queued", "delivered", "suppressed", "failed"]).optional(),
  limit: z.int().min(1).max(1000).optional(),
});

export const ToolsCallMethodParams = z.strictObject({
  requesterKey: key,
  sandboxed: z.boolean().optional(),
  name: idText,
  params: z.unknown().optional(),
});

/**
 * `sessions.subscribe` / `sessions.unsubscribe` on one connection. Bare (`{}`): every run, session and delivery
 * event (unsubscribe: every session and `all`). `all: true`: everything; `keys`: those sessions' runs and changes;
 * `runIds`: those runs while they are under way.
 */
export const SessionsSubscribeMethodParams = z.strictObject({
  all: z.literal(true).optional(),
  keys: z.array(key).max(LIMITS.subscriptions).optional(),
  runIds: z.array(z.string().trim().min(1).max(LIMITS.id)).max(LIMITS.subscriptions).optional(),
});

export const METHOD_PARAMS = {
  "sessions.list": SessionsListMethodParams,
  "sessions.resolve": SessionsResolveMethodParams,
  "sessions.patch": SessionsPatchMethodParams,
  "sessions.delete": SessionsDeleteMethodParams,
  "chat.history": ChatHistoryMethodParams,
  "chat.send": ChatSendMethodParams,
  "chat.abort": ChatAbortMethodParams,
  agent: AgentMethodParams,
  "agent.wait": AgentWaitMethodParams,
  "agents.list": AgentsListMethodParams,
  "deliveries.get": DeliveriesGetMethodParams,
  "deliveries.list": DeliveriesListMethodParams,
  "sessions.tools.call": ToolsCallMethodParams,
  "sessions.subscribe": SessionsSubscribeMethodParams,
  "sessions.unsubscribe": SessionsSubscribeMethodParams,
} as const;

export const GATEWAY_METHODS = Object.keys(METHOD_PARAMS) as GatewayMethodName[];

export type GatewayMethodName = keyof typeof METHOD_PARAMS;
export type MethodParams<M extends GatewayMethodName> = z.input<(typeof METHOD_PARAMS)[M]>;
export type ParsedMethodParams<M extends GatewayMethodName> = z.output<(typeof METHOD_PARAMS)[M]>;

/**
 * Validates a wire method's params (every string and array within its `LIMITS`).
 * @throws SessionsError `invalid_params` naming the field (`field: "kinds"`), or `method` for an unknown method.
 */
export function parseMethodParams<M extends GatewayMethodName>(
  method: M,
  params: unknown,
): ParsedMethodParams<M> {
  if (!Object.hasOwn(METHOD_PARAMS, method)) {
    throw new SessionsError("invalid_params", `Unknown method: ${String(method)}`, { field: "method" });
  }
  const result = METHOD_PARAMS[method].safeParse(params ?? {});
  if (!result.success) throw toSessionsError(result.error, "invalid_params", `Invalid ${method} params`);
  return result.data as ParsedMethodParams<M>;
}

// ---------------------------------------------------------------- payloads (loose: servers may add fields)

const StoredMessageSchema = z.looseObject({
  role: z.string(),
  content: z.unknown(),
  ts: z.number(),
  seq: z.number().optional(),
  runId: z.string().optional(),
});

export const GatewayRowSchema = z.looseObject({
  key: z.string(),
  kind: z.enum(["direct", "group", "global", "unknown"]),
  label: z.string().optional(),
  displayName: z.string().optional(),
  channel: z.string().optional(),
  chatType: z.string().optional(),
  updatedAt: z.number(),
  sessionId: z.string(),
  spawnedBy: z.string().optional(),
  sendPolicy: z.enum(["allow", "deny"]).optional(),
  model: z.string().optional(),
  contextTokens: z.number().optional(),
  inputTokens: z.number().optional(),
  outputTokens: z.number().optional(),
  totalTokens: z.number().optional(),
  thinkingLevel: z.string().optional(),
  systemSent: z.boolean().optional(),
  abortedLastRun: z.boolean().optional(),
  lastChannel: z.string().optional(),
  lastTo: z.string().optional(),
  lastAccountId: z.string().optional(),
  deliveryContext: z
    .object({
      channel: z.string().optional(),
      to: z.string().optional(),
      accountId: z.string().optional(),
      threadId: z.string().optional(),
    })
    .optional(),
});
export type GatewayRow = z.infer<typeof GatewayRowSchema>;

export const SessionsListPayloadSchema = z.looseObject({
  ts: z.number(),
  count: z.number(),
  totalCount: z.number().optional(),
  hasMore: z.boolean(),
  nextOffset: z.number().nullable(),
  sessions: z.array(GatewayRowSchema),
});

export const DeliveryRecordSchema = z.looseObject({
  id: z.string(),
  idempotencyKey: z.string(),
  kind: z.string(),
  sessionKey: z.string(),
  runId: z.string().optional(),
  channel: z.string(),
  to: z.string(),
  accountId: z.string().optional(),
  threadId: z.string().optional(),
  text: z.string(),
  status: z.enum(["queued", "delivered", "suppressed", "failed"]),
  attempts: z.number(),
  nextAttemptAt: z.number(),
  createdAt: z.number(),
  updatedAt: z.number(),
  lastError: z.string().optional(),
  receipt: z.array(z.string()).optional(),
});
export type DeliveryRecordPayload = z.infer<typeof DeliveryRecordSchema>;

export const AgentWaitPayloadSchema = z.looseObject({
  runId: z.string(),
  status: z.enum(["ok", "error", "timeout"]),
  startedAt: z.number().optional(),
  endedAt: z.number().optional(),
  error: z.string().optional(),
  reply: z.string().optional(),
});
export type AgentWaitPayload = z.infer<typeof AgentWaitPayloadSchema>;

/** `subscribed`: any subscription left; `keys`: the keys the call named, stored form; `runIds`: those under way. */
export const SubscriptionPayloadSchema = z.looseObject({
  ok: z.literal(true),
  subscribed: z.boolean(),
  all: z.boolean().optional(),
  keys: z.array(z.string()).optional(),
  runIds: z.array(z.string()).optional(),
});

export const METHOD_PAYLOADS = {
  "sessions.list": SessionsListPayloadSchema,
  "sessions.resolve": z.looseObject({ ok: z.literal(true), key: z.string() }),
  "sessions.patch": z.looseObject({
    ok: z.literal(true),
    key: z.string(),
    entry: z.looseObject({ key: z.string() }),
  }),
  "sessions.delete": z.looseObject({ ok: z.literal(true), key: z.string(), deleted: z.boolean() }),
  "chat.history": z.looseObject({
    sessionKey: z.string(),
    sessionId: z.string(),
    messages: z.array(StoredMessageSchema),
    totalMessages: z.number(),
    hasMore: z.boolean(),
    nextOffset: z.number().nullable(),
  }),
  "chat.send": z.looseObject({ runId: z.string(), status: z.enum(["started", "in_flight", "ok", "error"]) }),
  "chat.abort": z.looseObject({ ok: z.literal(true), aborted: z.boolean(), runIds: z.array(z.string()) }),
  agent: z.looseObject({
    runId: z.string(),
    sessionKey: z.string(),
    agentId: z.string(),
    status: z.literal("accepted"),
    acceptedAt: z.number(),
  }),
  "agent.wait": AgentWaitPayloadSchema,
  "agents.list": z.looseObject({
    defaultId: z.string(),
    mainKey: z.string(),
    scope: z.string(),
    agents: z.array(z.object({ id: z.string(), name: z.string().optional() })),
  }),
  "deliveries.get": DeliveryRecordSchema,
  "deliveries.list": z.looseObject({ deliveries: z.array(DeliveryRecordSchema) }),
  "sessions.tools.call": z.unknown(),
  "sessions.subscribe": SubscriptionPayloadSchema,
  "sessions.unsubscribe": SubscriptionPayloadSchema,
} as const satisfies Record<GatewayMethodName, z.ZodType>;

export type MethodPayload<M extends GatewayMethodName> = z.output<(typeof METHOD_PAYLOADS)[M]>;

/** Events the gateway sends (payload shapes). */
export interface ChatEventPayload {
  runId: string;
  sessionKey: string;
  seq: number;
  state: "delta" | "final" | "aborted" | "error";
  deltaText?: string;
  message?: string;
  errorMessage?: string;
}

export interface AgentEventPayload {
  runId: string;
  seq: number;
  stream: "lifecycle" | "assistant" | "tool";
  ts: number;
  data: unknown;
}
