import {
  CHAT_TYPES,
  type ChatType,
  DEFAULT_ACCOUNT_ID,
  normalizeAccountId,
  normalizeAgentId,
  parseSessionKey,
  sessionKindOf,
  type TranscriptMessage,
  TranscriptMessageSchema,
  toStoreKey,
} from "@sessions/core";
import type { RouteRecord, StoredEntry } from "../store/types.js";
import { asObject, type OpenClawSourceSession } from "./source.js";

/** OpenClaw's session, as our store keeps it: the entry, the transcript in order, the routes it was reached on. */
export interface MappedSession {
  entry: StoredEntry;
  messages: TranscriptMessage[];
  routes: RouteRecord[];
  /** Transcript messages of kinds our transcripts do not hold (OpenClaw's `custom` display entries). */
  skippedMessages: number;
}

/** Roles our transcripts hold; OpenClaw's other message roles (`custom` display entries) are not imported. */
const ROLES = new Set(["user", "assistant", "system", "toolResult", "tool"]);
/** Message fields OpenClaw keeps for itself: its bookkeeping, and tool details it does not show in history either. */
const DROPPED_FIELDS = new Set(["__openclaw", "details", "timestamp"]);

const text = (value: unknown): string | undefined =>
  typeof value === "string" && value.trim() !== "" ? value : undefined;
const count = (value: unknown): number | undefined =>
  typeof value === "number" && Number.isFinite(value) && value >= 0 ? value : undefined;
const time = (value: unknown): number | undefined => {
  if (typeof value === "number" && Number.isFinite(value) && value > 0) return value;
  if (typeof value === "string") {
    const parsed = Date.parse(value);
    return Number.isNaN(parsed) ? undefined : parsed;
  }
  return undefined;
};
const threadId = (value: unknown): string | undefined =>
  typeof value === "number" && Number.isFinite(value) ? String(value) : text(value);

/** A key as our store keeps it: bare keys (early OpenClaw's `main`) are scoped to the agent whose folder held them. */
export function importedKey(
  session: Pick<OpenClawSourceSession, "agentId" | "key">,
  mainKey: string,
): string {
  return toStoreKey({ agentId: normalizeAgentId(session.agentId), key: session.key, mainKey });
}

/** Where replies went: OpenClaw 2026.9 keeps it under `delivery` (external route), early versions as `deliveryContext`. */
function deliveryContextOf(entry: Record<string, unknown>): StoredEntry["deliveryContext"] {
  const delivery = asObject(entry.delivery);
  const route = asObject(delivery?.route);
  const source =
    asObject(entry.deliveryContext) ??
    asObject(delivery?.context) ??
    (route === undefined ? undefined : { channel: route.channel, to: asObject(route.target)?.to });
  if (source === undefined) return undefined;
  const context: NonNullable<StoredEntry["deliveryContext"]> = {};
  const channel = text(source.channel);
  const to = text(source.to);
  const accountId = text(source.accountId);
  const thread = threadId(source.threadId);
  if (channel !== undefined) context.channel = channel;
  if (to !== undefined) context.to = to;
  if (accountId !== undefined) context.accountId = accountId;
  if (thread !== undefined) context.threadId = thread;
  return Object.keys(context).length === 0 ? undefined : context;
}

/** The model a person chose for the session (`sessions.patch { model }`), as `provider/model`; not one picked automatically. */
function modelOverrideOf(entry: Record<string, unknown>): string | undefined {
  const model = text(entry.modelOverride);
  if (model === undefined || entry.modelOverrideSource === "auto") return undefined;
  const provider = text(entry.providerOverride);
  return provider === undefined || model.startsWith(`${provider}/`) ? model : `${provider}/${model}`;
}

function chatTypeOf(entry: Record<string, unknown>, key: string): ChatType | undefined {
  const raw = entry.chatType === "room" ? "channel" : entry.chatType;
  if (typeof raw === "string" && (CHAT_TYPES as readonly string[]).includes(raw) && raw !== "unknown") {
    return raw as ChatType;
  }
  const parsed = parseSessionKey(key);
  return parsed === null || parsed.chatType === "unknown" ? undefined : parsed.chatType;
}

/** Early OpenClaw appended `[message_id: …]` to what a user sent, for the model; its history showed the text without it. */
const MESSAGE_ID_TRAILER = /\n\[message_id: [^\]\n]*\]$/;
function withoutMessageId(content: unknown): unknown {
  if (typeof content === "string") return content.replace(MESSAGE_ID_TRAILER, "");
  if (!Array.isArray(content)) return content;
  return content.map((part) => {
    const object = asObject(part);
    return object?.type === "text" && typeof object.text === "string"
      ? { ...object, text: object.text.replace(MESSAGE_ID_TRAILER, "") }
      : part;
  });
}

/** One transcript message as ours, or undefined when it is not one our transcripts hold; throws when unreadable. */
function toMessage(event: Record<string, unknown>, index: number): TranscriptMessage | undefined {
  if (event.type !== "message") return undefined;
  const message = asObject(event.message);
  if (message === undefined) throw new Error(`transcript entry ${index + 1} is a message without a body`);
  if (typeof message.role !== "string" || !ROLES.has(message.role)) return undefined;
  const kept: Record<string, unknown> = {};
  for (const [field, value] of Object.entries(message)) if (!DROPPED_FIELDS.has(field)) kept[field] = value;
  const ts = time(message.timestamp) ?? time(event.timestamp);
  if (ts === undefined) throw new Error(`transcript entry ${index + 1} (${message.role}) has no timestamp`);
  if (message.role === "user") kept.content = withoutMessageId(kept.content);
  const runId = text(asObject(message.__openclaw)?.runId);
  const candidate = { ...kept, ts, ...(runId === undefined ? {} : { runId }) };
  const parsed = TranscriptMessageSchema.safeParse(candidate);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new Error(
      `transcript entry ${index + 1} (${message.role}) is not a readable message: ${issue?.path.join(".") || "message"} ${issue?.message ?? ""}`.trim(),
    );
  }
  return parsed.data;
}

/**
 * Maps one OpenClaw session to our store's records. Throws (naming the field) when something it must have is
 * unreadable; the import then skips the session whole.
 */
export function mapSession(session: OpenClawSourceSession, options: { mainKey: string }): MappedSession {
  const { entry: source } = session;
  const key = importedKey(session, options.mainKey);
  const parsedKey = parseSessionKey(key);
  const messages: TranscriptMessage[] = [];
  let skippedMessages = 0;
  session.events.forEach((event, index) => {
    const message = toMessage(event, index);
    if (message !== undefined) messages.push(message);
    else if (event.type === "message") skippedMessages += 1;
  });
  const updatedAt = time(source.updatedAt) ?? messages.at(-1)?.ts;
  if (updatedAt === undefined) throw new Error("the entry has no updatedAt");
  const createdAt = time(source.createdAt) ?? time(source.sessionStartedAt) ?? messages[0]?.ts ?? updatedAt;
  const deliveryContext = deliveryContextOf(source);
  const chatType = chatTypeOf(source, key);
  const entry: StoredEntry = {
    key,
    sessionId: String(source.sessionId).trim().toLowerCase(),
    agentId: parsedKey?.agentId ?? normalizeAgentId(session.agentId),
    createdAt: Math.min(createdAt, updatedAt),
    updatedAt,
    kind: sessionKindOf(key, { mainKey: options.mainKey, ...(chatType === undefined ? {} : { chatType }) }),
  };
  const optional: Partial<StoredEntry> = {
    channel: text(source.channel) ?? parsedKey?.channel,
    chatType,
    displayName: text(source.displayName),
    label: text(source.label),
    deliveryContext,
    lastChannel: text(source.lastChannel) ?? deliveryContext?.channel,
    lastTo: text(source.lastTo) ?? deliveryContext?.to,
    lastAccountId: text(source.lastAccountId) ?? deliveryContext?.accountId,
    lastThreadId: threadId(source.lastThreadId) ?? deliveryContext?.threadId,
    model: modelOverrideOf(source),
    contextTokens: count(source.contextTokens),
    inputTokens: count(source.inputTokens),
    outputTokens: count(source.outputTokens),
    totalTokens: count(source.totalTokens),
    thinkingLevel: text(source.thinkingLevel),
    verboseLevel: text(source.verboseLevel),
    systemSent: typeof source.systemSent === "boolean" ? source.systemSent : undefined,
    abortedLastRun: typeof source.abortedLastRun === "boolean" ? source.abortedLastRun : undefined,
    sendPolicy: source.sendPolicy === "allow" || source.sendPolicy === "deny" ? source.sendPolicy : undefined,
    spawnedBy:
      text(source.spawnedBy) === undefined
        ? undefined
        : importedKey({ agentId: session.agentId, key: text(source.spawnedBy) as string }, options.mainKey),
    spawnDepth: count(source.spawnDepth),
    archivedAt: time(source.archivedAt),
  };
  for (const [field, value] of Object.entries(optional)) {
    if (value !== undefined) (entry as unknown as Record<string, unknown>)[field] = value;
  }
  return { entry, messages, routes: routesOf(entry), skippedMessages };
}

/** The routes an entry names (its delivery context and last route), one per channel and account. */
function routesOf(entry: StoredEntry): RouteRecord[] {
  const candidates = [
    entry.deliveryContext,
    {
      channel: entry.lastChannel,
      to: entry.lastTo,
      accountId: entry.lastAccountId,
      threadId: entry.lastThreadId,
    },
  ];
  const routes = new Map<string, RouteRecord>();
  for (const c of candidates) {
    if (c?.channel === undefined || c.to === undefined) continue;
    const accountId = c.accountId === undefined ? DEFAULT_ACCOUNT_ID : normalizeAccountId(c.accountId);
    const id = `${c.channel}\u0000${accountId}`;
    if (routes.has(id)) continue;
    routes.set(id, {
      sessionKey: entry.key,
      channel: c.channel,
      accountId,
      to: c.to,
      ...(c.threadId === undefined ? {} : { threadId: c.threadId }),
      updatedAt: entry.updatedAt,
    });
  }
  return [...routes.values()];
}
