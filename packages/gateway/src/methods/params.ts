import { SessionsError } from "@sessions/core";

/** `sessions.subscribe` and friends live on a WebSocket connection; in process there is `gateway.subscribe()`. */
export function connectionOnly(method: string): SessionsError {
  return new SessionsError(
    "invalid_params",
    `${method} is a WebSocket connection method; in process use gateway.subscribe()`,
    { field: "method" },
  );
}
