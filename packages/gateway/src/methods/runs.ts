import { budgetSpent, budgetStatus, parseMethodParams, SessionsError } from "@sessions/core";
import type { GatewayContext } from "../context.js";
import type { ActiveRun, RunTree, RunTreeNode } from "../gateway.js";
import { treeSpent } from "../runs/budget.js";
import { parentRunId } from "../runs/cause.js";
import { operatorKey } from "../sessions/entries.js";
import type { RunRecord } from "../store/types.js";
import { accessTo, toolContextFor } from "../tools/tool-context.js";

/** Runs `runs.tree` returns unless asked for fewer (or more, up to 1,000). */
const TREE_LIMIT = 500;
/** Deliveries listed per run of a tree. */
const DELIVERIES_PER_RUN = 100;

/** What `runs.list` says of a run under way. */
function activeRun(run: RunRecord): ActiveRun {
  const active: ActiveRun = {
    runId: run.runId,
    sessionKey: run.sessionKey,
    agentId: run.agentId,
    kind: run.kind,
    status: run.status === "running" ? "running" : "queued",
    createdAt: run.createdAt,
  };
  if (run.startedAt !== undefined) active.startedAt = run.startedAt;
  if (run.owner !== undefined) active.owner = run.owner;
  return active;
}

/** The runs queued or running now, on every gateway of the store, oldest first. */
export async function activeRuns(
  ctx: GatewayContext,
  statuses: RunRecord["status"][] = ["queued", "running"],
) {
  const runs = await ctx.store.listRunsByStatus(statuses);
  return runs.sort(
    (a, b) => a.createdAt - b.createdAt || (a.runId < b.runId ? -1 : a.runId > b.runId ? 1 : 0),
  );
}

/**
 * `runs.*` (ours): the runs under way, so that an operator who was not watching when they started can see and abort
 * them. Read from the store, so a cluster answers the same on every gateway.
 */
export const runMethods = {
  async "runs.tree"(ctx: GatewayContext, params: unknown): Promise<RunTree> {
    const p = parseMethodParams("runs.tree", params);
    const notFound = () => new SessionsError("not_found", `Run not found: ${p.runId}`, { field: "runId" });
    const asked = await ctx.store.getRun(p.runId);
    if (asked === undefined) throw notFound();
    const rootRunId = asked.rootRunId ?? asked.runId;
    const limit = p.limit ?? TREE_LIMIT;
    const listed = await ctx.store.listRunTree(rootRunId, limit + 1);
    const truncated = listed.length > limit;
    const runs = truncated ? listed.slice(0, limit) : listed;
    let visible = runs;
    if (p.requesterKey !== undefined) {
      const requesterKey = operatorKey(ctx, p.requesterKey, "requesterKey");
      // A run the requester may not see looks like no run at all (asked about, it need not be on this page).
      if ((await visibleTo(ctx, requesterKey, p.sandboxed === true, [asked])).length === 0) throw notFound();
      visible = await visibleTo(ctx, requesterKey, p.sandboxed === true, runs);
    }
    const deliveries = await Promise.all(
      visible.map((run) => ctx.store.listDeliveries({ runId: run.runId, limit: DELIVERIES_PER_RUN })),
    );
    const shown = new Set(visible.map((run) => run.runId));
    const byId = new Map(runs.map((run) => [run.runId, run]));
    // A budgeted tree: what all its runs spent (read again only when this page did not hold them all).
    const limits = asked.budget;
    const spent =
      limits === undefined ? undefined : truncated ? await treeSpent(ctx, rootRunId) : budgetSpent(listed);
    return {
      rootRunId,
      runs: visible.map((run, i) => treeNode(run, parentShown(run, byId, shown), deliveries[i] ?? [])),
      truncated,
      ...(limits === undefined || spent === undefined
        ? {}
        : { budget: budgetStatus(limits, spent, ctx.clock.now()) }),
    };
  },

  async "runs.list"(ctx: GatewayContext, params: unknown): Promise<{ runs: ActiveRun[] }> {
    const p = parseMethodParams("runs.list", params);
    const sessionKey = p.sessionKey === undefined ? undefined : operatorKey(ctx, p.sessionKey, "sessionKey");
    const runs = (await activeRuns(ctx, p.status === undefined ? undefined : [p.status]))
      .filter((run) => sessionKey === undefined || run.sessionKey === sessionKey)
      .slice(0, p.limit ?? 100);
    return { runs: runs.map(activeRun) };
  },
};

/** The runs of sessions `requesterKey`'s tools may read (as `sessions_history` decides). */
async function visibleTo(
  ctx: GatewayContext,
  requesterKey: string,
  sandboxed: boolean,
  runs: RunRecord[],
): Promise<RunRecord[]> {
  const tool = toolContextFor(ctx, await ctx.store.getEntry(requesterKey), requesterKey, sandboxed);
  const readable = new Set<string>();
  for (const key of new Set(runs.map((run) => run.sessionKey))) {
    const entry = await ctx.store.getEntry(key);
    if (entry !== undefined && accessTo(ctx, tool, "history", entry).allowed) readable.add(key);
  }
  return runs.filter((run) => readable.has(run.sessionKey));
}

/** The nearest run up the causal chain that is shown: a hidden run's children hang from its parent. */
function parentShown(
  run: RunRecord,
  byId: ReadonlyMap<string, RunRecord>,
  shown: ReadonlySet<string>,
): string | undefined {
  const seen = new Set<string>([run.runId]);
  let parent = parentRunId(run);
  while (parent !== undefined && !shown.has(parent) && !seen.has(parent)) {
    seen.add(parent);
    const above = byId.get(parent);
    parent = above === undefined ? undefined : parentRunId(above);
  }
  return parent !== undefined && shown.has(parent) ? parent : undefined;
}

function treeNode(run: RunRecord, parentRunId: string | undefined, deliveries: RunTreeNode["deliveries"]) {
  const node: RunTreeNode = {
    runId: run.runId,
    sessionKey: run.sessionKey,
    agentId: run.agentId,
    kind: run.kind,
    status: run.status,
    createdAt: run.createdAt,
    deliveries: [...deliveries].sort((a, b) => a.createdAt - b.createdAt),
  };
  if (parentRunId !== undefined) node.parentRunId = parentRunId;
  if (run.cause !== undefined) node.cause = run.cause;
  if (run.hops !== undefined) node.hops = run.hops;
  if (run.guards !== undefined) node.guards = run.guards;
  if (run.startedAt !== undefined) node.startedAt = run.startedAt;
  if (run.endedAt !== undefined) node.endedAt = run.endedAt;
  if (run.error !== undefined) node.error = run.error;
  if (run.usage !== undefined) node.usage = run.usage;
  if (run.mergedInto !== undefined) node.mergedInto = run.mergedInto;
  return node;
}
