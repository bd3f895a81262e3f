import { type GatewayMethodName, SessionsError } from "@sessions/core";
import type { GatewayContext } from "../context.js";
import { agentMethods } from "./agent.js";
import { bindingMethods } from "./bindings.js";
import { chatMethods } from "./chat.js";
import { deliveryMethods } from "./deliveries.js";
import { connectionOnly } from "./params.js";
import { runMethods } from "./runs.js";
import { sessionMethods } from "./sessions.js";
import { sessionSearchMethods } from "./sessions-search.js";
import { toolMethods } from "./tools.js";

/** `wire`: the answer is only serialized and sent (a WebSocket request), so it may hold `JsonTexts`. */
type Method = (ctx: GatewayContext, params: unknown, wire: boolean) => Promise<unknown>;

/** The wire's dispatch table: every method of docs/protocol.md, one file per family. */
export const methods: Readonly<Record<GatewayMethodName, Method>> = {
  ...sessionMethods,
  ...sessionSearchMethods,
  ...chatMethods,
  ...agentMethods,
  ...runMethods,
  ...deliveryMethods,
  ...bindingMethods,
  ...toolMethods,
  async "sessions.subscribe"() {
    throw connectionOnly("sessions.subscribe");
  },
  async "sessions.unsubscribe"() {
    throw connectionOnly("sessions.unsubscribe");
  },
};

/**
 * Calls `method` with unvalidated params (each method validates its own). With `wire`, the answer is for the frame
 * writer only: lists in it may be `JsonTexts` (see known-json.ts), never handed to anyone in process.
 */
export function dispatch(
  ctx: GatewayContext,
  method: GatewayMethodName,
  params: unknown,
  wire = false,
): Promise<unknown> {
  if (!Object.hasOwn(methods, method)) {
    throw new SessionsError("invalid_params", `Unknown method: ${String(method)}`, {
      field: "method",
      details: { code: "UNKNOWN_METHOD" },
    });
  }
  return methods[method](ctx, params, wire);
}
