import { parseMethodParams, SessionsError } from "@sessions/core";
import type { GatewayContext } from "../context.js";
import { operatorKey } from "../sessions/entries.js";
import type { DeliveryRecord } from "../store/types.js";

/** `deliveries.*`: the outbox as operators see it (receipts, failures, suppressions). */
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
};
