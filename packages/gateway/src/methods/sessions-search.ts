import { normalizeAgentId, parseMethodParams } from "@sessions/core";
import type { GatewayContext } from "../context.js";
import type { SessionsSearchPayload } from "../gateway.js";
import { operatorKey } from "../sessions/entries.js";
import { type SearchScope, searchScope } from "../tools/search-scope.js";
import { toolContextFor } from "../tools/tool-context.js";
import { gatewayRow } from "./sessions.js";

/** Results per page unless asked for fewer or more (up to 100). */
const SEARCH_LIMIT = 20;

/**
 * `sessions.search` (ours): full-text search over transcripts, keys, labels and display names, best first, paged by
 * offset. Operators see every session; with `requesterKey`, the search answers as that session's tools would see
 * (`sessions_list` with `query`): the scope is part of the store's query, so a hidden session never matches, nor
 * counts in `hasMore`.
 */
export const sessionSearchMethods = {
  async "sessions.search"(ctx: GatewayContext, params: unknown): Promise<SessionsSearchPayload> {
    const p = parseMethodParams("sessions.search", params);
    const limit = p.limit ?? SEARCH_LIMIT;
    const offset = p.offset ?? 0;
    let scope: SearchScope = {};
    if (p.requesterKey !== undefined) {
      const requesterKey = operatorKey(ctx, p.requesterKey, "requesterKey");
      const entry = await ctx.store.getEntry(requesterKey);
      const tool = toolContextFor(ctx, entry, requesterKey, p.sandboxed === true);
      scope = await searchScope(ctx, tool, { includeArchived: p.includeArchived === true });
    }
    if (p.agentId !== undefined) {
      const agentId = normalizeAgentId(p.agentId);
      scope = { ...scope, agentIds: (scope.agentIds ?? [agentId]).filter((id) => id === agentId) };
    }
    const page = await ctx.store.searchSessions({
      text: p.query,
      ...scope,
      ...(p.kinds === undefined ? {} : { kinds: p.kinds }),
      ...(p.activeMinutes === undefined ? {} : { updatedSince: ctx.clock.now() - p.activeMinutes * 60_000 }),
      ...(p.includeArchived ? { includeArchived: true } : {}),
      limit,
      offset,
      messagesPerSession: p.messagesPerSession ?? 1,
    });
    return {
      ts: ctx.clock.now(),
      count: page.hits.length,
      hasMore: page.hasMore,
      nextOffset: page.hasMore ? offset + limit : null,
      truncated: page.truncated,
      results: page.hits.map((hit) => ({
        key: hit.entry.key,
        score: hit.score,
        matchedMessages: hit.matchedMessages,
        messages: hit.messages,
        session: gatewayRow(hit.entry),
      })),
    };
  },
};
