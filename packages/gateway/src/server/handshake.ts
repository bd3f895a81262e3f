import {
  ConnectParamsSchema,
  defaultAgentId,
  dmScopeCapability,
  GATEWAY_CAPABILITIES,
  GATEWAY_EVENTS,
  GATEWAY_METHODS,
  type HelloOk,
  PROTOCOL_VERSION,
  type SessionsConfig,
  toStoreKey,
} from "@sessions/core";
import { type Authenticate, BOUND_METHODS, bindCaller } from "./auth.js";
import type { Connection, FrameWriter } from "./connection.js";
import { wireError } from "./wire-errors.js";

declare const __SESSIONS_VERSION__: string | undefined;
const VERSION = typeof __SESSIONS_VERSION__ === "string" ? __SESSIONS_VERSION__ : "0.0.0-dev";

export interface HandshakeDeps {
  config: SessionsConfig;
  authenticate: Authenticate;
  out: FrameWriter;
  policy: HelloOk["policy"];
}

/**
 * `hello-ok`, shaped to pass OpenClaw's `HelloOkSchema` (closed objects: nothing beyond its fields). We track no
 * presence and no health history: `presence` is empty, `health` says ok now, `stateVersion` stays at 0, and
 * `uptimeMs` is the process's uptime. Our extensions are named in `features.capabilities`, and so is
 * `session.dmScope` (`session.dmScope=<scope>`), which neither OpenClaw schema has a field for.
 */
function hello(deps: HandshakeDeps, conn: Connection, role: string): HelloOk {
  const { config } = deps;
  const agentId = defaultAgentId(config);
  const mainKey = config.session.mainKey;
  const now = Date.now();
  return {
    type: "hello-ok",
    protocol: PROTOCOL_VERSION,
    server: { version: VERSION, connId: conn.id },
    features:
      conn.boundRequester === undefined
        ? {
            methods: [...GATEWAY_METHODS],
            events: [...GATEWAY_EVENTS],
            capabilities: [...GATEWAY_CAPABILITIES, dmScopeCapability(config.session.dmScope)],
          }
        : { methods: [...BOUND_METHODS], events: ["connect.challenge", "tick", "shutdown"] },
    snapshot: {
      presence: [],
      health: { ok: true, ts: now },
      stateVersion: { presence: 0, health: 0 },
      uptimeMs: Math.round(process.uptime() * 1000),
      sessionDefaults: {
        defaultAgentId: agentId,
        mainKey,
        mainSessionKey: toStoreKey({ agentId, key: "main", mainKey }),
        scope: config.session.scope,
      },
    },
    auth: { role, scopes: conn.scopes },
    policy: deps.policy,
  };
}

/** `connect` (docs/protocol.md, handshake): protocol version, token, scopes; answers `hello-ok` or closes. */
export function handleConnect(deps: HandshakeDeps, conn: Connection, id: string, params: unknown): void {
  const { out } = deps;
  const parsed = ConnectParamsSchema.safeParse(params);
  if (!parsed.success) {
    out.error(conn, id, wireError("INVALID_REQUEST", "INVALID_PARAMS", "connect: invalid params"));
    conn.ws.close(1008, "invalid connect");
    return;
  }
  const p = parsed.data;
  if (p.minProtocol > PROTOCOL_VERSION || p.maxProtocol < PROTOCOL_VERSION) {
    out.error(
      conn,
      id,
      wireError("INVALID_REQUEST", "PROTOCOL_UNSUPPORTED", `protocol ${PROTOCOL_VERSION} only`, {
        details: { code: "PROTOCOL_UNSUPPORTED", supported: [PROTOCOL_VERSION] },
      }),
    );
    conn.ws.close(1002, "protocol unsupported");
    return;
  }
  const who = deps.authenticate(p.auth?.token);
  if (who === undefined) {
    out.error(conn, id, wireError("INVALID_REQUEST", "AUTH_TOKEN_MISMATCH", "gateway token mismatch"));
    conn.ws.close(1008, "unauthorized");
    return;
  }
  conn.connected = true;
  if (conn.connectTimer !== undefined) clearTimeout(conn.connectTimer);
  bindCaller(deps.config, conn, who, p.scopes);
  out.ok(conn, id, hello(deps, conn, p.role ?? "operator"));
  // The client waits for nothing else: hello-ok leaves now, not at the end of the turn.
  out.flush(conn);
}
