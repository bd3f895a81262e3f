import { isReservedKey } from "@sessions/core";
import type { GatewayContext } from "../context.js";
import type { SearchSessionsQuery, StoredEntry } from "../store/types.js";
import { visibleAgentIds } from "./list.js";
import { accessTo, type ToolContext, visibilityFor } from "./tool-context.js";

/** The part of a search query that says where a requester may look. */
export type SearchScope = Pick<SearchSessionsQuery, "keys" | "agentIds" | "excludeKeys">;

/** Children listed per store call while collecting a `tree` requester's sessions. */
const PAGE = 500;

/**
 * Where `tool`'s requester may search, as a filter the store applies inside its query (a hidden session then never
 * matches, nor counts): the sessions `sessions_list` would show it. `self` and `tree`: its own session and the ones
 * it spawned, each passed through the same access decision as `sessions_list` (`accessTo`). `agent` and `all`: the
 * agents whose sessions it may see (every agent id that decision allows), without their reserved keys.
 */
export async function searchScope(
  ctx: Pick<GatewayContext, "config" | "store">,
  tool: ToolContext,
  options: { includeArchived?: boolean | undefined } = {},
): Promise<SearchScope> {
  const visibility = visibilityFor(ctx, tool);
  const accept = (entry: StoredEntry) =>
    !isReservedKey(entry.key) && accessTo(ctx, tool, "list", entry).allowed;
  if (visibility === "self" || visibility === "tree") {
    const candidates: StoredEntry[] = [];
    const own = await ctx.store.getEntry(tool.requesterKey);
    if (own !== undefined) candidates.push(own);
    if (visibility === "tree") {
      let after: { updatedAt: number; key: string } | undefined;
      for (;;) {
        const page = await ctx.store.listEntries({
          spawnedBy: tool.requesterKey,
          ...(options.includeArchived ? { includeArchived: true } : {}),
          ...(after === undefined ? {} : { after }),
          limit: PAGE,
        });
        candidates.push(...page);
        const last = page[page.length - 1];
        if (page.length < PAGE || last === undefined) break;
        after = { updatedAt: last.updatedAt, key: last.key };
      }
    }
    return { keys: candidates.filter(accept).map((entry) => entry.key) };
  }
  const agents =
    visibility === "agent"
      ? [tool.agentId]
      : (visibleAgentIds(ctx, tool.agentId) ?? (await ctx.store.listAgentIds()));
  // The decision `sessions_list` takes for each session, taken for a session of each agent: for `agent` and `all`
  // it depends on the agent alone.
  const agentIds = [...new Set(agents)].filter((agentId) =>
    accept({ key: `agent:${agentId}:main` } as StoredEntry),
  );
  const excludeKeys = [
    "global",
    "unknown",
    ...agentIds.flatMap((agentId) => [`agent:${agentId}:global`, `agent:${agentId}:unknown`]),
  ];
  return { agentIds, excludeKeys };
}
