import { z } from "zod";

/** Params of the session methods (PROTOCOL.md); unknown keys are rejected. */
const key = z.string().trim().min(1).max(1024);
const idempotencyKey = z.string().trim().min(1).max(256);

export const SessionsListMethodParams = z.strictObject({
  limit: z.int().min(1).max(1000).optional(),
  offset: z.int().min(0).optional(),
  activeMinutes: z.int().min(1).optional(),
  agentId: z.string().trim().min(1).optional(),
  label: z.string().optional(),
  spawnedBy: z.string().optional(),
  search: z.string().optional(),
  includeGlobal: z.boolean().optional(),
  includeUnknown: z.boolean().optional(),
  kinds: z.array(z.enum(["main", "group", "cron", "hook", "node", "other"])).optional(),
  includeArchived: z.boolean().optional(),
});

export const SessionsResolveMethodParams = z.strictObject({
  key: z.string().optional(),
  sessionId: z.string().optional(),
  label: z.string().optional(),
  agentId: z.string().optional(),
  spawnedBy: z.string().optional(),
});

export const SessionsPatchMethodParams = z.strictObject({
  key,
  label: z.string().max(200).nullable().optional(),
  sendPolicy: z.enum(["allow", "deny"]).nullable().optional(),
  model: z.string().nullable().optional(),
  thinkingLevel: z.string().nullable().optional(),
  verboseLevel: z.string().nullable().optional(),
});

export const SessionsDeleteMethodParams = z.strictObject({ key, deleteTranscript: z.boolean().optional() });

export const ChatHistoryMethodParams = z.strictObject({
  sessionKey: key,
  limit: z.int().min(1).max(1000).optional(),
  offset: z.int().min(0).optional(),
});

export const ChatSendMethodParams = z.strictObject({
  sessionKey: key,
  message: z
    .string()
    .min(1)
    .max(256 * 1024),
  idempotencyKey,
  deliver: z.boolean().optional(),
  timeoutMs: z.int().min(0).optional(),
});

export const ChatAbortMethodParams = z.strictObject({ sessionKey: key, runId: z.string().optional() });

export const InputProvenanceSchema = z.strictObject({
  kind: z.string(),
  sourceSessionKey: z.string().optional(),
  sourceChannel: z.string().optional(),
  sourceTool: z.string().optional(),
});

export const AgentMethodParams = z.strictObject({
  message: z
    .string()
    .min(1)
    .max(256 * 1024),
  idempotencyKey,
  agentId: z.string().optional(),
  sessionKey: z.string().optional(),
  deliver: z.boolean().optional(),
  channel: z.string().optional(),
  to: z.string().optional(),
  accountId: z.string().optional(),
  threadId: z.union([z.string(), z.number()]).optional(),
  lane: z.string().optional(),
  label: z.string().optional(),
  extraSystemPrompt: z.string().optional(),
  inputProvenance: InputProvenanceSchema.optional(),
  spawnedBy: z.string().optional(),
  timeout: z.number().min(0).optional(),
});

export const AgentWaitMethodParams = z.strictObject({
  runId: z.string().trim().min(1),
  timeoutMs: z
    .int()
    .min(0)
    .max(24 * 3600_000)
    .optional(),
});

export const AgentsListMethodParams = z.strictObject({});

export const DeliveriesGetMethodParams = z.strictObject({ id: z.string().min(1) });
export const DeliveriesListMethodParams = z.strictObject({
  sessionKey: z.string().optional(),
  runId: z.string().optional(),
  status: z.enum(["queued", "delivered", "suppressed", "failed"]).optional(),
  limit: z.int().min(1).max(1000).optional(),
});

export const ToolsCallMethodParams = z.strictObject({
  requesterKey: key,
  sandboxed: z.boolean().optional(),
  name: z.string(),
  params: z.unknown().optional(),
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
} as const;

export type GatewayMethodName = keyof typeof METHOD_PARAMS;
export type MethodParams<M extends GatewayMethodName> = z.input<(typeof METHOD_PARAMS)[M]>;
