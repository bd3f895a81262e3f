import { randomUUID } from "node:crypto";
import {
  channelOf,
  defaultAgentId,
  isReservedKey,
  normalizeAgentId,
  parseSessionKey,
  SessionsError,
  sessionKindOf,
  toStoreKey,
} from "@sessions/core";
import type { GatewayContext } from "../context.js";
import type { StoredEntry } from "../store/types.js";

type EntryContext = Pick<GatewayContext, "config" | "store" | "clock" | "emit">;

/** A key as given by an agent of `agentId`, in its stored form (`global` is main when the scope is global). */
export function storeKey(ctx: Pick<GatewayContext, "config">, agentId: string, key: unknown): string {
  const { scope, mainKey } = ctx.config.session;
  if (scope === "global" && typeof key === "string" && key.trim().toLowerCase() === "global") {
    return toStoreKey({ agentId, key: "main", mainKey });
  }
  return toStoreKey({ agentId, key, mainKey });
}

/** A caller's key scoped to an agent; unparseable or reserved keys are `invalid_params` naming `field`. */
export function operatorKey(
  ctx: Pick<GatewayContext, "config">,
  key: string,
  field = "key",
  agentId = defaultAgentId(ctx.config),
): string {
  let resolved: string;
  try {
    resolved = storeKey(ctx, agentId, key);
  } catch (error) {
    if (SessionsError.isInstance(error)) throw new SessionsError("invalid_params", error.message, { field });
    throw error;
  }
  if (isReservedKey(resolved)) {
    throw new SessionsError("invalid_params", `Session key "${resolved}" is reserved`, { field });
  }
  return resolved;
}

export function kindOf(
  ctx: Pick<GatewayContext, "config">,
  entry: Pick<StoredEntry, "key" | "chatType">,
): StoredEntry["kind"] {
  return sessionKindOf(entry.key, {
    mainKey: ctx.config.session.mainKey,
    ...(entry.chatType === undefined ? {} : { chatType: entry.chatType }),
  });
}

/** A fresh entry for `key`: a new sessionId, its agent, chat type and channel as the key says. */
export function newEntry(
  ctx: Pick<GatewayContext, "config" | "clock">,
  key: string,
  init: Partial<StoredEntry> = {},
): StoredEntry {
  const parsed = parseSessionKey(key);
  const t = ctx.clock.now();
  const entry = {
    ...init,
    key,
    sessionId: randomUUID(),
    agentId: parsed?.agentId ?? normalizeAgentId(undefined),
    createdAt: t,
    updatedAt: t,
  } as StoredEntry;
  if (entry.chatType === undefined && parsed !== null && parsed.chatType !== "unknown")
    entry.chatType = parsed.chatType;
  if (entry.channel === undefined && parsed?.channel !== undefined) entry.channel = parsed.channel;
  entry.kind = kindOf(ctx, entry);
  return entry;
}

/** Read-modify-write of one entry as one unit of work; `fn` returning undefined writes nothing. */
export async function updateEntry(
  ctx: EntryContext,
  key: string,
  fn: (entry: StoredEntry | undefined) => StoredEntry | undefined,
  reason = "updated",
): Promise<StoredEntry | undefined> {
  let changed = false;
  const result = await ctx.store.transaction(async (tx) => {
    const current = await tx.getEntry(key);
    const next = fn(current);
    if (next === undefined) return current;
    next.kind = kindOf(ctx, next);
    await tx.putEntry(next);
    changed = true;
    return next;
  });
  if (changed) ctx.emit({ type: "sessions.changed", key, reason });
  return result;
}

/**
 * Sets one of a session's own settings (`undefined` clears it, so the configured one applies) and touches it;
 * nothing when the session does not exist.
 */
export async function setSessionSetting<K extends "sendPolicy" | "queueMode">(
  ctx: EntryContext,
  key: string,
  field: K,
  value: StoredEntry[K] | undefined,
  reason: string,
): Promise<void> {
  await updateEntry(
    ctx,
    key,
    (entry) => {
      if (entry === undefined) return undefined;
      const next = { ...entry, updatedAt: ctx.clock.now() };
      if (value === undefined) delete next[field];
      else next[field] = value;
      return next;
    },
    reason,
  );
}

/** The entry for `key`, created with `init` if it does not exist yet. */
export async function ensureEntry(
  ctx: EntryContext,
  key: string,
  init: Partial<StoredEntry> = {},
): Promise<StoredEntry> {
  const existing = await ctx.store.getEntry(key);
  if (existing !== undefined) return existing;
  return (await updateEntry(
    ctx,
    key,
    (entry) => (entry === undefined ? newEntry(ctx, key, init) : undefined),
    "created",
  )) as StoredEntry;
}

/** Bumps `updatedAt` (and applies `patch`) on an existing entry. */
export function touchEntry(
  ctx: EntryContext,
  key: string,
  patch: Partial<StoredEntry> = {},
): Promise<StoredEntry | undefined> {
  return updateEntry(ctx, key, (entry) =>
    entry === undefined ? undefined : { ...entry, ...patch, updatedAt: ctx.clock.now() },
  );
}

export async function requireEntry(
  ctx: Pick<GatewayContext, "store">,
  key: string,
  field = "key",
): Promise<StoredEntry> {
  const entry = await ctx.store.getEntry(key);
  if (entry === undefined)
    throw new SessionsError("not_found", `Session not found: ${key}`, {
      field,
      details: { code: "NOT_FOUND" },
    });
  return entry;
}

/** The channel a session lives on, as shown to agents (`unknown` when it has none). */
export async function channelFor(
  ctx: Pick<GatewayContext, "store" | "channels">,
  key: string,
): Promise<string> {
  const entry = await ctx.store.getEntry(key);
  if (entry === undefined) return "unknown";
  return channelOf(
    {
      key,
      kind: entry.kind,
      ...(entry.channel ? { channel: entry.channel } : {}),
      ...(entry.lastChannel ? { lastChannel: entry.lastChannel } : {}),
      ...(entry.deliveryContext ? { deliveryContext: entry.deliveryContext } : {}),
    },
    ctx.channels.aliases,
  );
}

/** Removes a session and its transcript, and says so. */
export async function deleteSession(
  ctx: Pick<GatewayContext, "store" | "emit">,
  key: string,
  transcript = true,
): Promise<boolean> {
  const deleted = await ctx.store.deleteEntry(key, { transcript });
  if (deleted) ctx.emit({ type: "sessions.changed", key, reason: "deleted" });
  return deleted;
}
