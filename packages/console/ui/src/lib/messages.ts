/**
 * Transcript and chat-event messages as the UI shows them. Content arrives as a string or as parts
 * (`{ type: "text", text }`, tool calls, tool results); the chat `final` event's `message` may be either a string
 * or `{ role, content }` (OpenClaw's shape), so everything goes through `partsOf`.
 */

export type Part =
  | { type: "text"; text: string }
  | { type: "tool-call"; toolName: string; toolCallId?: string; input: unknown }
  | { type: "tool-result"; toolName: string; toolCallId?: string; output: unknown }
  | { type: "other"; value: unknown };

export interface Provenance {
  kind: string;
  sourceSessionKey?: string;
  sourceChannel?: string;
  sourceTool?: string;
}

export interface ShownMessage {
  /** Stable within a session: the transcript seq, or a local id for messages not stored yet. */
  id: string;
  role: string;
  parts: Part[];
  ts?: number;
  seq?: number;
  runId?: string;
  provenance?: Provenance;
  /** Sent from this page, not yet in the transcript. */
  pending?: boolean;
}

type Loose = Record<string, unknown>;
const isObject = (value: unknown): value is Loose => value !== null && typeof value === "object";
const str = (value: unknown): string | undefined => (typeof value === "string" ? value : undefined);

function partOf(raw: unknown): Part {
  if (typeof raw === "string") return { type: "text", text: raw };
  if (!isObject(raw)) return { type: "other", value: raw };
  const type = str(raw.type);
  if (type === "text" && typeof raw.text === "string") return { type: "text", text: raw.text };
  const id = str(raw.toolCallId) ?? str(raw.id);
  const name = str(raw.toolName) ?? str(raw.name) ?? "tool";
  if (type === "tool-call" || type === "tool_use" || type === "toolCall")
    return {
      type: "tool-call",
      toolName: name,
      ...(id ? { toolCallId: id } : {}),
      input: raw.input ?? raw.args ?? raw.params,
    };
  if (type === "tool-result" || type === "tool_result" || type === "toolResult")
    return {
      type: "tool-result",
      toolName: name,
      ...(id ? { toolCallId: id } : {}),
      output: raw.output ?? raw.result ?? raw.content,
    };
  return { type: "other", value: raw };
}

/** The parts of a content value: a string, an array of parts, or a `{ role, content }` message. */
export function partsOf(content: unknown): Part[] {
  if (content === undefined || content === null) return [];
  if (typeof content === "string") return content === "" ? [] : [{ type: "text", text: content }];
  if (Array.isArray(content)) return content.map(partOf);
  if (isObject(content) && "content" in content) return partsOf(content.content);
  if (isObject(content) && typeof content.text === "string") return [{ type: "text", text: content.text }];
  return [partOf(content)];
}

/** The plain text of a content value (text parts joined). */
export function textOf(content: unknown): string {
  return partsOf(content)
    .filter((p): p is Extract<Part, { type: "text" }> => p.type === "text")
    .map((p) => p.text)
    .join("\n");
}

function provenanceOf(raw: unknown): Provenance | undefined {
  if (!isObject(raw) || typeof raw.kind !== "string") return undefined;
  const out: Provenance = { kind: raw.kind };
  for (const field of ["sourceSessionKey", "sourceChannel", "sourceTool"] as const) {
    const value = str(raw[field]);
    if (value !== undefined) out[field] = value;
  }
  return out;
}

/** A transcript message from `chat.history` (ours: `ts`/`seq`; OpenClaw's: `timestamp`/`__openclaw.seq`). */
export function fromHistory(raw: unknown, index: number): ShownMessage {
  const m = isObject(raw) ? raw : {};
  const meta = isObject(m.__openclaw) ? m.__openclaw : {};
  const seq = typeof m.seq === "number" ? m.seq : typeof meta.seq === "number" ? meta.seq : undefined;
  const ts = typeof m.ts === "number" ? m.ts : typeof m.timestamp === "number" ? m.timestamp : undefined;
  const provenance = provenanceOf(m.provenance);
  const runId = str(m.runId);
  return {
    id: seq === undefined ? `h${index}` : `s${seq}`,
    role: str(m.role) ?? "unknown",
    parts: partsOf(m.content),
    ...(ts === undefined ? {} : { ts }),
    ...(seq === undefined ? {} : { seq }),
    ...(runId === undefined ? {} : { runId }),
    ...(provenance === undefined ? {} : { provenance }),
  };
}

/** Who a message is from, for people: never mistakes another session's message for the user's. */
export function authorOf(message: Pick<ShownMessage, "role" | "provenance">): string {
  const p = message.provenance;
  if (p?.kind === "inter_session") {
    if (p.sourceTool === "sessions_spawn") return `sub-agent result · ${p.sourceSessionKey ?? "?"}`;
    return `from session ${p.sourceSessionKey ?? "?"}${p.sourceTool ? ` · ${p.sourceTool}` : ""}`;
  }
  switch (message.role) {
    case "user":
      return "user";
    case "assistant":
      return "assistant";
    case "toolResult":
    case "tool":
      return "tool result";
    default:
      return message.role;
  }
}

/** Merges a fresh tail of the transcript into what is shown: by seq, pending local messages last. */
export function mergeTail(shown: readonly ShownMessage[], tail: readonly ShownMessage[]): ShownMessage[] {
  // Without sequence numbers a fresh page cannot be merged: it replaces what was shown.
  const sequenced = tail.every((m) => m.seq !== undefined);
  const bySeq = new Map<number, ShownMessage>();
  for (const m of sequenced ? [...shown, ...tail] : tail) if (m.seq !== undefined) bySeq.set(m.seq, m);
  const unsequenced = sequenced ? [] : tail.filter((m) => m.seq === undefined);
  const stored = [...bySeq.values()].sort((a, b) => (a.seq as number) - (b.seq as number));
  // A pending message stays until the transcript has it: the user message its run started with.
  const storedRuns = new Set(stored.filter((m) => m.role === "user" && m.runId).map((m) => m.runId));
  const pending = shown.filter((m) => m.pending && !(m.runId !== undefined && storedRuns.has(m.runId)));
  return [...unsequenced, ...stored, ...pending];
}

export function json(value: unknown): string {
  try {
    return JSON.stringify(value, null, 2) ?? String(value);
  } catch {
    return String(value);
  }
}
