import { parseMethodParams } from "@sessions/core";
import type { GatewayContext } from "../context.js";
import type { ActiveRun } from "../gateway.js";
import { operatorKey } from "../sessions/entries.js";
import type { RunRecord } from "../store/types.js";

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
  async "runs.list"(ctx: GatewayContext, params: unknown): Promise<{ runs: ActiveRun[] }> {
    const p = parseMethodParams("runs.list", params);
    const sessionKey = p.sessionKey === undefined ? undefined : operatorKey(ctx, p.sessionKey, "sessionKey");
    const runs = (await activeRuns(ctx, p.status === undefined ? undefined : [p.status]))
      .filter((run) => sessionKey === undefined || run.sessionKey === sessionKey)
      .slice(0, p.limit ?? 100);
    return { runs: runs.map(activeRun) };
  },
};
