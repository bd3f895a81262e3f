import { createHash, randomBytes, randomUUID, timingSafeEqual } from "node:crypto";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import {
  ConnectParamsSchema,
  defaultAgentId,
  GATEWAY_EVENTS,
  GATEWAY_METHODS,
  type GatewayMethodName,
  type HelloOk,
  type Logger,
  METHOD_PARAMS,
  PRE_CONNECT_MAX_PAYLOAD,
  PROTOCOL_VERSION,
  RequestFrameSchema,
  SessionsError,
  silentLogger,
  toStoreKey,
  type WireError,
} from "@sessions/core";
import { type RawData, WebSocket, WebSocketServer } from "ws";
import type { Gateway, GatewayEvent } from "./gateway.js";

declare const __SESSIONS_VERSION__: string | undefined;
const VERSION = typeof __SESSIONS_VERSION__ === "string" ? __SESSIONS_VERSION__ : "0.0.0-dev";

export interface GatewayToken {
  token: string;
  /** When set, this token may only call `sessions.tools.call` as this requester session. */
  requesterKey?: string;
  /** With `requesterKey`: the tools always run sandboxed, whatever the request says. */
  sandboxed?: boolean;
  label?: string;
}

export interface ListenOptions {
  /** Default `127.0.0.1`. */
  host?: string;
  /** Default 0 (any free port). */
  port?: number;
  /**
   * `{ token }` for one shared operator token, `{ tokens: [...] }` for several (some bound to one requester),
   * or `"none"` (only allowed on loopback hosts). Default: `"none"` on loopback, required elsewhere.
   */
  auth?: { token?: string; tokens?: readonly GatewayToken[] } | "none";
  /** Interval of `tick` events (default 30,000 ms). */
  tickIntervalMs?: number;
  /** Largest frame after `connect` (default 1 MiB); larger frames get `PAYLOAD_TOO_LARGE`. */
  maxPayload?: number;
  /** A connection whose unsent output exceeds this is dropped (default 8 MiB). */
  maxBufferedBytes?: number;
  /** Requests one connection may have in flight (default 4,096); more get a retryable `UNAVAILABLE`. */
  maxInFlight?: number;
  /** A response larger than this is replaced by a `PAYLOAD_TOO_LARGE` error asking for a smaller page (16 MiB). */
  maxResponseBytes?: number;
  /** A socket that has not completed `connect` after this long is closed (default 10,000 ms). */
  connectTimeoutMs?: number;
  /**
   * Browser origins allowed to connect. Without a token (`auth: "none"`) requests carrying an `Origin` header are
   * refused unless listed, so a web page cannot drive a local gateway.
   */
  allowOrigins?: readonly string[];
  logger?: Logger;
}

export interface GatewayServer {
  readonly url: string;
  readonly host: string;
  readonly port: number;
  connections(): number;
  /** Refuses new connections; existing ones keep working (the first step of a graceful stop). */
  stopAccepting(): void;
  /** Stops accepting, tells every client `shutdown`, closes their sockets. */
  close(options?: { reason?: string; restartExpectedMs?: number }): Promise<void>;
}

interface Connection {
  id: string;
  ws: WebSocket;
  connected: boolean;
  seq: number;
  subscribed: boolean;
  boundRequester?: string;
  boundSandboxed?: boolean;
  scopes: string[];
  inFlight: number;
  invalidBeforeConnect: number;
  connectTimer?: ReturnType<typeof setTimeout>;
}

/** The scope each method needs (operator.admin implies write, write implies read). */
const METHOD_SCOPE: Readonly<Record<string, "operator.read" | "operator.write" | "operator.admin">> = {
  "sessions.list": "operator.read",
  "sessions.resolve": "operator.read",
  "chat.history": "operator.read",
  "agent.wait": "operator.read",
  "agents.list": "operator.read",
  "deliveries.get": "operator.read",
  "deliveries.list": "operator.read",
  "sessions.subscribe": "operator.read",
  "sessions.unsubscribe": "operator.read",
  "chat.send": "operator.write",
  "chat.abort": "operator.write",
  agent: "operator.write",
  "sessions.patch": "operator.write",
  "sessions.tools.call": "operator.write",
  "sessions.delete": "operator.admin",
};

function hasScope(scopes: readonly string[], needed: string): boolean {
  if (scopes.includes("operator.admin")) return true;
  if (needed === "operator.read")
    return scopes.includes("operator.read") || scopes.includes("operator.write");
  return scopes.includes(needed);
}

/** The request id of a frame too large to parse, read from its first bytes (`{"type":"req","id":"…"`). */
function peekId(data: RawData): string {
  const head = (Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data as ArrayBuffer))
    .subarray(0, 512)
    .toString("utf8");
  const match = /"id"\s*:\s*"((?:[^"\\]|\\.){1,256})"/.exec(head);
  return match?.[1] ?? "";
}

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|::1|localhost)$/;

function digest(value: string): Buffer {
  return createHash("sha256").update(value, "utf8").digest();
}

/** Maps a SessionsError onto the wire's error object (PROTOCOL.md): top-level code plus `details.code`. */
export function toWireError(error: unknown): WireError {
  if (!SessionsError.isInstance(error)) {
    return { code: "UNAVAILABLE", message: "internal error", retryable: true, details: { code: "INTERNAL" } };
  }
  const specific = typeof error.details?.code === "string" ? (error.details.code as string) : undefined;
  const details: Record<string, unknown> = { ...(error.details ?? {}) };
  delete details.issues;
  if (error.field !== undefined) details.field = error.field;
  const base = (code: string, fallback: string): WireError => ({
    code,
    message: error.message,
    details: { ...details, code: specific ?? fallback },
  });
  switch (error.code) {
    case "forbidden":
      return base("FORBIDDEN", "FORBIDDEN");
    case "storage_full":
      return {
        code: "UNAVAILABLE",
        message: error.message,
        details: { ...details, code: "STORAGE_FULL" },
        retryable: true,
        retryAfterMs: error.retryAfterMs ?? 60_000,
      };
    case "unavailable":
    case "rate_limited":
    case "timeout":
    case "internal":
      return {
        ...base("UNAVAILABLE", error.code.toUpperCase()),
        retryable: true,
        ...(error.retryAfterMs === undefined ? {} : { retryAfterMs: error.retryAfterMs }),
      };
    case "not_found":
      return base("INVALID_REQUEST", "NOT_FOUND");
    case "ambiguous":
      return base("INVALID_REQUEST", "AMBIGUOUS");
    case "send_policy_denied":
      return base("INVALID_REQUEST", "SEND_POLICY_DENIED");
    case "payload_too_large":
      return base("INVALID_REQUEST", "PAYLOAD_TOO_LARGE");
    default:
      return base("INVALID_REQUEST", "INVALID_PARAMS");
  }
}

function wireError(
  code: string,
  detailsCode: string,
  message: string,
  extra: Partial<WireError> = {},
): WireError {
  return { code, message, details: { code: detailsCode }, ...extra };
}

/** Serves a gateway over WebSocket, speaking PROTOCOL.md. */
export async function listenGateway(gateway: Gateway, options: ListenOptions = {}): Promise<GatewayServer> {
  const host = options.host ?? "127.0.0.1";
  const logger = (options.logger ?? silentLogger).child("server");
  const tickIntervalMs = options.tickIntervalMs ?? 30_000;
  const maxPayload = options.maxPayload ?? 1024 * 1024;
  const maxBufferedBytes = options.maxBufferedBytes ?? 8 * 1024 * 1024;
  const maxInFlight = options.maxInFlight ?? 4096;
  const maxResponseBytes = options.maxResponseBytes ?? 16 * 1024 * 1024;
  const connectTimeoutMs = options.connectTimeoutMs ?? 10_000;
  const allowOrigins = new Set(options.allowOrigins ?? []);
  const auth = options.auth ?? (LOOPBACK.test(host) ? "none" : undefined);
  if (auth === undefined) {
    throw new SessionsError("invalid_config", `listen: auth is required on non-loopback host ${host}`, {
      field: "auth",
    });
  }
  const tokens: GatewayToken[] =
    auth === "none" ? [] : [...(auth.token ? [{ token: auth.token }] : []), ...(auth.tokens ?? [])];
  if (auth !== "none" && tokens.length === 0) {
    throw new SessionsError("invalid_config", "listen: auth needs a token (or tokens)", {
      field: "auth.token",
    });
  }
  const tokenDigests = tokens.map((t) => ({ ...t, digest: digest(t.token) }));
  await gateway.ready;

  const connections = new Map<string, Connection>();
  let closing = false;
  let closed = false;

  function sendRaw(conn: Connection, text: string): void {
    if (conn.ws.readyState !== WebSocket.OPEN) return;
    if (conn.ws.bufferedAmount > maxBufferedBytes) {
      logger.warn("dropping slow consumer", { connId: conn.id, buffered: conn.ws.bufferedAmount });
      conn.ws.terminate();
      return;
    }
    conn.ws.send(text);
  }

  const send = (conn: Connection, frame: Record<string, unknown>) => sendRaw(conn, JSON.stringify(frame));

  const sendEvent = (conn: Connection, event: string, payload: unknown) =>
    send(conn, { type: "event", event, payload, seq: ++conn.seq });

  /** A broadcast serialises its payload once; only the per-connection `seq` differs between copies. */
  function broadcast(event: string, payload: unknown, include: (conn: Connection) => boolean) {
    let prefix: string | undefined;
    for (const conn of connections.values()) {
      if (!conn.connected || conn.boundRequester !== undefined || !include(conn)) continue;
      prefix ??= `{"type":"event","event":${JSON.stringify(event)},"payload":${JSON.stringify(payload ?? null)},"seq":`;
      sendRaw(conn, `${prefix}${++conn.seq}}`);
    }
  }
  function sendOk(conn: Connection, id: string, payload: unknown): void {
    const text = JSON.stringify({ type: "res", id, ok: true, payload });
    if (text.length > maxResponseBytes) {
      sendError(
        conn,
        id,
        wireError(
          "INVALID_REQUEST",
          "PAYLOAD_TOO_LARGE",
          `response of ${text.length} bytes exceeds ${maxResponseBytes}: ask for a smaller page (limit)`,
        ),
      );
      return;
    }
    sendRaw(conn, text);
  }
  const sendError = (conn: Connection, id: string, error: WireError) =>
    send(conn, { type: "res", id, ok: false, error });

  function authenticate(token: string | undefined): GatewayToken | "open" | undefined {
    if (auth === "none") return "open";
    const given = digest(token ?? "");
    let match: GatewayToken | undefined;
    // Compare against every token, constant-time each, with no early exit.
    for (const candidate of tokenDigests) {
      if (timingSafeEqual(candidate.digest, given) && token !== undefined && match === undefined)
        match = candidate;
    }
    return match;
  }

  function hello(conn: Connection, role: string): HelloOk {
    const config = gateway.config;
    const agentId = defaultAgentId(config);
    const mainKey = config.session.mainKey;
    return {
      type: "hello-ok",
      protocol: PROTOCOL_VERSION,
      server: { version: VERSION, connId: conn.id },
      features:
        conn.boundRequester === undefined
          ? { methods: [...GATEWAY_METHODS], events: [...GATEWAY_EVENTS] }
          : { methods: ["sessions.tools.call"], events: ["connect.challenge", "tick", "shutdown"] },
      snapshot: {
        sessionDefaults: {
          defaultAgentId: agentId,
          mainKey,
          mainSessionKey: toStoreKey({ agentId, key: "main", mainKey }),
          scope: config.session.scope,
        },
      },
      auth: { role, scopes: conn.scopes },
      policy: { maxPayload, maxBufferedBytes, tickIntervalMs },
    };
  }

  async function handleConnect(conn: Connection, id: string, params: unknown): Promise<void> {
    const parsed = ConnectParamsSchema.safeParse(params);
    if (!parsed.success) {
      sendError(conn, id, wireError("INVALID_REQUEST", "INVALID_PARAMS", "connect: invalid params"));
      conn.ws.close(1008, "invalid connect");
      return;
    }
    const p = parsed.data;
    if (p.minProtocol > PROTOCOL_VERSION || p.maxProtocol < PROTOCOL_VERSION) {
      sendError(
        conn,
        id,
        wireError("INVALID_REQUEST", "PROTOCOL_UNSUPPORTED", `protocol ${PROTOCOL_VERSION} only`, {
          details: { code: "PROTOCOL_UNSUPPORTED", supported: [PROTOCOL_VERSION] },
        }),
      );
      conn.ws.close(1002, "protocol unsupported");
      return;
    }
    const who = authenticate(p.auth?.token);
    if (who === undefined) {
      sendError(conn, id, wireError("INVALID_REQUEST", "AUTH_TOKEN_MISMATCH", "gateway token mismatch"));
      conn.ws.close(1008, "unauthorized");
      return;
    }
    conn.connected = true;
    if (conn.connectTimer !== undefined) clearTimeout(conn.connectTimer);
    conn.scopes = p.scopes ?? ["operator.read", "operator.write", "operator.admin"];
    if (who !== "open" && who.requesterKey !== undefined) {
      conn.boundRequester = toStoreKey({ agentId: defaultAgentId(gateway.config), key: who.requesterKey });
      conn.boundSandboxed = who.sandboxed === true;
      conn.scopes = ["sessions.tools"];
    }
    sendOk(conn, id, hello(conn, p.role ?? "operator"));
  }

  async function handleRequest(conn: Connection, id: string, method: string, params: unknown): Promise<void> {
    if (!(GATEWAY_METHODS as readonly string[]).includes(method)) {
      sendError(conn, id, wireError("INVALID_REQUEST", "UNKNOWN_METHOD", `unknown method: ${method}`));
      return;
    }
    if (conn.boundRequester !== undefined) {
      const requester = (params as { requesterKey?: unknown } | undefined)?.requesterKey;
      const scoped =
        typeof requester === "string"
          ? (() => {
              try {
                return toStoreKey({ agentId: defaultAgentId(gateway.config), key: requester });
              } catch {
                return undefined;
              }
            })()
          : undefined;
      if (method !== "sessions.tools.call" || scoped !== conn.boundRequester) {
        sendError(
          conn,
          id,
          wireError(
            "FORBIDDEN",
            "MISSING_SCOPE",
            `this token may only call sessions.tools.call as ${conn.boundRequester}`,
            {
              details: { code: "MISSING_SCOPE", missingScope: "operator.write" },
            },
          ),
        );
        return;
      }
    }
    const needed = METHOD_SCOPE[method];
    if (conn.boundRequester === undefined && needed !== undefined && !hasScope(conn.scopes, needed)) {
      sendError(
        conn,
        id,
        wireError("FORBIDDEN", "MISSING_SCOPE", `${method} needs scope ${needed}`, {
          details: { code: "MISSING_SCOPE", missingScope: needed },
        }),
      );
      return;
    }
    if (method === "sessions.subscribe" || method === "sessions.unsubscribe") {
      const checked = METHOD_PARAMS[method].safeParse(params ?? {});
      if (!checked.success) {
        sendError(conn, id, wireError("INVALID_REQUEST", "INVALID_PARAMS", `${method} takes no params`));
        return;
      }
      conn.subscribed = method === "sessions.subscribe";
      sendOk(conn, id, { ok: true, subscribed: conn.subscribed });
      return;
    }
    const forwarded =
      conn.boundSandboxed === true && params !== null && typeof params === "object"
        ? { ...(params as Record<string, unknown>), sandboxed: true }
        : params;
    try {
      const payload = await gateway.call(method as GatewayMethodName, forwarded);
      sendOk(conn, id, payload ?? {});
    } catch (error) {
      if (!SessionsError.isInstance(error)) logger.error("method failed", { method, error: String(error) });
      sendError(conn, id, toWireError(error));
    }
  }

  function onMessage(conn: Connection, data: RawData, isBinary: boolean): void {
    if (!conn.connected && conn.invalidBeforeConnect >= 3) return;
    handleFrame(conn, data, isBinary);
    // A socket that keeps sending garbage before connecting is not a client: close it.
    if (!conn.connected && conn.invalidBeforeConnect >= 3)
      conn.ws.close(1008, "invalid frames before connect");
  }

  function rejectFrame(conn: Connection, id: string, error: WireError): void {
    if (!conn.connected) conn.invalidBeforeConnect++;
    sendError(conn, id, error);
  }

  function handleFrame(conn: Connection, data: RawData, isBinary: boolean): void {
    const size = Array.isArray(data)
      ? data.reduce((n, b) => n + b.length, 0)
      : data instanceof ArrayBuffer
        ? data.byteLength
        : data.length;
    const cap = conn.connected ? maxPayload : PRE_CONNECT_MAX_PAYLOAD;
    if (size > cap) {
      sendError(
        conn,
        peekId(data),
        wireError("INVALID_REQUEST", "PAYLOAD_TOO_LARGE", `frame of ${size} bytes exceeds ${cap}`),
      );
      if (!conn.connected) conn.ws.close(1009, "pre-connect frame too large");
      return;
    }
    if (isBinary) {
      rejectFrame(conn, "", wireError("INVALID_REQUEST", "INVALID_FRAME", "binary frames are not supported"));
      return;
    }
    let json: unknown;
    try {
      json = JSON.parse(String(data));
    } catch {
      rejectFrame(conn, "", wireError("INVALID_REQUEST", "MALFORMED_FRAME", "frame is not valid JSON"));
      return;
    }
    const frame = RequestFrameSchema.safeParse(json);
    if (!frame.success) {
      const id =
        typeof (json as { id?: unknown })?.id === "string" ? ((json as { id: string }).id ?? "") : "";
      const issue = frame.error.issues[0];
      rejectFrame(
        conn,
        id,
        wireError(
          "INVALID_REQUEST",
          "INVALID_FRAME",
          `invalid frame: ${issue?.path.join(".") || "frame"}: ${issue?.message}`,
        ),
      );
      return;
    }
    const { id, method, params } = frame.data;
    if (!conn.connected) {
      if (method !== "connect") {
        sendError(
          conn,
          id,
          wireError("INVALID_REQUEST", "NOT_CONNECTED", "the first request must be connect"),
        );
        conn.ws.close(1008, "connect first");
        return;
      }
      void handleConnect(conn, id, params);
      return;
    }
    if (method === "connect") {
      sendError(conn, id, wireError("INVALID_REQUEST", "ALREADY_CONNECTED", "already connected"));
      return;
    }
    if (conn.inFlight >= maxInFlight) {
      sendError(
        conn,
        id,
        wireError("UNAVAILABLE", "TOO_MANY_REQUESTS", `more than ${maxInFlight} requests in flight`, {
          retryable: true,
          retryAfterMs: 1000,
        }),
      );
      return;
    }
    conn.inFlight++;
    void handleRequest(conn, id, method, params)
      .catch((error) => logger.error("request handler crashed", { method, error: String(error) }))
      .finally(() => {
        conn.inFlight--;
      });
  }

  const everyone = () => true;
  const unsubscribe = gateway.subscribe((event: GatewayEvent) => {
    if (event.type === "sessions.changed") {
      broadcast("sessions.changed", { key: event.key, reason: event.reason }, (conn) => conn.subscribed);
    } else if (event.type === "delivery") {
      broadcast("delivery", event.record, everyone);
    } else {
      const { type, ...payload } = event;
      broadcast(type, payload, everyone);
    }
  });

  const http: Server = createServer((_req, res) => {
    res.writeHead(426, { "content-type": "text/plain" }).end("sessions gateway: connect with a WebSocket\n");
  });
  // The hard cap sits above maxPayload so oversized frames get an error reply instead of a killed socket.
  const wss = new WebSocketServer({ noServer: true, maxPayload: Math.max(maxPayload * 4, 4 * 1024 * 1024) });
  http.on("upgrade", (req: IncomingMessage, socket, head) => {
    if (closing) {
      socket.destroy();
      return;
    }
    const origin = req.headers.origin;
    if (origin !== undefined && auth === "none" && !allowOrigins.has(origin)) {
      socket.end("HTTP/1.1 403 Forbidden\r\nConnection: close\r\n\r\n");
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => wss.emit("connection", ws, req));
  });
  wss.on("connection", (ws: WebSocket) => {
    const conn: Connection = {
      id: randomUUID(),
      ws,
      connected: false,
      seq: 0,
      subscribed: false,
      scopes: [],
      inFlight: 0,
      invalidBeforeConnect: 0,
    };
    conn.connectTimer = setTimeout(() => {
      if (!conn.connected) conn.ws.close(1008, "connect timeout");
    }, connectTimeoutMs);
    conn.connectTimer.unref();
    connections.set(conn.id, conn);
    ws.on("message", (data, isBinary) => onMessage(conn, data, isBinary));
    ws.on("close", () => {
      if (conn.connectTimer !== undefined) clearTimeout(conn.connectTimer);
      connections.delete(conn.id);
    });
    ws.on("error", (error) => logger.debug("socket error", { connId: conn.id, error: String(error) }));
    sendEvent(conn, "connect.challenge", { nonce: randomBytes(16).toString("hex"), ts: Date.now() });
  });

  const tick = setInterval(() => {
    for (const conn of connections.values()) if (conn.connected) sendEvent(conn, "tick", { ts: Date.now() });
  }, tickIntervalMs);
  tick.unref();

  await new Promise<void>((resolve, reject) => {
    http.once("error", reject);
    http.listen(options.port ?? 0, host, () => {
      http.off("error", reject);
      resolve();
    });
  });
  const address = http.address() as AddressInfo;
  let stopped: Promise<void> = Promise.resolve();
  function stopAccepting() {
    if (closing) return;
    closing = true;
    stopped = new Promise<void>((resolve) => http.close(() => resolve()));
  }
  const urlHost = address.family === "IPv6" ? `[${address.address}]` : address.address;

  return {
    url: `ws://${urlHost}:${address.port}`,
    host: address.address,
    port: address.port,
    connections: () => connections.size,
    stopAccepting,
    async close(closeOptions = {}) {
      if (closed) return;
      closed = true;
      stopAccepting();
      clearInterval(tick);
      unsubscribe();
      const sockets: Promise<void>[] = [];
      for (const conn of connections.values()) {
        if (conn.connected) {
          sendEvent(conn, "shutdown", {
            reason: closeOptions.reason ?? "gateway stopping",
            ...(closeOptions.restartExpectedMs === undefined
              ? {}
              : { restartExpectedMs: closeOptions.restartExpectedMs }),
          });
        }
        sockets.push(
          new Promise<void>((resolve) => {
            if (conn.ws.readyState === WebSocket.CLOSED) return resolve();
            const timer = setTimeout(() => {
              conn.ws.terminate();
              resolve();
            }, 1000);
            conn.ws.once("close", () => {
              clearTimeout(timer);
              resolve();
            });
            conn.ws.close(closeOptions.restartExpectedMs === undefined ? 1001 : 1012, "shutdown");
          }),
        );
      }
      await Promise.all(sockets);
      wss.close();
      http.closeAllConnections?.();
      await stopped;
    },
  };
}
