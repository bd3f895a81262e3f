import { normalizeChannelId } from "./channels.js";
import { normalizeChoice } from "./choice.js";
import { describeValue, SessionsError } from "./errors.js";
import {
  DEFAULT_AGENT_ID,
  DEFAULT_MAIN_KEY,
  normalizeAccountId,
  normalizeAgentId,
  normalizeMainKey,
} from "./ids.js";

export {
  DEFAULT_ACCOUNT_ID,
  DEFAULT_AGENT_ID,
  DEFAULT_MAIN_KEY,
  normalizeAccountId,
  normalizeAgentId,
} from "./ids.js";

/** The coarse kinds the tools filter on (`sessions_list({ kinds })`). */
export const SESSION_KINDS = ["main", "group", "cron", "hook", "node", "a2a", "other"] as const;
/** The coarse class the tools filter on (SPEC 1.3). */
export type SessionKind = (typeof SESSION_KINDS)[number];

/** Chat types a key's peer segment can name. */
export const CHAT_TYPES = ["direct", "group", "channel", "unknown"] as const;
/** A conversation's chat type: `direct`, `group`, `channel` or `unknown`. */
export type ChatType = (typeof CHAT_TYPES)[number];

/** Values of `session.dmScope`: how direct messages are split into sessions. */
export const DM_SCOPES = ["main", "per-peer", "per-channel-peer", "per-account-channel-peer"] as const;
/** How direct messages are split into sessions: all in `main`, or per peer (and channel, and account). */
export type DmScope = (typeof DM_SCOPES)[number];

/** Keys longer than this are rejected: no real key comes close, and it bounds the work a parse can do. */
export const MAX_SESSION_KEY_LENGTH = 1024;

/** What `parseSessionKey` reads from a key. */
export interface ParsedSessionKey {
  /** The canonical key. */
  key: string;
  /** Present for agent-scoped keys (`agent:<agentId>:…`). */
  agentId?: string | undefined;
  /** The key without its `agent:<agentId>:` prefix. */
  rest: string;
  kind: SessionKind;
  chatType: ChatType;
  /** The channel segment parsed from the key, when the key has one. */
  channel?: string | undefined;
  accountId?: string | undefined;
  peerId?: string | undefined;
  threadId?: string | undefined;
  parentKey?: string | undefined;
  subagent: boolean;
}

/** A key split at its last `:thread:` or `:topic:` marker (`threadOf`). */
export interface ThreadInfo {
  parentKey: string;
  threadId: string;
  marker: "thread" | "topic";
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The result of one pass over a key; every public key function is a view of it. */
interface KeyAnalysis {
  key: string;
  agentId: string | undefined;
  /** Canonical segments after the agent prefix. */
  rest: string[];
  /** Index in `rest` of the last thread/topic marker, or -1. */
  threadAt: number;
}

const THREAD_MARKERS = new Set(["thread", "topic"]);
const PEER_MARKERS = new Set(["group", "channel"]);
/** Signal group ids and Matrix room ids are case-sensitive. */
function isOpaquePeer(channel: string, marker: string): boolean {
  return (channel === "signal" && marker === "group") || (channel === "matrix" && PEER_MARKERS.has(marker));
}
const SHAPE_WORDS = new Set(["cron", "hook", "node", "subagent"]);
const DIRECT_WORDS = new Set(["direct", "dm"]);

function lastThreadMarker(lower: readonly string[], min: number): number {
  for (let i = lower.length - 2; i >= min; i--) {
    const seg = lower[i];
    if (seg !== undefined && THREAD_MARKERS.has(seg)) return i;
  }
  return -1;
}

function analyze(input: unknown): KeyAnalysis | null {
  if (typeof input !== "string") return null;
  const trimmed = input.trim();
  if (trimmed === "" || trimmed.length > MAX_SESSION_KEY_LENGTH) return null;
  const raw = trimmed.split(":");
  for (const seg of raw) if (seg.trim() === "") return null;

  let agentId: string | undefined;
  let start = 0;
  if (raw.length >= 2 && (raw[0] as string).toLowerCase() === "agent") {
    if (raw.length < 3) return null;
    agentId = normalizeAgentId(raw[1]);
    start = 2;
  }
  const original = start === 0 ? raw : raw.slice(start);
  const rest = original.map((s) => s.toLowerCase());
  const threadAt = lastThreadMarker(rest, 1);

  // Signal group ids and Matrix room ids are case-sensitive: keep them as typed (markers still fold).
  if (rest.length >= 3 && isOpaquePeer(rest[0] as string, rest[1] as string)) {
    const end = threadAt > 2 ? threadAt : rest.length;
    for (let i = 2; i < end; i++) rest[i] = original[i] as string;
  }

  // `dm` is accepted as a synonym of `direct`, in the one peer-kind position a key can have.
  const first = rest[0] as string;
  if (!SHAPE_WORDS.has(first)) {
    const baseLen = threadAt === -1 ? rest.length : threadAt;
    if (DIRECT_WORDS.has(first)) {
      if (baseLen >= 2) rest[0] = "direct";
    } else if (!PEER_MARKERS.has(first)) {
      const second = rest[1] as string;
      if (baseLen >= 3 && DIRECT_WORDS.has(second)) rest[1] = "direct";
      else if (baseLen >= 4 && !PEER_MARKERS.has(second) && DIRECT_WORDS.has(rest[2] as string))
        rest[2] = "direct";
    }
  }

  const tail = rest.join(":");
  return { key: agentId === undefined ? tail : `agent:${agentId}:${tail}`, agentId, rest, threadAt };
}

/** Trims, folds case (except Signal/Matrix group ids), canonicalises `dm` to `direct`; invalid → `null`. */
export function normalizeSessionKey(key: unknown): string | null {
  return analyze(key)?.key ?? null;
}

interface Shape {
  kind: SessionKind;
  chatType: ChatType;
  channel?: string | undefined;
  accountId?: string | undefined;
  peerId?: string | undefined;
  subagent: boolean;
}

/** A per-peer direct chat; rule 3 of SPEC 1.3 makes it a group when its entry was recorded as one. */
function directShape(
  groupEntry: boolean,
  channel: string | undefined,
  accountId: string | undefined,
  peerId: string,
): Shape {
  const shape: Shape = { kind: groupEntry ? "group" : "other", chatType: "direct", peerId, subagent: false };
  if (channel !== undefined) shape.channel = channel;
  if (accountId !== undefined) shape.accountId = accountId;
  return shape;
}

function classify(a: KeyAnalysis, mainKey: string, entryChatType?: ChatType): Shape {
  const hasThread = a.threadAt !== -1;
  const base = hasThread ? a.rest.slice(0, a.threadAt) : a.rest;
  const b0 = base[0] as string;
  const len = base.length;
  const last = base[len - 1] as string;
  const chatFromEntry = entryChatType === "group" || entryChatType === "channel";
  if (len === 1) {
    if (!hasThread && (b0 === mainKey || b0 === DEFAULT_MAIN_KEY)) {
      return { kind: "main", chatType: "direct", subagent: false };
    }
    if (b0.startsWith("node-") && b0.length > 5)
      return { kind: "node", chatType: "unknown", subagent: false };
  } else {
    if (b0 === "cron") return { kind: "cron", chatType: "unknown", subagent: false };
    if (b0 === "hook") return { kind: "hook", chatType: "unknown", subagent: false };
    if (b0 === "node") return { kind: "node", chatType: "unknown", subagent: false };
    if (b0 === "a2a") {
      // An A2A context: a caller's with one of this gateway's agents (`a2a:direct:<context>`), or one with a remote
      // agent (`agent:<remote>:a2a:<name>`).
      const peer = (base[1] === "direct" && len > 2 ? base.slice(2) : base.slice(1)).join(":");
      return { kind: "a2a", chatType: "direct", channel: "a2a", peerId: peer, subagent: false };
    }
    if (b0 === "subagent") {
      return {
        kind: chatFromEntry ? "group" : "other",
        chatType: entryChatType ?? "unknown",
        subagent: true,
      };
    }
    if (b0 === "direct") return directShape(chatFromEntry, undefined, undefined, base.slice(1).join(":"));
    if (PEER_MARKERS.has(b0)) {
      // Legacy `group:<id>` and `channel:<id>` (no channel segment) both count as group chats.
      return { kind: "group", chatType: "group", peerId: base.slice(1).join(":"), subagent: false };
    }
    const b1 = base[1] as string;
    if (len >= 3 && PEER_MARKERS.has(b1)) {
      return {
        kind: "group",
        chatType: b1 as ChatType,
        channel: b0,
        peerId: base.slice(2).join(":"),
        subagent: false,
      };
    }
    if (len >= 3 && b1 === "direct")
      return directShape(chatFromEntry, b0, undefined, base.slice(2).join(":"));
    if (len >= 4 && base[2] === "direct") return directShape(chatFromEntry, b0, b1, base.slice(3).join(":"));
    if (last.endsWith("@g.us")) {
      return {
        kind: "group",
        chatType: "group",
        ...(len === 2 ? { channel: b0 } : {}),
        peerId: last,
        subagent: false,
      };
    }
  }
  if (last.endsWith("@g.us")) return { kind: "group", chatType: "group", peerId: last, subagent: false };
  if (chatFromEntry) return { kind: "group", chatType: entryChatType, subagent: false };
  return { kind: "other", chatType: entryChatType ?? "unknown", subagent: false };
}

function threadFrom(a: KeyAnalysis): ThreadInfo | null {
  if (a.threadAt === -1) return null;
  const prefix = a.agentId === undefined ? "" : `agent:${a.agentId}:`;
  return {
    parentKey: prefix + a.rest.slice(0, a.threadAt).join(":"),
    threadId: a.rest.slice(a.threadAt + 1).join(":"),
    marker: a.rest[a.threadAt] as "thread" | "topic",
  };
}

/** Parses a key into its parts; never throws, `null` for invalid input. */
export function parseSessionKey(
  key: unknown,
  options?: { mainKey?: string | undefined },
): ParsedSessionKey | null {
  const a = analyze(key);
  if (a === null) return null;
  const shape = classify(a, normalizeMainKey(options?.mainKey));
  const thread = threadFrom(a);
  const parsed: ParsedSessionKey = {
    key: a.key,
    rest: a.rest.join(":"),
    kind: shape.kind,
    chatType: shape.chatType,
    subagent: shape.subagent,
  };
  if (a.agentId !== undefined) parsed.agentId = a.agentId;
  if (shape.channel !== undefined) parsed.channel = normalizeChannelId(shape.channel) ?? shape.channel;
  if (shape.accountId !== undefined) parsed.accountId = shape.accountId;
  if (shape.peerId !== undefined) parsed.peerId = shape.peerId;
  if (thread !== null) {
    parsed.threadId = thread.threadId;
    parsed.parentKey = thread.parentKey;
  }
  return parsed;
}

/** `global` and `unknown` (bare or agent-scoped) are reserved: never listed, never returned by a tool. */
export function isReservedKey(key: unknown): boolean {
  const a = analyze(key);
  if (a === null || a.rest.length !== 1) return false;
  return a.rest[0] === "global" || a.rest[0] === "unknown";
}

/**
 * Scopes a request key to an agent: `main` or empty → `agent:<agentId>:<mainKey>`, bare keys →
 * `agent:<agentId>:<key>`, agent-scoped keys keep their own (normalised) agent, reserved keys stay bare.
 * @throws SessionsError `invalid_key` (field `key`) for a key that cannot be parsed.
 */
export function toStoreKey(options: {
  agentId?: string | undefined;
  key?: unknown;
  mainKey?: string | undefined;
}): string {
  const agentId = normalizeAgentId(options?.agentId);
  const key = options?.key;
  if (key === undefined || key === null || (typeof key === "string" && key.trim() === "")) {
    return `agent:${agentId}:${normalizeMainKey(options?.mainKey)}`;
  }
  const a = analyze(key);
  if (a === null) {
    throw new SessionsError("invalid_key", `Invalid session key: ${describeValue(key)}`, {
      field: "key",
      details: { key: typeof key === "string" ? key : typeof key },
    });
  }
  if (a.agentId !== undefined) return a.key;
  if (a.rest.length === 1 && a.rest[0] === DEFAULT_MAIN_KEY) {
    return `agent:${agentId}:${normalizeMainKey(options?.mainKey)}`;
  }
  if (a.rest.length === 1 && (a.rest[0] === "global" || a.rest[0] === "unknown")) return a.key;
  return `agent:${agentId}:${a.key}`;
}

/**
 * Strips the `agent:<id>:` prefix (`agent:main:main` → `main`) when the bare form scopes back to the same key;
 * otherwise returns the canonical key. Invalid input comes back trimmed.
 */
export function toRequestKey(storeKey: unknown): string {
  const a = analyze(storeKey);
  if (a === null) return typeof storeKey === "string" ? storeKey.trim() : "";
  if (a.agentId === undefined) return a.key;
  const first = a.rest[0] as string;
  const ambiguous =
    (a.rest.length === 1 && (first === "global" || first === "unknown")) ||
    (a.rest.length >= 2 && first === "agent");
  return ambiguous ? a.key : a.rest.join(":");
}

const MARKER_WORDS = new Set(["group", "channel", "direct", "dm", "thread", "topic", "agent"]);

/** An account id as a key segment: marker words get a `_` suffix so the key cannot be misread. */
function accountSegment(accountId: unknown): string {
  const id = normalizeAccountId(accountId);
  return MARKER_WORDS.has(id) ? `${id}_` : id;
}

function sanitizePeerId(peerId: unknown): string {
  if (typeof peerId !== "string" && typeof peerId !== "number") return "unknown";
  const cleaned = String(peerId)
    .trim()
    .split(":")
    .map((s) => s.trim())
    .filter((s) => s !== "")
    .join(":");
  return cleaned === "" ? "unknown" : cleaned;
}

/** Input of `buildPeerSessionKey`: an incoming message's platform, peer and the DM scoping rules. */
export interface BuildPeerSessionKeyOptions {
  agentId?: string | undefined;
  channel: string;
  accountId?: string | undefined;
  peerKind: "direct" | "group" | "channel";
  peerId: string | number;
  dmScope?: DmScope | undefined;
  /** Canonical person name → ids (`"<channel>:<id>"` or raw ids) that are that person. */
  identityLinks?: Readonly<Record<string, readonly string[]>> | undefined;
  mainKey?: string | undefined;
}

/** `"TG:123"` → `"telegram:123"`: the channel part of a link goes through the alias map. */
function canonicalLinkId(id: string): string {
  const trimmed = id.trim().toLowerCase();
  const colon = trimmed.indexOf(":");
  if (colon <= 0) return trimmed;
  return `${normalizeChannelId(trimmed.slice(0, colon)) ?? trimmed.slice(0, colon)}${trimmed.slice(colon)}`;
}

function linkedIdentity(
  links: Readonly<Record<string, readonly string[]>> | undefined,
  channel: string,
  peerId: string,
): string | undefined {
  if (links === undefined || typeof links !== "object") return undefined;
  const raw = peerId.toLowerCase();
  const scoped = `${channel}:${raw}`;
  for (const [name, ids] of Object.entries(links)) {
    if (!Array.isArray(ids)) continue;
    for (const id of ids) {
      if (typeof id !== "string") continue;
      const candidate = canonicalLinkId(id);
      if (candidate === raw || candidate === scoped) {
        const canonical = sanitizePeerId(name).toLowerCase();
        return canonical === "unknown" ? undefined : canonical;
      }
    }
  }
  return undefined;
}

/** Derives the session key for an inbound message (SPEC 1.4). Never throws. */
export function buildPeerSessionKey(input: BuildPeerSessionKeyOptions): string {
  const options: Partial<BuildPeerSessionKeyOptions> =
    input !== null && typeof input === "object" ? input : {};
  const agentId = normalizeAgentId(options.agentId);
  const channel = normalizeChannelId(options.channel)?.replace(/:/g, "-") ?? "unknown";
  const peerId = sanitizePeerId(options.peerId);
  const prefix = `agent:${agentId}:`;
  const peerKind = normalizeChoice(options.peerKind, ["group", "channel"] as const) ?? "direct";
  let key: string;
  if (peerKind !== "direct") {
    key = `${prefix}${channel}:${peerKind}:${peerId}`;
  } else {
    const scope = normalizeChoice(options.dmScope, DM_SCOPES) ?? "main";
    if (scope === "main") return `${prefix}${normalizeMainKey(options.mainKey)}`;
    const peer = linkedIdentity(options.identityLinks, channel, peerId) ?? peerId;
    if (scope === "per-peer") key = `${prefix}direct:${peer}`;
    else if (scope === "per-channel-peer") key = `${prefix}${channel}:direct:${peer}`;
    else key = `${prefix}${channel}:${accountSegment(options.accountId)}:direct:${peer}`;
  }
  return normalizeSessionKey(key) ?? `${prefix}${channel}:${peerKind}:unknown`;
}

function randomUuid(): string {
  const c = (globalThis as { crypto?: { randomUUID?: (() => string) | undefined } | undefined }).crypto;
  if (c?.randomUUID) return c.randomUUID();
  const hex = "0123456789abcdef";
  let out = "";
  for (let i = 0; i < 36; i++) {
    if (i === 8 || i === 13 || i === 18 || i === 23) out += "-";
    else if (i === 14) out += "4";
    else if (i === 19) out += hex[8 + Math.floor(Math.random() * 4)];
    else out += hex[Math.floor(Math.random() * 16)];
  }
  return out;
}

/** `agent:<agentId>:subagent:<id>`; a fresh UUID when `id` is absent or unusable. */
export function buildSubagentSessionKey(agentId?: string, id?: string): string {
  const cleaned = typeof id === "string" ? id.trim().toLowerCase() : "";
  const suffix = cleaned !== "" && !cleaned.includes(":") ? cleaned : randomUuid();
  return `agent:${normalizeAgentId(agentId)}:subagent:${suffix}`;
}

/** The coarse kind of a key (SPEC 1.3). Invalid keys are `other`. */
export function sessionKindOf(
  key: unknown,
  options?: { mainKey?: string | undefined; chatType?: ChatType | undefined },
): SessionKind {
  const a = analyze(key);
  if (a === null) return "other";
  return classify(a, normalizeMainKey(options?.mainKey), options?.chatType).kind;
}

/** `direct | group | channel | unknown` from the key's peer segment. */
export function chatTypeOf(key: unknown): ChatType {
  const a = analyze(key);
  return a === null ? "unknown" : classify(a, DEFAULT_MAIN_KEY).chatType;
}

/** The facts `channelOf` reads: the key and, when known, the entry's recorded channels. */
export interface ChannelOfInput {
  key: string;
  kind?: SessionKind | undefined;
  channel?: string | undefined;
  lastChannel?: string | undefined;
  deliveryContext?: { channel?: string | undefined } | undefined;
  chatType?: ChatType | undefined;
}

/** The row's `channel` field (SPEC 1.3): internal → recorded → last delivery → key → `unknown`. */
export function channelOf(input: ChannelOfInput, aliases?: Readonly<Record<string, string>>): string {
  const source: Partial<ChannelOfInput> = input !== null && typeof input === "object" ? input : {};
  const a = analyze(source.key);
  const shape = a === null ? undefined : classify(a, DEFAULT_MAIN_KEY, source.chatType);
  const kind = source.kind ?? shape?.kind ?? "other";
  if (kind === "cron" || kind === "hook" || kind === "node") return "internal";
  return (
    normalizeChannelId(source.channel, aliases) ??
    normalizeChannelId(source.deliveryContext?.channel, aliases) ??
    normalizeChannelId(source.lastChannel, aliases) ??
    normalizeChannelId(shape?.channel, aliases) ??
    "unknown"
  );
}

/** Splits a key at its last `:thread:` / `:topic:` marker; `null` when there is none. */
export function threadOf(key: unknown): ThreadInfo | null {
  const a = analyze(key);
  return a === null ? null : threadFrom(a);
}

/** True for `agent:<id>:subagent:<uuid>` (and bare `subagent:<uuid>`). */
export function isSubagentKey(key: unknown): boolean {
  const a = analyze(key);
  return a !== null && a.rest.length >= 2 && a.rest[0] === "subagent";
}

/** True for UUID-shaped input (a `sessionId` from `sessions_list`). */
export function looksLikeSessionId(input: unknown): boolean {
  return typeof input === "string" && UUID_RE.test(input.trim());
}

/** The agent a store key belongs to (`main` for keys that are not agent-scoped). */
export function agentIdOf(key: unknown): string {
  return analyze(key)?.agentId ?? DEFAULT_AGENT_ID;
}
