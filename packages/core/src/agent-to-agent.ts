import { normalizeChannelId } from "./channels.js";
import { type DeliveryContext, normalizeDeliveryContext } from "./delivery.js";
import { normalizeAccountId, parseSessionKey } from "./keys.js";

/** A reply-back answer that ends the agent-to-agent exchange. */
export const REPLY_SKIP = "REPLY_SKIP";
/** An announce answer that stays silent (nothing is posted). */
export const ANNOUNCE_SKIP = "ANNOUNCE_SKIP";
/** A silent token accepted wherever `REPLY_SKIP` or `ANNOUNCE_SKIP` are. */
export const NO_REPLY = "NO_REPLY";
/** Every silent token; a reply made only of these (any case) is a skip. */
export const SILENT_TOKENS = [REPLY_SKIP, ANNOUNCE_SKIP, NO_REPLY] as const;

/** Default of `session.agentToAgent.maxHops`: how many messages deep a tree of runs may go from the user's. */
export const DEFAULT_MAX_HOPS = 5;

/** Default of `session.agentToAgent.maxPingPongTurns`. */
export const DEFAULT_PING_PONG_TURNS = 5;
/** Upper bound of `session.agentToAgent.maxPingPongTurns`. */
export const MAX_PING_PONG_TURNS = 5;

const SILENT = new Set(SILENT_TOKENS.map((t) => t.toLowerCase()));
const QUOTES = /^["'`“”‘’«»]+|["'`“”‘’«»]+$/g;

/**
 * True when a reply, after trimming whitespace, surrounding quotes and trailing `.`/`!`, is only one or more of
 * `REPLY_SKIP`, `ANNOUNCE_SKIP`, `NO_REPLY` (any case). `"Ok. REPLY_SKIP"` is not a skip.
 */
export function isSilentReply(text: unknown): boolean {
  if (typeof text !== "string" || text.length > 100_000) return false;
  let t = text.trim();
  let previous = "";
  while (t !== previous) {
    previous = t;
    t = t
      .replace(/[.!]+$/, "")
      .trim()
      .replace(QUOTES, "")
      .trim();
  }
  if (t === "") return false;
  return t.split(/\s+/).every((word) => SILENT.has(word.toLowerCase()));
}

/** A reply that ends the reply-back (ping-pong) loop. */
export function isReplySkip(text: unknown): boolean {
  return isSilentReply(text);
}

/** A reply that keeps the announce step silent. */
export function isAnnounceSkip(text: unknown): boolean {
  return isSilentReply(text);
}

/** `session.agentToAgent.maxPingPongTurns`: integer 0–5, default 5; non-numbers → 5; floored and clamped. */
export function resolvePingPongTurns(value: unknown): number {
  if (typeof value !== "number" || Number.isNaN(value)) return DEFAULT_PING_PONG_TURNS;
  return Math.min(MAX_PING_PONG_TURNS, Math.max(0, Math.floor(value)));
}

/** Where an announce is posted: a channel, a recipient, and optionally an account and thread. */
export interface AnnounceTarget {
  channel: string;
  to: string;
  threadId?: string | undefined;
  accountId?: string | undefined;
}

/** The stored fields that can name an announce target. */
export interface AnnounceTargetEntry {
  deliveryContext?: DeliveryContext | undefined;
  lastChannel?: string | undefined;
  lastTo?: string | undefined;
  lastAccountId?: string | undefined;
  lastThreadId?: string | undefined;
}

const CHANNEL_PREFIXED_PEERS = new Set(["discord", "slack"]);

/**
 * Where an agent-to-agent announce goes (SPEC 5.4): the entry's stored delivery context wins; otherwise it is
 * derived from a group/channel key (Discord and Slack → `channel:<id>`, others `group:<id>`/`channel:<id>`,
 * thread suffix → `threadId`). Main, direct, cron, hook, node and sub-agent keys have no key-derived target.
 */
export function resolveAnnounceTarget(
  key: unknown,
  entry?: AnnounceTargetEntry | null,
): AnnounceTarget | null {
  const stored = normalizeDeliveryContext(entry?.deliveryContext ?? undefined);
  if (stored?.channel !== undefined && stored.to !== undefined) return stored as AnnounceTarget;
  const lastChannel = normalizeChannelId(entry?.lastChannel);
  const lastTo = typeof entry?.lastTo === "string" ? entry.lastTo.trim() : "";
  if (lastChannel !== undefined && lastTo !== "") {
    const target: AnnounceTarget = { channel: lastChannel, to: lastTo };
    if (typeof entry?.lastThreadId === "string" && entry.lastThreadId.trim() !== "")
      target.threadId = entry.lastThreadId.trim();
    if (typeof entry?.lastAccountId === "string" && entry.lastAccountId.trim() !== "")
      target.accountId = normalizeAccountId(entry.lastAccountId);
    return target;
  }

  const parsed = parseSessionKey(key);
  if (parsed === null || parsed.subagent || parsed.kind !== "group") return null;
  if (parsed.channel === undefined || parsed.peerId === undefined) return null;
  if (parsed.chatType !== "group" && parsed.chatType !== "channel") return null;
  const to = CHANNEL_PREFIXED_PEERS.has(parsed.channel)
    ? `channel:${parsed.peerId}`
    : `${parsed.chatType}:${parsed.peerId}`;
  const target: AnnounceTarget = { channel: parsed.channel, to };
  if (parsed.threadId !== undefined) target.threadId = parsed.threadId;
  return target;
}
