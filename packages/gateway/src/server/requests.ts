import { GATEWAY_METHODS, type GatewayMethodName, type Logger, SessionsError } from "@sessions/core";
import type { Gateway } from "../gateway.js";
import { checkAccess } from "./auth.js";
import type { Connection, FrameWriter } from "./connection.js";
import type { EventRouter } from "./event-routing.js";
import type { RunReplay } from "./run-replay.js";
import { changeSubscription } from "./subscriptions.js";
import { toWireError, wireError } from "./wire-errors.js";

export interface RequestDeps {
  gateway: Gateway;
  /** Calls a method for an answer that is only sent (see `ServerInternals.callForWire`). */
  call(method: GatewayMethodName, params: unknown): Promise<unknown>;
  out: FrameWriter;
  router: EventRouter<Connection>;
  replay: RunReplay;
  logger: Logger;
}

/** The idempotency key of a call that may start a run (`chat.send`, `agent`), as the method will read it. */
function startKey(method: string, params: unknown): string | undefined {
  if (method !== "chat.send" && method !== "agent") return undefined;
  const key = (params as { idempotencyKey?: unknown } | null | undefined)?.idempotencyKey;
  return typeof key === "string" && key.trim() !== "" ? key.trim() : undefined;
}

/** One request after `connect`: access checks, subscriptions on the connection, everything else to the gateway. */
export async function handleRequest(
  deps: RequestDeps,
  conn: Connection,
  id: string,
  method: string,
  params: unknown,
): Promise<void> {
  const { gateway, out, router, replay } = deps;
  if (!(GATEWAY_METHODS as readonly string[]).includes(method)) {
    out.error(conn, id, wireError("INVALID_REQUEST", "UNKNOWN_METHOD", `unknown method: ${method}`));
    return;
  }
  const denied = checkAccess(gateway.config, conn, method, params);
  if (denied !== undefined) return out.error(conn, id, denied);
  if (method === "sessions.subscribe" || method === "sessions.unsubscribe") {
    const outcome = changeSubscription(
      { config: gateway.config, router, replay },
      conn,
      method,
      params ?? {},
    );
    if (outcome.ok) out.ok(conn, id, outcome.payload);
    else out.error(conn, id, outcome.error);
    return;
  }
  const forwarded =
    conn.boundSandboxed === true && params !== null && typeof params === "object"
      ? { ...(params as Record<string, unknown>), sandboxed: true }
      : params;
  // The starter hears its run from the first event: it waits on the key before the run can exist.
  const key = startKey(method, params);
  const stopExpecting = key === undefined ? undefined : router.expectRun(conn, key);
  try {
    const payload = await deps.call(method as GatewayMethodName, forwarded);
    // A repeated key named a run that already existed: its caller hears the rest of it.
    const runId = (payload as { runId?: unknown } | undefined)?.runId;
    if (key !== undefined && typeof runId === "string" && !conn.closed) router.followRun(conn, runId);
    out.ok(conn, id, payload ?? {});
  } catch (error) {
    if (!SessionsError.isInstance(error))
      deps.logger.error("method failed", { method, error: String(error) });
    out.error(conn, id, toWireError(error));
  } finally {
    stopExpecting?.();
  }
}
