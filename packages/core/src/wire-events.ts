/**
 * The payloads of the gateway's `chat` and `agent` events and the messages of `chat.history`, as both our gateway
 * and an OpenClaw gateway send them (docs/protocol.md, events). Readers accept either side's shapes.
 */

/** One part of a message's content; `text` parts carry the words. */
export interface ChatContentPart {
  type: string;
  text?: string | undefined;
  [key: string]: unknown;
}

/** A message as OpenClaw's chat events carry it (and ours do since protocol interop): role plus content parts. */
export interface ChatMessage {
  role: string;
  content: string | ChatContentPart[];
  [key: string]: unknown;
}

/**
 * The states of a `chat` event. Only `final`, `aborted` and `error` end a run; `status` (OpenClaw: a setup phase
 * before the model starts) and `delta` do not, and neither does a state this version does not know.
 */
export type ChatEventState = "status" | "delta" | "final" | "aborted" | "error";

/** The states that end a run's stream of `chat` events. */
export const TERMINAL_CHAT_STATES: readonly ChatEventState[] = ["final", "aborted", "error"];

/** Whether a `chat` event's state ends its run (unknown states do not). */
export function isTerminalChatState(state: unknown): boolean {
  return state === "final" || state === "aborted" || state === "error";
}

/** The payload of a `chat` event: a run's reply as it streams (`delta`) and how it ended (`final`, `aborted`, `error`). */
export interface ChatEventPayload {
  runId: string;
  sessionKey: string;
  seq: number;
  /** A known `ChatEventState`, or a state a newer gateway added (treat as not terminal). */
  state: ChatEventState | (string & {});
  /** OpenClaw's `status` phase (`preparing_context`, `starting_model`, …). */
  phase?: string | undefined;
  deltaText?: string | undefined;
  /**
   * The run's reply. Our gateway and OpenClaw send `{ role: "assistant", content: [{ type: "text", text }] }`;
   * gateways before protocol interop sent the text as a string. Read it with `chatMessageText`.
   */
  message?: ChatMessage | string | undefined;
  usage?: unknown;
  stopReason?: string | undefined;
  errorMessage?: string | undefined;
  errorKind?: string | undefined;
}

/** The payload of an `agent` event: a run's lifecycle, assistant text and tool calls. */
export interface AgentEventPayload {
  runId: string;
  seq: number;
  stream: "lifecycle" | "assistant" | "tool" | (string & {});
  ts: number;
  data: unknown;
}

/** The message of a `final` event for a reply `text` (OpenClaw's shape). */
export function assistantMessage(text: string): ChatMessage {
  return { role: "assistant", content: [{ type: "text", text }] };
}

/**
 * The text of a chat event's `message` or a history message's `content`: a string as is, content parts'
 * `text` joined, `undefined` when there is no text at all.
 */
export function chatMessageText(message: unknown): string | undefined {
  if (typeof message === "string") return message;
  if (message === null || typeof message !== "object") return undefined;
  const content = (message as { content?: unknown }).content;
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    const texts = content
      .filter((part): part is { text: string } => typeof (part as { text?: unknown })?.text === "string")
      .map((part) => part.text);
    return texts.length > 0 ? texts.join("") : undefined;
  }
  const text = (message as { text?: unknown }).text;
  return typeof text === "string" ? text : undefined;
}

/** OpenClaw's per-message metadata in `chat.history`: its transcript sequence number and run. */
export interface OpenClawMessageMeta {
  seq?: number | undefined;
  runId?: string | undefined;
  [key: string]: unknown;
}

/**
 * A `chat.history` message from either gateway. Ours carries `ts` and `seq` and, for OpenClaw readers, the same
 * values as `timestamp` and `__openclaw.seq`; an OpenClaw gateway carries only the latter two. Our client fills
 * `ts` and `seq` from them (`normalizeHistoryMessage`), so readers can rely on `ts`/`seq` where either is known.
 */
export interface HistoryMessage {
  role: string;
  content: unknown;
  ts?: number | undefined;
  seq?: number | undefined;
  timestamp?: number | undefined;
  runId?: string | undefined;
  __openclaw?: OpenClawMessageMeta | undefined;
  [key: string]: unknown;
}

function timeOf(value: unknown): number | undefined {
  if (typeof value === "number" && Number.isFinite(value)) return value;
  if (typeof value === "string") {
    const parsed = Date.parse(value);
    return Number.isNaN(parsed) ? undefined : parsed;
  }
  return undefined;
}

/** Fills `ts` from `timestamp` and `seq` from `__openclaw.seq` when a message lacks them; the rest is kept. */
export function normalizeHistoryMessage<M extends HistoryMessage>(message: M): M {
  if (message === null || typeof message !== "object") return message;
  const ts = message.ts ?? timeOf(message.timestamp);
  const metaSeq = message.__openclaw?.seq;
  const seq = message.seq ?? (typeof metaSeq === "number" && Number.isFinite(metaSeq) ? metaSeq : undefined);
  if (ts === message.ts && seq === message.seq) return message;
  return { ...message, ...(ts === undefined ? {} : { ts }), ...(seq === undefined ? {} : { seq }) };
}
