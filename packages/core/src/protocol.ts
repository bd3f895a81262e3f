import { z } from "zod";
import { VISIBILITIES } from "./access.js";
import { BudgetSchema } from "./budget.js";
import { SessionsError } from "./errors.js";
import { DM_SCOPES, type DmScope, SESSION_KINDS } from "./keys.js";
import { LIMITS } from "./limits.js";
import { QUEUE_MODES } from "./queue-mode.js";
import { toSessionsError } from "./schema-errors.js";
import { traceparentParam } from "./trace-context.js";

/**
 * The wire protocol (docs/protocol.md): the session subset of the OpenClaw gateway protocol v4, plus our additions.
 * One set of zod schemas serves the server (validation) and the client (types).
 */
export const PROTOCOL_VERSION = 4;
/** Frames before a successful `connect` are capped at 64 KiB. */
export const PRE_CONNECT_MAX_PAYLOAD = 64 * 1024;

// ---------------------------------------------------------------- frames

const frameId = z.string().min(1).max(256);

/** A request frame: `{ type: "req", id, method, params? }`. */
export const RequestFrameSchema = z.strictObject({
  type: z.literal("req"),
  id: frameId,
  method: z.string().min(1).max(128),
  params: z.unknown().optional(),
});

/** Top-level wire error codes; the specific reason is in `details.code`. */
export const WireErrorCodeSchema = z.enum([
  "INVALID_REQUEST",
  "FORBIDDEN",
  "UNAVAILABLE",
  "NOT_LINKED",
  "NOT_PAIRED",
]);
/** A top-level wire error code. */
export type WireErrorCode = z.infer<typeof WireErrorCodeSchema>;

/** The error object of a failed response: `{ code, message, details?, retryable?, retryAfterMs? }`. */
export const WireErrorSchema = z.object({
  code: z.string(),
  message: z.string(),
  details: z.record(z.string(), z.unknown()).optional(),
  retryable: z.boolean().optional(),
  retryAfterMs: z.number().optional(),
});
/** The error object of a failed response. */
export type WireError = z.infer<typeof WireErrorSchema>;

/** A response frame: `ok: true` with a payload, or `ok: false` with an error. */
export const ResponseFrameSchema = z.union([
  z.strictObject({
    type: z.literal("res"),
    id: z.string(),
    ok: z.literal(true),
    payload: z.unknown().optional(),
  }),
  z.strictObject({ type: z.literal("res"), id: z.string(), ok: z.literal(false), error: WireErrorSchema }),
]);

/**
 * An event frame: `{ type: "event", event, payload?, seq?, stateVersion? }`; `seq` counts this connection's events.
 * `stateVersion` comes with OpenClaw's `presence` and `health` events (its state counters); ours send none.
 */
export const EventFrameSchema = z.strictObject({
  type: z.literal("event"),
  event: z.string(),
  payload: z.unknown().optional(),
  seq: z.int().optional(),
  stateVersion: z.object({ presence: z.int(), health: z.int() }).optional(),
});

/** A request frame. */
export type RequestFrame = z.infer<typeof RequestFrameSchema>;
/** A response frame. */
export type ResponseFrame = z.infer<typeof ResponseFrameSchema>;
/** An event frame. */
export type EventFrame = z.infer<typeof EventFrameSchema>;

/** The params of `connect`, the first request on a connection. */
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
/** The params of `connect`. */
export type ConnectParams = z.infer<typeof ConnectParamsSchema>;

/** One entry of `hello-ok` `snapshot.presence` (OpenClaw: connected clients and nodes; ours sends none). */
export interface PresenceEntry {
  ts: number;
  host?: string | undefined;
  version?: string | undefined;
  platform?: string | undefined;
  mode?: string | undefined;
  reason?: string | undefined;
  [key: string]: unknown;
}

/** The payload of a successful `connect`: protocol, server, features, snapshot, granted scopes and limits. */
export interface HelloOk {
  type: "hello-ok";
  protocol: number;
  server: { version: string; connId: string };
  /** `capabilities`: our extensions beyond OpenClaw's methods (`GATEWAY_CAPABILITIES`); OpenClaw sends its own. */
  features: { methods: string[]; events: string[]; capabilities?: string[] | undefined };
  /**
   * `presence`, `health`, `stateVersion` and `uptimeMs` are required by OpenClaw's `HelloOkSchema`; our gateway
   * sends an empty presence list, `health: { ok: true, ts }` and `stateVersion: { presence: 0, health: 0 }`.
   */
  snapshot: {
    presence: PresenceEntry[];
    health: { ok?: true | undefined; ts?: number | undefined; [key: string]: unknown };
    stateVersion: { presence: number; health: number };
    uptimeMs: number;
    sessionDefaults?:
      | { defaultAgentId: string; mainKey: string; mainSessionKey: string; scope?: string | undefined }
      | undefined;
  };
  auth: { role: string; scopes: string[] };
  policy: { maxPayload: number; maxBufferedBytes: number; tickIntervalMs: number };
}

/**
 * Extensions our gateway announces in `hello-ok` `features.capabilities`; a client uses one only when the gateway
 * lists it (an OpenClaw gateway rejects them). `agent.spawnedBy`: `agent` accepts `spawnedBy`.
 * `sessions.subscribe.replay`: `sessions.subscribe { runIds, replay: true }` answers with the runs' events so far.
 */
export const GATEWAY_CAPABILITIES = ["agent.spawnedBy", "sessions.subscribe.replay"] as const;
/** An extension our gateway announces in `hello-ok` `features.capabilities`. */
export type GatewayCapability = (typeof GATEWAY_CAPABILITIES)[number];

/**
 * Our gateway also names its `session.dmScope` (how direct chats map to sessions: what a web chat needs to key its
 * visitor) in `hello-ok` `features.capabilities`, as `session.dmScope=<scope>`: OpenClaw's `hello-ok` and
 * `agents.list` schemas are closed and have no field for it. An OpenClaw gateway names none.
 */
export const DM_SCOPE_CAPABILITY_PREFIX = "session.dmScope=";

/** The capability naming `scope`: `session.dmScope=per-peer`. */
export function dmScopeCapability(scope: DmScope): string {
  return `${DM_SCOPE_CAPABILITY_PREFIX}${scope}`;
}

/** The `session.dmScope` a `hello-ok` names, or `undefined` when it names none or an unknown one. */
export function dmScopeOf(hello: {
  features?: { capabilities?: readonly string[] | undefined } | undefined;
}): DmScope | undefined {
  const named = hello.features?.capabilities?.find((c) => c.startsWith(DM_SCOPE_CAPABILITY_PREFIX));
  const value = named?.slice(DM_SCOPE_CAPABILITY_PREFIX.length);
  return DM_SCOPES.find((scope) => scope === value);
}

/** The events a gateway can send. */
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
const cursor = z.string().min(1).max(LIMITS.cursor);

/**
 * `sessions.list` params. `sortBy: "key"` walks the sessions by key, and every page of that walk gives a
 * `nextCursor`; `cursor` continues it (the walk's filters travel in the cursor). `cursor` and `offset` are exclusive.
 */
export const SessionsListMethodParams = z.strictObject({
  limit: z.int().min(1).max(1000).optional(),
  offset: z.int().min(0).optional(),
  /** Ours: `updatedAt` (the default, newest first) or `key` (ascending; the order a cursor walks in). */
  sortBy: z.enum(["updatedAt", "key"]).optional(),
  /** Ours: the `nextCursor` of the previous page, unchanged. */
  cursor: cursor.optional(),
  activeMinutes: z.int().min(1).optional(),
  agentId: z.string().trim().min(1).max(LIMITS.id).optional(),
  label: labelText.optional(),
  spawnedBy: optionalKey,
  search: z.string().max(LIMITS.search).optional(),
  includeGlobal: z.boolean().optional(),
  includeUnknown: z.boolean().optional(),
  kinds: z.array(z.enum(SESSION_KINDS)).max(LIMITS.kinds).optional(),
  includeArchived: z.boolean().optional(),
});

/**
 * `sessions.search` params (ours): sessions whose transcript, key, label or display name match `query`, best first,
 * paged by `offset`. With `requesterKey`, as that session's tools would see them: sessions it may not see never match.
 */
export const SessionsSearchMethodParams = z.strictObject({
  query: z.string().max(LIMITS.search),
  limit: z.int().min(1).max(100).optional(),
  offset: z.int().min(0).max(10_000).optional(),
  /** Best-matching messages shown per session (default 1). */
  messagesPerSession: z.int().min(1).max(10).optional(),
  agentId: z.string().trim().min(1).max(LIMITS.id).optional(),
  kinds: z.array(z.enum(SESSION_KINDS)).max(LIMITS.kinds).optional(),
  activeMinutes: z.int().min(1).optional(),
  includeArchived: z.boolean().optional(),
  requesterKey: optionalKey,
  sandboxed: z.boolean().optional(),
});

/** `sessions.resolve` params: a key, a sessionId or a label. */
export const SessionsResolveMethodParams = z.strictObject({
  key: optionalKey,
  sessionId: idText.optional(),
  label: labelText.optional(),
  agentId: idText.optional(),
  spawnedBy: optionalKey,
});

/** `sessions.patch` params (`null` clears a field). */
export const SessionsPatchMethodParams = z.strictObject({
  key,
  label: labelText.nullable().optional(),
  sendPolicy: z.enum(["allow", "deny"]).nullable().optional(),
  /** What the session does with a user's message while it is busy (`null` clears it: the agent's mode applies). */
  queueMode: z.enum(QUEUE_MODES).nullable().optional(),
  /** The budget of the trees this session's users' messages start (`null` clears it: the agent's budget applies). */
  budget: BudgetSchema.nullable().optional(),
  /** What this session's own session tools may see; overrides `tools.sessions.visibility` (sandbox clamps still apply). */
  visibility: z.enum(VISIBILITIES).nullable().optional(),
  model: idText.nullable().optional(),
  thinkingLevel: idText.nullable().optional(),
  verboseLevel: idText.nullable().optional(),
});

/** `sessions.delete` params. */
export const SessionsDeleteMethodParams = z.strictObject({ key, deleteTranscript: z.boolean().optional() });

/**
 * `chat.history` params: the newest page, or the one before `cursor` (the previous page's `nextCursor`, which
 * messages appended meanwhile never shift) or `offset` (counted back from the newest message). Not both.
 */
export const ChatHistoryMethodParams = z.strictObject({
  sessionKey: key,
  limit: z.int().min(1).max(1000).optional(),
  offset: z.int().min(0).optional(),
  cursor: cursor.optional(),
});

/** `chat.send` params. */
export const ChatSendMethodParams = z.strictObject({
  sessionKey: key,
  message: messageText,
  idempotencyKey,
  deliver: z.boolean().optional(),
  timeoutMs: z.int().min(0).optional(),
  /** Ours: the W3C trace context the run tree continues (it becomes part of the caller's trace). */
  traceparent: traceparentParam.optional(),
  /** Ours: the budget every run of the tree this message starts draws from (wins over the session's and agent's). */
  budget: BudgetSchema.optional(),
});

/** `chat.abort` params. */
export const ChatAbortMethodParams = z.strictObject({ sessionKey: key, runId: idText.optional() });

/** `agent`'s `inputProvenance`: marks the message as coming from another session. */
export const InputProvenanceSchema = z.strictObject({
  kind: idText,
  sourceSessionKey: optionalKey,
  sourceChannel: idText.optional(),
  sourceTool: idText.optional(),
  /**
   * Ours: how many messages from its tree's first this one is, when the tree began elsewhere (another gateway, over
   * A2A): the run counts on from it, so `maxHops` holds across gateways.
   */
  hops: z.int().min(1).max(100).optional(),
});

/** `agent` params. */
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
  /** Ours: the W3C trace context the run tree continues (it becomes part of the caller's trace). */
  traceparent: traceparentParam.optional(),
  /** Ours: the budget every run of the tree this message starts draws from (wins over the session's and agent's). */
  budget: BudgetSchema.optional(),
});

/** `agent.wait` params (`timeoutMs` default 30,000). */
export const AgentWaitMethodParams = z.strictObject({
  runId: z.string().trim().min(1).max(LIMITS.id),
  timeoutMs: z
    .int()
    .min(0)
    .max(24 * 3600_000)
    .optional(),
});

/** `agents.list` params (none). */
export const AgentsListMethodParams = z.strictObject({});

/** `deliveries.get` params. */
export const DeliveriesGetMethodParams = z.strictObject({ id: idText.min(1) });
/** `deliveries.list` params. */
export const DeliveriesListMethodParams = z.strictObject({
  sessionKey: optionalKey,
  runId: idText.optional(),
  status: z.enum(["queued", "delivered", "suppressed", "failed"]).optional(),
  limit: z.int().min(1).max(1000).optional(),
});

/** `runs.list` params (ours): the runs queued or running now, on every gateway of the store, oldest first. */
export const RunsListMethodParams = z.strictObject({
  sessionKey: optionalKey,
  status: z.enum(["queued", "running"]).optional(),
  limit: z.int().min(1).max(1000).optional(),
});

/**
 * `runs.tree` params (ours): the whole tree of runs `runId` belongs to. With `requesterKey`, as that session's tools
 * would see it: runs of sessions it may not see are left out.
 */
export const RunsTreeMethodParams = z.strictObject({
  runId: idText.trim().min(1),
  requesterKey: optionalKey,
  sandboxed: z.boolean().optional(),
  limit: z.int().min(1).max(1000).optional(),
});

/** `deliveries.retry` params (ours): send a `failed` or `suppressed` delivery again. */
export const DeliveriesRetryMethodParams = z.strictObject({ id: idText.min(1) });

/** `bindings.list` params (ours): the platform threads bound to sessions, optionally of one session. */
export const BindingsListMethodParams = z.strictObject({ sessionKey: optionalKey });

/** `sessions.tools.call` params: run a session tool as `requesterKey`. */
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
  /**
   * With `runIds` on `sessions.subscribe`: the answer carries those runs' `chat` and `agent` events so far
   * (`events`), so a follower that comes late misses none. Capability `sessions.subscribe.replay`.
   */
  replay: z.literal(true).optional(),
});

/** Every wire method's params schema, by method name. */
export const METHOD_PARAMS = {
  "sessions.list": SessionsListMethodParams,
  "sessions.search": SessionsSearchMethodParams,
  "sessions.resolve": SessionsResolveMethodParams,
  "sessions.patch": SessionsPatchMethodParams,
  "sessions.delete": SessionsDeleteMethodParams,
  "chat.history": ChatHistoryMethodParams,
  "chat.send": ChatSendMethodParams,
  "chat.abort": ChatAbortMethodParams,
  agent: AgentMethodParams,
  "agent.wait": AgentWaitMethodParams,
  "agents.list": AgentsListMethodParams,
  "runs.list": RunsListMethodParams,
  "runs.tree": RunsTreeMethodParams,
  "deliveries.get": DeliveriesGetMethodParams,
  "deliveries.list": DeliveriesListMethodParams,
  "deliveries.retry": DeliveriesRetryMethodParams,
  "bindings.list": BindingsListMethodParams,
  "sessions.tools.call": ToolsCallMethodParams,
  "sessions.subscribe": SessionsSubscribeMethodParams,
  "sessions.unsubscribe": SessionsSubscribeMethodParams,
} as const;

/** Every wire method's name. */
export const GATEWAY_METHODS = Object.keys(METHOD_PARAMS) as GatewayMethodName[];

/** A wire method's name. */
export type GatewayMethodName = keyof typeof METHOD_PARAMS;
/** A method's params as a caller writes them. */
export type MethodParams<M extends GatewayMethodName> = z.input<(typeof METHOD_PARAMS)[M]>;
/** A method's params after validation. */
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

// Payload schemas (loose: servers may add fields) live in their own file.
export * from "./method-payloads.js";
