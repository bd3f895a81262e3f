import {
  channelOf,
  isReservedKey,
  normalizeAgentId,
  normalizeDeliveryContext,
  type parseToolParams,
  type SessionRow,
  type SessionsListResult,
} from "@sessions/core";
import type { GatewayContext } from "../context.js";
import type { StoredEntry } from "../store/types.js";
import { readNonToolMessages } from "./history.js";
import { displayKey } from "./resolve.js";
import { accessTo, type ToolContext, visibilityFor } from "./tool-context.js";

const ROW_FIELDS = [
  "displayName",
  "label",
  "model",
  "contextTokens",
  "totalTokens",
  "thinkingLevel",
  "verboseLevel",
  "systemSent",
  "abortedLastRun",
  "sendPolicy",
  "lastChannel",
  "lastTo",
] as const;

/** A `sessions_list` row as the requester sees it (SPEC 4). */
export function rowFor(
  ctx: Pick<GatewayContext, "config" | "store" | "channels">,
  tool: ToolContext,
  entry: StoredEntry,
) {
  const aliases = ctx.channels.aliases;
  const row: SessionRow = {
    key: displayKey(ctx, tool, entry.key),
    kind: entry.kind,
    channel: channelOf(
      {
        key: entry.key,
        kind: entry.kind,
        ...(entry.channel === undefined ? {} : { channel: entry.channel }),
        ...(entry.lastChannel === undefined ? {} : { lastChannel: entry.lastChannel }),
        ...(entry.deliveryContext === undefined ? {} : { deliveryContext: entry.deliveryContext }),
        ...(entry.chatType === undefined ? {} : { chatType: entry.chatType }),
      },
      aliases,
    ),
    updatedAt: entry.updatedAt,
    sessionId: entry.sessionId,
  };
  for (const field of ROW_FIELDS)
    if (entry[field] !== undefined) (row as unknown as Record<string, unknown>)[field] = entry[field];
  const delivery = normalizeDeliveryContext(
    entry.deliveryContext === undefined
      ? undefined
      : {
          channel: entry.deliveryContext.channel,
          to: entry.deliveryContext.to,
          accountId: entry.deliveryContext.accountId,
        },
    aliases,
  );
  if (delivery !== undefined) row.deliveryContext = delivery;
  const path = ctx.store.transcriptPath?.(entry.sessionId);
  if (path !== undefined) row.transcriptPath = path;
  return row;
}

/** Agents whose sessions "all" can show, when that set is finite: the filter then runs in the store. */
export function visibleAgentIds(ctx: Pick<GatewayContext, "config">, agentId: string): string[] | undefined {
  const a2a = ctx.config.tools.agentToAgent;
  if (!a2a.enabled) return [agentId];
  if (a2a.allow.length === 0 || a2a.allow.some((pattern) => pattern.includes("*"))) return undefined;
  return [...new Set([agentId, ...a2a.allow.map((id) => normalizeAgentId(id))])];
}

/** `sessions_list` (SPEC 4): the sessions the requester may see, newest first, filters applied in the store. */
export async function listTool(
  ctx: Pick<GatewayContext, "config" | "store" | "channels" | "clock">,
  tool: ToolContext,
  params: ReturnType<typeof parseToolParams<"sessions_list">>,
): Promise<SessionsListResult> {
  const { store } = ctx;
  const visibility = visibilityFor(ctx, tool);
  const since =
    params.activeMinutes === undefined ? undefined : ctx.clock.now() - params.activeMinutes * 60_000;
  const base = {
    ...(params.kinds === undefined ? {} : { kinds: params.kinds }),
    ...(since === undefined ? {} : { updatedSince: since }),
  };
  const rows: StoredEntry[] = [];
  const accept = (entry: StoredEntry) =>
    !isReservedKey(entry.key) && accessTo(ctx, tool, "list", entry).allowed;
  if (visibility === "self" || visibility === "tree") {
    const own = await store.getEntry(tool.requesterKey);
    const candidates =
      own !== undefined &&
      (since === undefined || own.updatedAt >= since) &&
      (params.kinds === undefined || params.kinds.includes(own.kind)) &&
      own.archivedAt === undefined
        ? [own]
        : [];
    if (visibility === "tree")
      candidates.push(
        ...(await store.listEntries({ ...base, spawnedBy: tool.requesterKey, limit: params.limit })),
      );
    candidates.sort((a, b) => b.updatedAt - a.updatedAt || (a.key < b.key ? -1 : 1));
    rows.push(...candidates.filter(accept).slice(0, params.limit));
  } else {
    const agentIds = visibility === "agent" ? [tool.agentId] : visibleAgentIds(ctx, tool.agentId);
    let after: { updatedAt: number; key: string } | undefined;
    const pageSize = Math.max(params.limit, 50);
    for (;;) {
      const page = await store.listEntries({
        ...base,
        ...(agentIds ? { agentIds } : {}),
        ...(after ? { after } : {}),
        limit: pageSize,
      });
      for (const entry of page) {
        if (accept(entry)) rows.push(entry);
        if (rows.length >= params.limit) break;
      }
      const last = page[page.length - 1];
      if (rows.length >= params.limit || page.length < pageSize || last === undefined) break;
      after = { updatedAt: last.updatedAt, key: last.key };
    }
  }
  const sessions: SessionRow[] = [];
  for (const entry of rows) {
    const row = rowFor(ctx, tool, entry);
    if (params.messageLimit > 0)
      row.messages = await readNonToolMessages(ctx, entry.key, params.messageLimit);
    sessions.push(row);
  }
  return { count: sessions.length, sessions };
}
