import type { DeliveryOutcome } from "@sessions/core";
import type { GatewayContext } from "../context.js";
import type { DeliveryRecord, RunRecord } from "../store/types.js";

const PREFIX = "announce_";

/**
 * The id of the delivery a `sessions_send` run's announce goes out as: known when the send returns, before the
 * announce step has run, and the same on every gateway and after a restart (one announce per send run).
 */
export function announceDeliveryId(runId: string): string {
  return `${PREFIX}${runId}`;
}

/** Why a send whose target run did not end `ok` has no announce (its receipt's `reason`). */
export function nothingAnnounced(run: Pick<RunRecord, "status" | "error">): string {
  return `the target run ended ${run.status}${run.error ? ` (${run.error})` : ""}: nothing announced`;
}

/** A stored delivery as the agent that caused it reads it. */
export function deliveryOutcome(record: DeliveryRecord): DeliveryOutcome {
  const status = record.status === "queued" ? "pending" : record.status;
  if (status === "delivered") return { id: record.id, status, messageIds: record.receipt ?? [] };
  // A pending one with a reason is being retried after that error.
  return { id: record.id, status, ...(record.lastError === undefined ? {} : { reason: record.lastError }) };
}

/**
 * The outcome of delivery `id` of session `sessionKey`: its record's, `pending` while the announce of the send run
 * it names is still to come, `undefined` when the session has no such delivery (to its reader, one that belongs to
 * another session does not exist).
 */
export async function readDeliveryOutcome(
  ctx: Pick<GatewayContext, "store">,
  sessionKey: string,
  id: string,
): Promise<DeliveryOutcome | undefined> {
  const record = await ctx.store.getDelivery(id);
  if (record !== undefined) return record.sessionKey === sessionKey ? deliveryOutcome(record) : undefined;
  if (!id.startsWith(PREFIX)) return undefined;
  const run = await ctx.store.getRun(id.slice(PREFIX.length));
  if (run?.sessionKey !== sessionKey || run.followUp?.kind !== "agent_to_agent") return undefined;
  // A recorded announce is found above; a send whose follow-up is done without one ended before it existed.
  return run.followUpDone === true ? undefined : { id, status: "pending" };
}
