import {
  type DeliveryContext,
  mergeDeliveryContext,
  type normalizeDeliveryContext,
  resolveSendPolicy,
  SessionsError,
} from "@sessions/core";
import type { GatewayContext } from "../context.js";
import type { StoredEntry } from "../store/types.js";

/**
 * Where a delivering `chat.send` / `agent` goes: the explicit target merged over the session's context. Throws
 * `invalid_params` without a complete target and `send_policy_denied` (SPEC 8.2) when the policy says no.
 */
export function allowedDelivery(
  ctx: Pick<GatewayContext, "config" | "channels">,
  entry: StoredEntry,
  key: string,
  explicit: Parameters<typeof normalizeDeliveryContext>[0] | undefined,
  missing: string,
): DeliveryContext & { channel: string; to: string } {
  const target = mergeDeliveryContext(explicit, entry.deliveryContext, ctx.channels.aliases);
  if (target?.channel === undefined || target.to === undefined) {
    throw new SessionsError("invalid_params", missing, { field: explicit === undefined ? "deliver" : "to" });
  }
  const policy = ctx.config.session.sendPolicy;
  if (resolveSendPolicy({ policy, entry, key, channel: target.channel }) === "deny") {
    throw new SessionsError("send_policy_denied", `Send policy denies delivery to ${key}`, {
      field: "deliver",
      details: { code: "SEND_POLICY_DENIED" },
    });
  }
  return target as DeliveryContext & { channel: string; to: string };
}
