import { markSnippet, type parseToolParams, type SessionRow, type SessionsListResult } from "@sessions/core";
import type { GatewayContext } from "../context.js";
import { readNonToolMessages } from "./history.js";
import { rowFor } from "./list.js";
import { searchScope } from "./search-scope.js";
import type { ToolContext } from "./tool-context.js";

/**
 * `sessions_list` with `query`: the sessions the requester may see whose transcript, key, label or display name
 * match, best first, each with its best-matching message (words marked «like this»). Visibility is part of the
 * store's query, so a session the requester may not see never matches.
 */
export async function searchListTool(
  ctx: Pick<GatewayContext, "config" | "store" | "channels" | "clock">,
  tool: ToolContext,
  params: ReturnType<typeof parseToolParams<"sessions_list">>,
): Promise<SessionsListResult> {
  const scope = await searchScope(ctx, tool);
  const page = await ctx.store.searchSessions({
    text: params.query ?? "",
    ...scope,
    ...(params.kinds === undefined ? {} : { kinds: params.kinds }),
    ...(params.activeMinutes === undefined
      ? {}
      : { updatedSince: ctx.clock.now() - params.activeMinutes * 60_000 }),
    limit: params.limit,
    messagesPerSession: 1,
  });
  const sessions: SessionRow[] = [];
  for (const hit of page.hits) {
    const row = rowFor(ctx, tool, hit.entry);
    const best = hit.messages[0];
    if (best !== undefined)
      row.match = {
        seq: best.seq,
        role: best.role,
        snippet: markSnippet({ text: best.snippet, highlights: best.highlights }),
      };
    if (params.messageLimit > 0)
      row.messages = await readNonToolMessages(ctx, hit.entry.key, params.messageLimit);
    sessions.push(row);
  }
  return { count: sessions.length, sessions };
}
