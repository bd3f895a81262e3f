import { defaultAgentId, normalizeAgentId, parseMethodParams, SessionsError } from "@sessions/core";
import type { GatewayContext } from "../context.js";
import type { GatewayRow, SessionsListPayload } from "../gateway.js";
import { JsonTexts } from "../known-json.js";
import { deleteSession, operatorKey, requireEntry, storeKey, updateEntry } from "../sessions/entries.js";
import { keptEntries } from "../store/kept-records.js";
import type { StoredEntry } from "../store/types.js";
import {
  continueSessionsWalk,
  encodeSessionsCursor,
  filtersQuery,
  refuseCursorWithOffset,
  sessionFilters,
} from "./cursors.js";
import { activeRuns } from "./runs.js";

const ROW_FIELDS = [
  "label",
  "displayName",
  "channel",
  "chatType",
  "spawnedBy",
  "sendPolicy",
  "queueMode",
  "budget",
  "visibility",
  "model",
  "contextTokens",
  "inputTokens",
  "outputTokens",
  "totalTokens",
  "thinkingLevel",
  "systemSent",
  "abortedLastRun",
  "lastChannel",
  "lastTo",
  "lastAccountId",
  "deliveryContext",
] as const;

const ROW_FIELD_SET: ReadonlySet<string> = new Set(ROW_FIELDS);

const PATCHABLE = [
  "label",
  "sendPolicy",
  "queueMode",
  "budget",
  "visibility",
  "model",
  "thinkingLevel",
  "verboseLevel",
] as const;

/** A `sessions.list` row as operators see it (docs/protocol.md). */
export function gatewayRow(entry: StoredEntry): GatewayRow {
  const kind =
    entry.key === "global"
      ? "global"
      : entry.key === "unknown"
        ? "unknown"
        : entry.kind === "group" || entry.chatType === "group" || entry.chatType === "channel"
          ? "group"
          : "direct";
  const row: GatewayRow = { key: entry.key, kind, updatedAt: entry.updatedAt, sessionId: entry.sessionId };
  // Over the entry's own fields (a dozen), not the list of row fields: a page of 100 rows in a third of the time.
  const out = row as unknown as Record<string, unknown>;
  for (const field in entry) {
    if (!ROW_FIELD_SET.has(field)) continue;
    const value = (entry as unknown as Record<string, unknown>)[field];
    if (value !== undefined) out[field] = value;
  }
  return row;
}

/** The runs under way, by session: one read for all of them, whichever gateway runs them. */
async function activeRunIdsBySession(ctx: GatewayContext, rows: number): Promise<Map<string, string[]>> {
  const active = new Map<string, string[]>();
  if (rows === 0) return active;
  for (const run of await activeRuns(ctx)) {
    const ids = active.get(run.sessionKey);
    if (ids === undefined) active.set(run.sessionKey, [run.runId]);
    else ids.push(run.runId);
  }
  return active;
}

/** Rows with the runs under way in their sessions. */
async function gatewayRows(ctx: GatewayContext, entries: StoredEntry[]): Promise<GatewayRow[]> {
  const active = await activeRunIdsBySession(ctx, entries.length);
  return entries.map((entry) => {
    const row = gatewayRow(entry);
    const runIds = active.get(entry.key);
    row.hasActiveRun = runIds !== undefined;
    if (runIds !== undefined) row.activeRunIds = runIds;
    return row;
  });
}

/** The wire text of the rows of entries a store keeps (see `keptEntries`), without their runs, made once each. */
const rowTexts = new WeakMap<StoredEntry, string>();

/**
 * The rows of kept entries as wire texts (an answer that is only sent: see `dispatch`): each entry's made once,
 * then the runs under way appended as `gatewayRows` appends them.
 */
async function rowTextsOf(ctx: GatewayContext, entries: readonly StoredEntry[]): Promise<GatewayRow[]> {
  const active = await activeRunIdsBySession(ctx, entries.length);
  const texts = entries.map((entry) => {
    let text = rowTexts.get(entry);
    if (text === undefined) {
      text = JSON.stringify(gatewayRow(entry));
      rowTexts.set(entry, text);
    }
    const runIds = active.get(entry.key);
    const runs =
      runIds === undefined
        ? `"hasActiveRun":false`
        : `"hasActiveRun":true,"activeRunIds":${JSON.stringify(runIds)}`;
    return `${text.slice(0, -1)},${runs}}`;
  });
  return new JsonTexts(texts) as unknown as GatewayRow[];
}

/** `sessions.*`: list, resolve, patch and delete for operators (no visibility rules: scopes guard these). */
export const sessionMethods = {
  /**
   * Newest first, paged by `offset`; or by key (`sortBy: "key"`), where every page also gives a `nextCursor`. A walk
   * by cursor returns every session that exists throughout it exactly once, however sessions are updated meanwhile.
   */
  async "sessions.list"(ctx: GatewayContext, params: unknown, wire = false): Promise<SessionsListPayload> {
    const p = parseMethodParams("sessions.list", params);
    refuseCursorWithOffset(p);
    // OpenClaw's default page (100).
    const limit = p.limit ?? 100;
    const offset = p.offset ?? 0;
    const walk = p.cursor === undefined ? undefined : continueSessionsWalk({ ...p, cursor: p.cursor });
    const byKey = walk !== undefined || p.sortBy === "key";
    const filters = walk?.filters ?? sessionFilters(p, ctx.clock.now());
    const query = {
      ...filtersQuery(filters),
      ...(byKey ? { order: "key" as const } : {}),
      ...(walk === undefined ? {} : { afterKey: walk.afterKey }),
      limit: limit + 1,
      offset,
    };
    // For an answer that is only sent, the entries a store keeps, lent: their rows' texts are made once each.
    const kept = wire ? await keptEntries(ctx.store, query) : undefined;
    const entries = kept ?? (await ctx.store.listEntries(query));
    const hasMore = entries.length > limit;
    // The page is what was read up to the limit, less the rows left out after the query: the next page starts
    // after the last row read, so a row left out never pushes one into two pages.
    const read = entries.slice(0, limit);
    const page = read.filter(
      (e) => (filters.includeGlobal || e.key !== "global") && (filters.includeUnknown || e.key !== "unknown"),
    );
    const last = read[read.length - 1];
    return {
      ts: ctx.clock.now(),
      count: page.length,
      hasMore,
      // A walk by cursor has no offset to give: it goes on with `nextCursor`.
      nextOffset: hasMore && walk === undefined ? offset + limit : null,
      ...(byKey
        ? { nextCursor: hasMore && last !== undefined ? encodeSessionsCursor(last.key, filters) : null }
        : {}),
      sessions: kept === undefined ? await gatewayRows(ctx, page) : await rowTextsOf(ctx, page),
    };
  },

  async "sessions.resolve"(
    ctx: GatewayContext,
    params: unknown,
  ): Promise<{ ok: true; key: string; agentId: string }> {
    const p = parseMethodParams("sessions.resolve", params);
    const { store, config } = ctx;
    let candidates: StoredEntry[] = [];
    if (p.key !== undefined) {
      const entry = await store.getEntry(
        storeKey(ctx, normalizeAgentId(p.agentId ?? defaultAgentId(config)), p.key),
      );
      if (entry) candidates.push(entry);
    } else if (p.sessionId !== undefined)
      candidates = await store.findEntriesBySessionId(p.sessionId.trim().toLowerCase());
    else if (p.label !== undefined) candidates = await store.findEntriesByLabel(p.label);
    else
      throw new SessionsError("invalid_params", "sessions.resolve needs key, sessionId or label", {
        field: "key",
      });
    if (p.agentId !== undefined)
      candidates = candidates.filter((e) => e.agentId === normalizeAgentId(p.agentId));
    if (p.spawnedBy !== undefined) candidates = candidates.filter((e) => e.spawnedBy === p.spawnedBy);
    if (candidates.length === 0)
      throw new SessionsError("not_found", "No session matches", { details: { code: "NOT_FOUND" } });
    if (candidates.length > 1) {
      throw new SessionsError("ambiguous", `${candidates.length} sessions match`, {
        details: { code: "AMBIGUOUS", candidates: candidates.map((c) => c.key) },
      });
    }
    const found = candidates[0] as StoredEntry;
    return { ok: true as const, key: found.key, agentId: found.agentId };
  },

  /** The patched session's list row as `entry`, so it reports the same `kind` as `sessions.list`. */
  async "sessions.patch"(
    ctx: GatewayContext,
    params: unknown,
  ): Promise<{ ok: true; key: string; entry: GatewayRow }> {
    const p = parseMethodParams("sessions.patch", params);
    const key = operatorKey(ctx, p.key);
    await requireEntry(ctx, key);
    const entry = await updateEntry(
      ctx,
      key,
      (current) => {
        if (current === undefined) return undefined;
        const next: StoredEntry = { ...current, updatedAt: ctx.clock.now() };
        for (const field of PATCHABLE) {
          const value = p[field];
          if (value === undefined) continue;
          if (value === null) delete next[field];
          else (next as unknown as Record<string, unknown>)[field] = value;
        }
        return next;
      },
      "patched",
    );
    const [row] = await gatewayRows(ctx, [entry as StoredEntry]);
    return { ok: true as const, key, entry: row as GatewayRow };
  },

  async "sessions.delete"(
    ctx: GatewayContext,
    params: unknown,
  ): Promise<{ ok: true; key: string; deleted: boolean; archived: string[] }> {
    const p = parseMethodParams("sessions.delete", params);
    const key = operatorKey(ctx, p.key);
    // Runs of the session stop first, so nothing writes into a transcript that is being removed.
    ctx.runs.abortSession(key);
    await ctx.runs.lanes.run(key, async () => undefined);
    for (const binding of await ctx.store.listThreadBindings({ sessionKey: key })) {
      await ctx.store.deleteThreadBinding(binding.channel, binding.accountId, binding.threadId);
    }
    const deleted = await deleteSession(ctx, key, p.deleteTranscript !== false);
    // `archived`: OpenClaw lists the transcript files it archived instead of deleting; we archive none.
    return { ok: true as const, key, deleted, archived: [] };
  },
};
