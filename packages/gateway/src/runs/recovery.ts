import { parseSessionKey } from "@sessions/core";
import { agentToAgentFlow } from "../a2a/flow.js";
import type { GatewayContext } from "../context.js";
import type { RunRecord } from "../store/types.js";
import { subagentFinished } from "../subagents/finished.js";
import { ownerLiveness } from "./ownership.js";
import { isFinal } from "./wait.js";

/** How many queued deliveries one start looks at to free the claims of gone gateways. */
const DELIVERY_SCAN = 10_000;

/**
 * After a restart, for work whose owner is gone (its gateway lease lapsed or its process died): runs left queued
 * or running end as errors; sub-agents whose run ended get their announce; `sessions_send` follow-ups resume;
 * deliveries it had claimed are freed for the outbox. Each of those is keyed, so none happens twice.
 */
export async function recoverRuns(ctx: GatewayContext): Promise<void> {
  const { store, clock } = ctx;
  const gone = ownerLiveness(ctx);
  for (const run of await store.listRunsByStatus(["queued", "running"])) {
    if (!(await gone(run.owner))) continue;
    await store.putRun({
      ...run,
      status: "error",
      endedAt: clock.now(),
      error:
        run.status === "running"
          ? "gateway restarted while the run was in progress"
          : "gateway restarted before the run started",
    });
  }
  for (const record of await store.listSubagents({ statuses: ["running", "announcing"] })) {
    const stored = await store.getRun(record.runId);
    if (stored !== undefined && !(await gone(stored.owner))) continue;
    // A record whose run never got written (a crash between the two) ended as an error all the same.
    const run: RunRecord = stored ?? {
      runId: record.runId,
      sessionKey: record.childKey,
      agentId: parseSessionKey(record.childKey)?.agentId ?? "main",
      kind: "subagent",
      status: "error",
      createdAt: record.createdAt,
      endedAt: clock.now(),
      error: "gateway restarted before the run started",
    };
    if (isFinal(run.status)) {
      await store.putSubagent({ ...record, status: "running" });
      ctx.tasks.track(subagentFinished(ctx, record.childKey, run));
    }
  }
  for (const run of await store.listPendingFollowUps()) {
    if (isFinal(run.status) && (await gone(run.owner))) ctx.tasks.track(agentToAgentFlow(ctx, run));
  }
  for (const delivery of await store.listQueuedDeliveries(DELIVERY_SCAN)) {
    if (delivery.leaseOwner === undefined || !(await gone(delivery.leaseOwner))) continue;
    const { leaseOwner: _owner, leaseUntil: _until, ...free } = delivery;
    await store.putDelivery(free);
  }
}
