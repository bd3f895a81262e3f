import { type ConnectParams, PROTOCOL_VERSION } from "@sessions/core";
import type { GatewayClientOptions } from "./client-types.js";

/** The params of this client's `connect` request: who it is, the operator scopes it asks for, its token. */
export function connectParams(options: GatewayClientOptions): ConnectParams {
  return {
    minProtocol: PROTOCOL_VERSION,
    maxProtocol: PROTOCOL_VERSION,
    client: {
      id: options.clientId ?? "gateway-client",
      version: options.clientVersion ?? "0.0.0",
      platform: typeof process !== "undefined" && process.versions?.node ? "node" : "browser",
      mode: "backend",
      ...(options.displayName === undefined ? {} : { displayName: options.displayName }),
    },
    role: "operator",
    scopes: ["operator.read", "operator.write", "operator.admin"],
    caps: [],
    ...(options.token === undefined ? {} : { auth: { token: options.token } }),
  };
}
