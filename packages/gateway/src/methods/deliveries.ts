import { parseMethodParams, SessionsError } from "@sessions/core";
import type { GatewayContext } from "../context.js";
import { operatorKey } from "../sessions/entries.js";
import type { DeliveryRecord } from "../store/types.js";

/** Statuses an operator may send again: given up on, or held back by a send policy (checked again on the way). */
const RETRYABLE: readonly DeliveryRecord["status"][] = ["failed", "suppressed"];

/** `deliveries.*`: the outbox as operators see it (receipts, failures, suppressions), and retrying one. */
export const deliveryMethods = {
  async "deliveries.get"(ctx: GatewayContext, params: unknown): Promise<DeliveryRecord> {
    const p = parseMethodParams("deliveries.get", params);
    const record = await ctx.store.getDelivery(p.id);
    if (record === undefined)
      throw new SessionsError("not_found", `Delivery not found: ${p.id}`, {
        field: "id",
        details: { code: "NOT_FOUND" },
      });
    return record;
  },
  async "deliveries.list"(ctx: GatewayContext, params: unknown): Promise<{ deliveries: DeliveryRecord[] }> {
    const p = parseMethodParams("deliveries.list", params);
    const deliveries = await ctx.store.listDeliveries({
      ...(p.sessionKey === undefined ? {} : { sessionKey: operatorKey(ctx, p.sessionKey, "sessionKey") }),
      ...(p.runId === undefined ? {} : { runId: p.runId }),
      ...(p.status === undefined ? {} : { status: p.status }),
      limit: p.limit ?? 100,
    });
    return { deliveries };
  },
  /** Queues a failed or suppressed delivery again with fresh attempts; the outbox sends it (policy checked again). */
  async "deliveries.retry"(ctx: GatewayContext, params: unknown): Promise<DeliveryRecord> {
    const p = parseMethodParams("deliveries.retry", params);
    const record = await ctx.store.getDelivery(p.id);
    if (record === undefined)
      throw new SessionsError("not_found", `Delivery not found: ${p.id}`, {
        field: "id",
        details: { code: "NOT_FOUND" },
      });
    if (record.status === "queued") return record;
    if (!RETRYABLE.includes(record.status))
      throw new SessionsError(
        "invalid_params",
        `Delivery ${p.id} is ${record.status}; only failed or suppressed ones are retried`,
        {
          field: "id",
          details: { code: "NOT_RETRYABLE", status: record.status },
        },
      );
    const now = ctx.clock.now();
    const {
      lastError: _lastError,
      receipt: _receipt,
      leaseOwner: _owner,
      leaseUntil: _until,
      ...rest
    } = record;
    const queued: DeliveryRecord = {
      ...rest,
      status: "queued",
      attempts: 0,
      nextAttemptAt: now,
      updatedAt: now,
    };
    await ctx.store.putDelivery(queued);
    void ctx.outbox.replay();
    return queued;
  },
};
