import { z } from "zod";
import { BudgetSchema, BudgetStatusSchema } from "./budget.js";
import { CHAT_TYPES, normalizeAgentId, SESSION_KINDS } from "./keys.js";
import { LIMITS } from "./limits.js";
import { QUEUE_MODES } from "./queue-mode.js";

/** Largest `message` / `task` accepted, in UTF-8 bytes. */
export const MAX_MESSAGE_BYTES: number = LIMITS.toolMessageBytes;

/** UTF-8 byte length without TextEncoder (core runs anywhere). */
export function utf8Length(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) bytes += 1;
    else if (c < 0x800) bytes += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        bytes += 4;
        i++;
      } else bytes += 3;
    } else bytes += 3;
  }
  return bytes;
}

function clamp(min: number, max: number) {
  return (value: number): number => Math.min(max, Math.max(min, value));
}

const sessionKeyParam = z
  .string()
  .trim()
  .min(1, "must be a session key or sessionId")
  .max(LIMITS.key)
  .describe("Session key (e.g. `main`, `agent:main:discord:group:123`) or a sessionId from sessions_list.");

const messageText = (what: string) =>
  z
    .string()
    .min(1, `${what} must not be empty`)
    // Characters never outnumber UTF-8 bytes: this bound rejects early and shows as maxLength in the JSON Schema.
    .max(MAX_MESSAGE_BYTES, `${what} must be at most ${MAX_MESSAGE_BYTES} bytes`)
    .refine((s) => s.trim() !== "", `${what} must not be empty`)
    .refine((s) => utf8Length(s) <= MAX_MESSAGE_BYTES, `${what} must be at most ${MAX_MESSAGE_BYTES} bytes`);

// ---------------------------------------------------------------- shared result pieces

/** The `status` of a tool result. */
export const ToolStatusSchema = z.enum(["ok", "accepted", "timeout", "error", "forbidden", "not_found"]);
/** The `status` of a tool result: `ok`, `accepted`, `timeout`, `error`, `forbidden` or `not_found`. */
export type ToolStatus = z.infer<typeof ToolStatusSchema>;

/** Marks a message one session put into another (`sessions_send`, `sessions_spawn`), so it is never taken for user input. */
export const InterSessionProvenanceSchema = z.looseObject({
  kind: z.literal("inter_session"),
  sourceSessionKey: z.string(),
  sourceChannel: z.string().optional(),
  sourceTool: z.string().optional(),
  /** How many messages from the tree's first (a user's, or a request's) this one is: 1 for a first send. */
  hops: z.number().optional(),
});
/** Where an inter-session message came from: source session, channel and tool. */
export type InterSessionProvenance = z.infer<typeof InterSessionProvenanceSchema>;

/** Who wrote a transcript message. */
export const TranscriptRoleSchema = z.enum(["user", "assistant", "system", "toolResult", "tool"]);
/** Who wrote a transcript message: `user`, `assistant`, `system`, or a tool result (`toolResult`, `tool`). */
export type TranscriptRole = z.infer<typeof TranscriptRoleSchema>;

/** One transcript message: role, content, time, and provenance when it came from another session. */
export const TranscriptMessageSchema = z.looseObject({
  role: TranscriptRoleSchema,
  content: z.union([z.string(), z.array(z.looseObject({ type: z.string() }))]),
  ts: z.number(),
  runId: z.string().optional(),
  toolName: z.string().optional(),
  toolCallId: z.string().optional(),
  provenance: InterSessionProvenanceSchema.optional(),
});
/** One transcript message (extra fields are kept). */
export type TranscriptMessage = z.infer<typeof TranscriptMessageSchema>;

/** Where replies for a conversation go: `{ channel, to, accountId?, threadId? }`. */
export const DeliveryContextSchema = z.object({
  channel: z.string().optional(),
  to: z.string().optional(),
  accountId: z.string().optional(),
  threadId: z.string().optional(),
});

/** A `sessions_list` row. */
export const SessionRowSchema = z.object({
  key: z.string(),
  kind: z.enum(SESSION_KINDS),
  channel: z.string(),
  displayName: z.string().optional(),
  label: z.string().optional(),
  updatedAt: z.number(),
  sessionId: z.string(),
  model: z.string().optional(),
  contextTokens: z.number().optional(),
  totalTokens: z.number().optional(),
  thinkingLevel: z.string().optional(),
  verboseLevel: z.string().optional(),
  systemSent: z.boolean().optional(),
  abortedLastRun: z.boolean().optional(),
  sendPolicy: z.enum(["allow", "deny"]).optional(),
  lastChannel: z.string().optional(),
  lastTo: z.string().optional(),
  deliveryContext: DeliveryContextSchema.optional(),
  transcriptPath: z.string().optional(),
  messages: z.array(TranscriptMessageSchema).optional(),
  /** With `query`: the session's best-matching message, its matching words marked `«like this»`. */
  match: z.object({ seq: z.int(), role: z.string(), snippet: z.string() }).optional(),
});
/** A `sessions_list` row, as an agent sees it. */
export type SessionRow = z.infer<typeof SessionRowSchema>;

/** The stored metadata of a session (SPEC 2). */
export const SessionEntrySchema = z.object({
  key: z.string(),
  sessionId: z.string(),
  agentId: z.string(),
  createdAt: z.number(),
  updatedAt: z.number(),
  channel: z.string().optional(),
  chatType: z.enum(CHAT_TYPES).optional(),
  displayName: z.string().optional(),
  label: z.string().optional(),
  deliveryContext: DeliveryContextSchema.optional(),
  lastChannel: z.string().optional(),
  lastTo: z.string().optional(),
  lastAccountId: z.string().optional(),
  lastThreadId: z.string().optional(),
  model: z.string().optional(),
  contextTokens: z.number().optional(),
  inputTokens: z.number().optional(),
  outputTokens: z.number().optional(),
  totalTokens: z.number().optional(),
  thinkingLevel: z.string().optional(),
  verboseLevel: z.string().optional(),
  systemSent: z.boolean().optional(),
  abortedLastRun: z.boolean().optional(),
  sendPolicy: z.enum(["allow", "deny"]).optional(),
  /** This session's own queue mode (`sessions.patch`, `/queue`); wins over its agent's. */
  queueMode: z.enum(QUEUE_MODES).optional(),
  /** This session's own budget for the trees its users' messages start (`sessions.patch`); wins over its agent's. */
  budget: BudgetSchema.optional(),
  spawnedBy: z.string().optional(),
  spawnDepth: z.number().optional(),
  archivedAt: z.number().optional(),
});
/** A session's stored metadata. */
export type SessionEntry = z.infer<typeof SessionEntrySchema>;

const errorFields = {
  error: z.string().optional().describe("What went wrong, when status is not ok/accepted."),
  code: z.string().optional().describe("A stable machine-readable reason for a denial or error."),
};

/** What a refusal by the tree's guards (`code` `max_hops` or `loop`) adds: the limit and the chain it stopped. */
const guardFields = {
  limit: z.number().optional().describe("The limit that refused the call (max_hops: hops; loop: messages)."),
  chain: z
    .array(z.string())
    .optional()
    .describe("The sessions the request went through, from the first to the one it would reach."),
  budget: BudgetStatusSchema.optional().describe(
    "code budget_exceeded: the tree's budget — its limits, what its runs have spent and what is left.",
  ),
};

// ---------------------------------------------------------------- sessions_list

/** `sessions_list` parameters (limits clamped, defaults filled). */
export const SessionsListParams = z.strictObject({
  kinds: z
    .array(z.enum(SESSION_KINDS))
    .max(LIMITS.kinds)
    .optional()
    .describe("Only sessions of these kinds: main, group, cron, hook, node, other."),
  limit: z
    .int()
    .default(50)
    .transform(clamp(1, 200))
    .describe("Maximum rows (default 50, clamped to 1..200)."),
  activeMinutes: z.int().min(1).optional().describe("Only sessions updated within the last N minutes."),
  messageLimit: z
    .int()
    .default(0)
    .transform(clamp(0, 20))
    .describe("Attach the last N messages of each session, tool results removed (default 0, max 20)."),
  query: z
    .string()
    .max(LIMITS.search)
    .optional()
    .describe(
      "Search: only sessions whose messages, key, label or display name contain all these words (a word of 3+ characters also finds longer words it starts), best match first; each row gets `match`, its best-matching message with the words «marked».",
    ),
});

/** `sessions_list` result: `{ count, sessions }`. */
export const SessionsListResult = z.object({
  count: z.int(),
  sessions: z.array(SessionRowSchema),
});

// ---------------------------------------------------------------- sessions_history

/** `sessions_history` parameters. */
export const SessionsHistoryParams = z.strictObject({
  sessionKey: sessionKeyParam,
  limit: z
    .int()
    .default(50)
    .transform(clamp(1, 1000))
    .describe("Newest N messages, returned oldest first (default 50, clamped to 1..1000)."),
  includeTools: z.boolean().default(false).describe("Include tool result messages (default false)."),
  deliveryId: z
    .string()
    .trim()
    .min(1)
    .max(LIMITS.id)
    .optional()
    .describe(
      "A delivery id from sessions_send (delivery.id) to this session: the result's `delivery` says whether it reached the chat.",
    ),
});

/** How an announce's delivery went: `pending`, `delivered`, `suppressed` or `failed`. */
export const DeliveryStatusSchema = z.enum(["pending", "delivered", "suppressed", "failed"]);

/**
 * A delivery as the agent that caused it reads it: `pending` (not sent yet), `delivered` with the platform's
 * message ids, `suppressed` with the rule or step that held it back, or `failed` with the last error.
 */
export const DeliveryOutcomeSchema = z.object({
  id: z.string().optional().describe("Pass it to sessions_history (deliveryId) to read the outcome later."),
  status: DeliveryStatusSchema,
  messageIds: z.array(z.string()).optional().describe("The chat platform's ids of the posted message(s)."),
  reason: z
    .string()
    .optional()
    .describe("Why it was suppressed or failed; on a pending one, the error it is being retried after."),
});

/** `sessions_history` result: messages oldest first, with `truncated` and `droppedMessages` when bounded. */
export const SessionsHistoryResult = z.object({
  status: ToolStatusSchema,
  sessionKey: z.string(),
  messages: z.array(TranscriptMessageSchema),
  truncated: z.boolean().optional(),
  droppedMessages: z.int().optional(),
  delivery: DeliveryOutcomeSchema.optional().describe(
    "The outcome of the delivery asked for with deliveryId.",
  ),
  ...errorFields,
});

// ---------------------------------------------------------------- sessions_send

const labelParam = z.string().trim().min(1).max(LIMITS.label);
/** An agent id as a tool takes it: trimmed and normalised as session keys spell it. */
const agentIdParam = z
  .string()
  .trim()
  .min(1)
  .max(LIMITS.id)
  .transform((id) => normalizeAgentId(id));

/**
 * `sessions_send` parameters: one target (`sessionKey`), or a broadcast to every session carrying a label (`label`,
 * or any of `labels`; `agentId` narrows it to one agent's sessions). Exactly one of `sessionKey`, `label`, `labels`.
 */
export const SessionsSendParams = z
  .strictObject({
    sessionKey: sessionKeyParam.optional(),
    label: labelParam
      .optional()
      .describe(
        "Instead of sessionKey: send to every session with this label that you can see (a broadcast; each target answers on its own).",
      ),
    labels: z
      .array(labelParam)
      .min(1)
      .max(LIMITS.labels)
      .optional()
      .describe("Instead of sessionKey: send to every session you can see whose label is one of these."),
    agentId: agentIdParam.optional().describe("With label or labels: only that agent's sessions."),
    message: messageText("message").describe("The message to deliver into the target session(s)."),
    timeoutSeconds: z
      .int()
      .min(0)
      .default(30)
      .describe(
        "Seconds to wait for the reply (for a broadcast: for every reply, at once; default 30). 0 = fire-and-forget: returns status accepted.",
      ),
  })
  .superRefine((params, issues) => {
    const given = (["sessionKey", "label", "labels"] as const).filter((name) => params[name] !== undefined);
    if (given.length !== 1) {
      issues.addIssue({
        code: "custom",
        path: [given[1] ?? "sessionKey"],
        message:
          given.length === 0
            ? "give sessionKey (one session), or label or labels (every session with that label)"
            : `give one of sessionKey, label and labels, not ${given.join(" and ")}`,
      });
    }
    if (params.agentId !== undefined && params.sessionKey !== undefined) {
      issues.addIssue({
        code: "custom",
        path: ["agentId"],
        message: "agentId narrows a broadcast (label or labels); a sessionKey already names its agent",
      });
    }
  });

/** What one target of `sessions_send` answered: the run id, its status, and the reply when it came in time. */
const SessionsSendOutcome = z.object({
  status: ToolStatusSchema,
  runId: z.string().optional(),
  sessionKey: z.string().optional(),
  reply: z.string().optional().describe("The final assistant text of this run."),
  delivery: DeliveryOutcomeSchema.optional().describe(
    "The delivery the target's announce of this exchange goes out as, reported separately from the run outcome: read it later with sessions_history ({ sessionKey, deliveryId }).",
  ),
  ...errorFields,
  ...guardFields,
});

/**
 * `sessions_send` result: one target's outcome; a broadcast's adds `targets`, each target's own outcome (its
 * `status` is `ok` or `accepted` when every target's is, else `error`, with what happened in `error`).
 */
export const SessionsSendResult = SessionsSendOutcome.extend({
  targets: z
    .array(SessionsSendOutcome)
    .optional()
    .describe("A broadcast (label or labels): each session it reached or tried to, with its own outcome."),
});

// ---------------------------------------------------------------- sessions_spawn

const SessionsSpawnObject = z.strictObject({
  task: messageText("task").describe("What the sub-agent should do. It reports back when done."),
  label: z.string().trim().min(1).max(LIMITS.label).optional().describe("A short label for logs and lists."),
  agentId: agentIdParam
    .optional()
    .describe("Spawn under another agent id (see agents_list for the allowed ids)."),
  model: z
    .string()
    .trim()
    .min(1)
    .max(LIMITS.id)
    .optional()
    .describe("Model override for the sub-agent; unknown models are an error."),
  thinking: z
    .string()
    .trim()
    .min(1)
    .max(LIMITS.id)
    .optional()
    .describe("Thinking level override for the sub-agent run."),
  runTimeoutSeconds: z
    .int()
    .min(0)
    .optional()
    .describe("Abort the sub-agent run after N seconds (default from config, else 0 = no limit)."),
  thread: z.boolean().default(false).describe("Bind the sub-agent to a new chat thread (default false)."),
  mode: z
    .enum(["run", "session"])
    .optional()
    .describe(
      '"run" (one task) or "session" (stays bound to its thread; requires thread=true). Default: run, or session when thread=true.',
    ),
  cleanup: z
    .enum(["delete", "keep"])
    .optional()
    .describe(
      '"delete" removes the sub-agent session after it announced; "keep" (default) archives it later.',
    ),
});

/** `sessions_spawn` parameters (`mode: "session"` requires `thread: true`). */
export const SessionsSpawnParams = SessionsSpawnObject.superRefine((params, ctx) => {
  if (params.mode === "session" && params.thread !== true) {
    ctx.addIssue({ code: "custom", path: ["mode"], message: 'mode "session" requires thread=true' });
  }
}).transform((params) => {
  const mode = params.mode ?? (params.thread ? "session" : "run");
  return { ...params, mode, cleanup: mode === "session" ? "keep" : (params.cleanup ?? "keep") } as const;
});

/** `sessions_spawn` result: `accepted` with the child's key and run id, or a refusal. */
export const SessionsSpawnResult = z.object({
  status: ToolStatusSchema,
  runId: z.string().optional(),
  childSessionKey: z.string().optional(),
  mode: z.enum(["run", "session"]).optional(),
  ...errorFields,
  ...guardFields,
});

// ---------------------------------------------------------------- agents_list

/** `agents_list` takes no parameters. */
export const AgentsListParams = z.strictObject({});

/**
 * `agents_list` result: the requester and the agent ids it may spawn under, then the remote agents (A2A) it may
 * send to, each with the session to send to.
 */
export const AgentsListResult = z.object({
  requester: z.string(),
  allowAny: z.boolean(),
  agents: z.array(
    z.object({
      id: z.string(),
      name: z.string().optional(),
      configured: z.boolean(),
      remote: z
        .boolean()
        .optional()
        .describe(
          "An agent behind another server, over A2A: talk to it with sessions_send, not sessions_spawn.",
        ),
      description: z.string().optional(),
      sessionKey: z
        .string()
        .optional()
        .describe(
          "A remote agent: the session to send to. Another name after a2a: (agent:<id>:a2a:<name>) starts another conversation.",
        ),
    }),
  ),
});

// ---------------------------------------------------------------- registry

/** `sessions_list` parameters as a caller writes them. */
export type SessionsListParamsInput = z.input<typeof SessionsListParams>;
/** `sessions_list` parameters after validation and defaults. */
export type SessionsListParams = z.output<typeof SessionsListParams>;
/** `sessions_list` result. */
export type SessionsListResult = z.infer<typeof SessionsListResult>;
/** `sessions_history` parameters as a caller writes them. */
export type SessionsHistoryParamsInput = z.input<typeof SessionsHistoryParams>;
/** `sessions_history` parameters after validation and defaults. */
export type SessionsHistoryParams = z.output<typeof SessionsHistoryParams>;
/** `sessions_history` result. */
export type SessionsHistoryResult = z.infer<typeof SessionsHistoryResult>;
/** `sessions_send` parameters as a caller writes them. */
export type SessionsSendParamsInput = z.input<typeof SessionsSendParams>;
/** `sessions_send` parameters after validation and defaults. */
export type SessionsSendParams = z.output<typeof SessionsSendParams>;
/** `sessions_send` result. */
export type SessionsSendResult = z.infer<typeof SessionsSendResult>;
/** A delivery's outcome as `sessions_send` and `sessions_history` report it. */
export type DeliveryOutcome = z.infer<typeof DeliveryOutcomeSchema>;
/** `sessions_spawn` parameters as a caller writes them. */
export type SessionsSpawnParamsInput = z.input<typeof SessionsSpawnParams>;
/** `sessions_spawn` parameters after validation and defaults. */
export type SessionsSpawnParams = z.output<typeof SessionsSpawnParams>;
/** `sessions_spawn` result. */
export type SessionsSpawnResult = z.infer<typeof SessionsSpawnResult>;
/** `agents_list` parameters (none). */
export type AgentsListParams = z.output<typeof AgentsListParams>;
/** `agents_list` result. */
export type AgentsListResult = z.infer<typeof AgentsListResult>;

/** Each tool's validated parameters, by tool name. */
export interface SessionToolParamsMap {
  sessions_list: SessionsListParams;
  sessions_history: SessionsHistoryParams;
  sessions_send: SessionsSendParams;
  sessions_spawn: SessionsSpawnParams;
  agents_list: AgentsListParams;
}

/** Each tool's result, by tool name. */
export interface SessionToolResultMap {
  sessions_list: SessionsListResult;
  sessions_history: SessionsHistoryResult;
  sessions_send: SessionsSendResult;
  sessions_spawn: SessionsSpawnResult;
  agents_list: AgentsListResult;
}
