import { normalizeChannelId } from "./channels.js";
import { normalizeAccountId } from "./keys.js";

/** Where replies for a conversation go. */
export interface DeliveryContext {
  channel?: string | undefined;
  to?: string | undefined;
  accountId?: string | undefined;
  threadId?: string | undefined;
}

/** A delivery context as callers give it, before `normalizeDeliveryContext` (numeric thread ids, aliases, blanks allowed). */
export interface DeliveryContextInput {
  channel?: unknown;
  to?: unknown;
  accountId?: unknown;
  threadId?: unknown;
}

function text(value: unknown): string | undefined {
  if (typeof value === "number" && Number.isFinite(value)) return String(value);
  if (typeof value !== "string") return undefined;
  const t = value.trim();
  return t === "" ? undefined : t;
}

/**
 * Lower-cases the channel through the alias map, trims `to`, normalises `accountId`, stringifies numeric thread
 * ids and drops empty fields; an all-empty (or non-object) context is `undefined`.
 */
export function normalizeDeliveryContext(
  ctx: DeliveryContextInput | null | undefined,
  aliases?: Readonly<Record<string, string>>,
): DeliveryContext | undefined {
  if (ctx === null || typeof ctx !== "object") return undefined;
  const out: DeliveryContext = {};
  const channel = normalizeChannelId(ctx.channel, aliases);
  if (channel !== undefined) out.channel = channel;
  const to = typeof ctx.to === "string" ? text(ctx.to) : undefined;
  if (to !== undefined) out.to = to;
  const account = text(ctx.accountId);
  if (account !== undefined) out.accountId = normalizeAccountId(account);
  const thread = text(ctx.threadId);
  if (thread !== undefined) out.threadId = thread;
  return Object.keys(out).length === 0 ? undefined : out;
}

/**
 * Field-wise merge where `primary` wins. When both name different channels, `to`, `accountId` and `threadId`
 * come only from the primary, so a Telegram chat id is never paired with a Discord channel.
 */
export function mergeDeliveryContext(
  primary: DeliveryContextInput | null | undefined,
  fallback: DeliveryContextInput | null | undefined,
  aliases?: Readonly<Record<string, string>>,
): DeliveryContext | undefined {
  const p = normalizeDeliveryContext(primary, aliases);
  const f = normalizeDeliveryContext(fallback, aliases);
  if (p === undefined) return f;
  if (f === undefined) return p;
  if (p.channel !== undefined && f.channel !== undefined && p.channel !== f.channel) return p;
  return { ...f, ...p };
}
