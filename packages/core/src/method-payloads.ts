// The payloads of the wire methods (loose: servers may add fields).
import { z } from "zod";
import { VISIBILITIES } from "./access.js";
import { BudgetSchema, BudgetStatusSchema } from "./budget.js";
import { AgentEventPayloadSchema, ChatEventPayloadSchema } from "./event-payloads.js";
import type { GatewayMethodName } from "./protocol.js";
import { QUEUE_MODES } from "./queue-mode.js";

/** A `chat.history` message: ours carries `ts`/`seq` and `timestamp`/`__openclaw.seq`; OpenClaw's only the latter. */
const HistoryMessageSchema = z.looseObject({
  role: z.string(),
  content: z.unknown(),
  ts: z.number().optional(),
  seq: z.number().optional(),
  timestamp: z.number().optional(),
  runId: z.string().optional(),
  __openclaw: z.looseObject({ seq: z.number().optional(), runId: z.string().optional() }).optional(),
});

/**
 * What `visibility` on a `sessions.list` row can say. Ours: which sessions the session's tools may see (`self`,
 * `tree`, `agent`, `all`), when an operator set it with `sessions.patch`. OpenClaw 2026.9's rows carry its sharing
 * mode in the same field instead: `shared`, `read-only`, `suggest` or `draft`.
 */
export const ROW_VISIBILITIES = [...VISIBILITIES, "shared", "read-only", "suggest", "draft"] as const;
/** A `sessions.list` row's `visibility`: ours (`self`, `tree`, `agent`, `all`) or OpenClaw's sharing mode. */
export type RowVisibility = (typeof ROW_VISIBILITIES)[number];

/** A `sessions.list` row (the gateway's kinds: `direct`, `group`, `global`, `unknown`). */
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
  /** The session's own queue mode, when it has one (`sessions.patch`, `/queue`). */
  queueMode: z.enum(QUEUE_MODES).optional(),
  /** The session's own budget for the trees its users' messages start, when it has one (`sessions.patch`). */
  budget: BudgetSchema.optional(),
  visibility: z.enum(ROW_VISIBILITIES).optional(),
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
  /** A run of this session is queued or running now (ours: on any gateway of the store; as OpenClaw's rows). */
  hasActiveRun: z.boolean().optional(),
  /** Those runs, oldest first (present when `hasActiveRun`). */
  activeRunIds: z.array(z.string()).optional(),
  deliveryContext: z
    .object({
      channel: z.string().optional(),
      to: z.string().optional(),
      accountId: z.string().optional(),
      threadId: z.string().optional(),
    })
    .optional(),
});
/** A `sessions.list` row. */
export type GatewayRow = z.infer<typeof GatewayRowSchema>;

/**
 * `sessions.list` payload: one page of rows and where the next starts. `nextCursor` (ours) comes with
 * `sortBy: "key"`: pass it as `cursor` for the next page; `null` on the last.
 */
export const SessionsListPayloadSchema = z.looseObject({
  ts: z.number(),
  count: z.number(),
  totalCount: z.number().optional(),
  hasMore: z.boolean(),
  nextOffset: z.number().nullable(),
  nextCursor: z.string().nullable().optional(),
  sessions: z.array(GatewayRowSchema),
});

/** A message that matched a search: where it is, who wrote it, and a snippet with the matching words' ranges. */
export const SearchMessageSchema = z.looseObject({
  seq: z.number(),
  role: z.string(),
  ts: z.number().optional(),
  /** At most 160 characters around the first match (`…` where cut), whitespace collapsed. */
  snippet: z.string(),
  /** `[start, end)` ranges of `snippet` (UTF-16 code units) that matched the query. */
  highlights: z.array(z.tuple([z.number(), z.number()])),
});
/** A message that matched a search. */
export type SearchMessagePayload = z.infer<typeof SearchMessageSchema>;

/** One session a search found: its list row, its score, and its best-matching messages (best first). */
export const SessionSearchResultSchema = z.looseObject({
  key: z.string(),
  /** Higher ranks first; 1 or more when the key, label or display name matched. Comparable within one search only. */
  score: z.number(),
  /** How many of its messages matched. */
  matchedMessages: z.number(),
  messages: z.array(SearchMessageSchema),
  session: GatewayRowSchema,
});
/** One session a search found. */
export type SessionSearchResultPayload = z.infer<typeof SessionSearchResultSchema>;

/** `sessions.search` payload: one page of results, best first, and where the next page starts. */
export const SessionsSearchPayloadSchema = z.looseObject({
  ts: z.number(),
  count: z.number(),
  hasMore: z.boolean(),
  nextOffset: z.number().nullable(),
  /** The words are in more messages than a search ranks (20,000): the results come from the most recent sessions. */
  truncated: z.boolean(),
  results: z.array(SessionSearchResultSchema),
});
/** `sessions.search` payload. */
export type SessionsSearchPayload = z.infer<typeof SessionsSearchPayloadSchema>;

/** One outbox record: target, text, status, attempts and receipt. */
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
/** One outbox record as the wire carries it. */
export type DeliveryRecordPayload = z.infer<typeof DeliveryRecordSchema>;

/** A thread bound to a session (`bindings.list`): its messages route to the session, its replies go there. */
export const ThreadBindingSchema = z.looseObject({
  channel: z.string(),
  accountId: z.string(),
  threadId: z.string(),
  sessionKey: z.string(),
  to: z.string(),
  parentTo: z.string().optional(),
  boundAt: z.number(),
  lastActivityAt: z.number(),
  idleHours: z.number(),
  maxAgeHours: z.number(),
});
/** A thread binding as the wire carries it. */
export type ThreadBindingPayload = z.infer<typeof ThreadBindingSchema>;

/** `agent.wait` payload: the run's outcome, or `timeout` (without `endedAt`) when the wait ran out. */
export const AgentWaitPayloadSchema = z.looseObject({
  runId: z.string(),
  status: z.enum(["ok", "error", "timeout"]),
  startedAt: z.number().optional(),
  endedAt: z.number().optional(),
  error: z.string().optional(),
  reply: z.string().optional(),
  /** The run that took this run's message and answers it (queue modes `collect`, `interrupt`, `steer`). */
  mergedInto: z.string().optional(),
  /** The run's tree has a budget: its limits, what the tree's runs have spent and what is left. */
  budget: BudgetStatusSchema.optional(),
});
/** `agent.wait` payload. */
export type AgentWaitPayload = z.infer<typeof AgentWaitPayloadSchema>;

/** A run under way (`runs.list`): queued for its session's lane, or running on `owner`. */
export const ActiveRunSchema = z.looseObject({
  runId: z.string(),
  sessionKey: z.string(),
  agentId: z.string(),
  kind: z.string(),
  status: z.enum(["queued", "running"]),
  createdAt: z.number(),
  startedAt: z.number().optional(),
  /** The gateway instance that runs it. */
  owner: z.string().optional(),
});
/** A run under way as the wire carries it. */
export type ActiveRunPayload = z.infer<typeof ActiveRunSchema>;

/** What made a run (`runs.tree`): `request`, `inbound`, `tool` (a tool call of `runId`) or `follow_up` (of `runId`). */
export const RunCauseSchema = z.looseObject({
  kind: z.string(),
  runId: z.string().optional(),
  toolCallId: z.string().optional(),
  tool: z.string().optional(),
  method: z.string().optional(),
  channel: z.string().optional(),
  messageId: z.string().optional(),
  step: z.string().optional(),
  turn: z.number().optional(),
});

/** One run of a tree (`runs.tree`): who caused it, where it ran, how it went, what it cost and delivered. */
export const RunTreeNodeSchema = z.looseObject({
  runId: z.string(),
  /** The run that caused it (absent on the root, and on runs recorded before causes were). */
  parentRunId: z.string().optional(),
  cause: RunCauseSchema.optional(),
  /** How many messages (sends, spawns) from the tree's first run it is (absent: 0). */
  hops: z.number().optional(),
  /** Its calls the tree's guards refused: `max_hops` or `loop`, the tool, the limit and the chain of sessions. */
  guards: z
    .array(
      z.looseObject({ code: z.string(), tool: z.string(), limit: z.number(), chain: z.array(z.string()) }),
    )
    .optional(),
  sessionKey: z.string(),
  agentId: z.string(),
  kind: z.string(),
  status: z.enum(["queued", "running", "ok", "error", "timeout", "aborted"]),
  createdAt: z.number(),
  startedAt: z.number().optional(),
  endedAt: z.number().optional(),
  error: z.string().optional(),
  usage: z
    .looseObject({
      inputTokens: z.number().optional(),
      outputTokens: z.number().optional(),
      totalTokens: z.number().optional(),
      costUsd: z.number().optional(),
    })
    .optional(),
  /** The run that took this run's message and answered it (queue modes): this one never ran. */
  mergedInto: z.string().optional(),
  /** The outbox records the run produced (its reply, an announce of its follow-up), oldest first. */
  deliveries: z.array(DeliveryRecordSchema),
});
/** One run of a tree as the wire carries it. */
export type RunTreeNodePayload = z.infer<typeof RunTreeNodeSchema>;

/** `runs.tree` payload: the tree's runs, oldest first; `truncated` when there were more than the limit. */
export const RunTreePayloadSchema = z.looseObject({
  rootRunId: z.string(),
  runs: z.array(RunTreeNodeSchema),
  truncated: z.boolean(),
  /** The tree has a budget: its limits, what all its runs have spent and what is left. */
  budget: BudgetStatusSchema.optional(),
});
/** `runs.tree` payload. */
export type RunTreePayload = z.infer<typeof RunTreePayloadSchema>;

/** One event of a run as `sessions.subscribe { replay: true }` hands it back: its name and payload. */
export const ReplayedEventSchema = z.union([
  z.looseObject({ event: z.literal("chat"), payload: ChatEventPayloadSchema }),
  z.looseObject({ event: z.literal("agent"), payload: AgentEventPayloadSchema }),
]);
/** One event of a run handed back by `sessions.subscribe { replay: true }`. */
export type ReplayedEvent = z.infer<typeof ReplayedEventSchema>;

/**
 * `subscribed`: any subscription left; `keys`: the keys the call named, stored form; `runIds`: those under way;
 * `events` (with `replay: true`): the named runs' events so far, oldest first, streamed text joined into one delta.
 */
export const SubscriptionPayloadSchema = z.looseObject({
  ok: z.literal(true),
  subscribed: z.boolean(),
  all: z.boolean().optional(),
  keys: z.array(z.string()).optional(),
  runIds: z.array(z.string()).optional(),
  events: z.array(ReplayedEventSchema).optional(),
});

/** Every wire method's payload schema, by method name (loose: servers may add fields). */
export const METHOD_PAYLOADS = {
  "sessions.list": SessionsListPayloadSchema,
  "sessions.search": SessionsSearchPayloadSchema,
  "sessions.resolve": z.looseObject({ ok: z.literal(true), key: z.string(), agentId: z.string().optional() }),
  // The entry is the session's list row (ours: with `key`; OpenClaw's entry has none).
  "sessions.patch": z.looseObject({
    ok: z.literal(true),
    key: z.string(),
    entry: GatewayRowSchema.partial({ key: true, kind: true, updatedAt: true, sessionId: true }),
  }),
  "sessions.delete": z.looseObject({
    ok: z.literal(true),
    key: z.string(),
    deleted: z.boolean(),
    archived: z.array(z.string()).optional(),
  }),
  // An unknown session answers ok and empty, without `sessionId` (as OpenClaw does). `nextCursor` is ours: the
  // `cursor` of the page before this one, `null` on the oldest (absent from OpenClaw gateways).
  "chat.history": z.looseObject({
    sessionKey: z.string(),
    sessionId: z.string().optional(),
    messages: z.array(HistoryMessageSchema),
    totalMessages: z.number(),
    hasMore: z.boolean(),
    // OpenClaw 2026.9 sends no `nextOffset` (it pages with cursors); ours sends it, `null` on the last page.
    nextOffset: z.number().nullable().optional(),
    nextCursor: z.string().nullable().optional(),
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
  "runs.list": z.looseObject({ runs: z.array(ActiveRunSchema) }),
  "runs.tree": RunTreePayloadSchema,
  "deliveries.get": DeliveryRecordSchema,
  "deliveries.list": z.looseObject({ deliveries: z.array(DeliveryRecordSchema) }),
  "deliveries.retry": DeliveryRecordSchema,
  "bindings.list": z.looseObject({ bindings: z.array(ThreadBindingSchema) }),
  "sessions.tools.call": z.unknown(),
  "sessions.subscribe": SubscriptionPayloadSchema,
  "sessions.unsubscribe": SubscriptionPayloadSchema,
} as const satisfies Record<GatewayMethodName, z.ZodType>;

/** A method's payload. */
export type MethodPayload<M extends GatewayMethodName> = z.output<(typeof METHOD_PAYLOADS)[M]>;
