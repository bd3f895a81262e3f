import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Duplex } from "node:stream";
import { type GatewayMethodName, type Logger, silentLogger } from "@sessions/core";
import { WebSocket, WebSocketServer } from "ws";
import type { Gateway, GatewayEvent } from "../gateway.js";
import { type A2AServerOptions, createA2ARoutes } from "./a2a/routes.js";
import { bearerCaller, createAuthenticator, type ListenAuth } from "./auth.js";
import { type Connection, createFrameWriter, newConnection } from "./connection.js";
import { type CreatedRun, EventRouter } from "./event-routing.js";
import { createFrameReader } from "./frames.js";
import { handleConnect } from "./handshake.js";
import { handleRequest } from "./requests.js";
import { RunReplay } from "./run-replay.js";
import { createStaticHandler, isSameLoopbackOrigin } from "./static-files.js";

/** Options of `gateway.listen`: address, auth, limits, and an optional static folder. */
export interface ListenOptions {
  /** Default `127.0.0.1`. */
  host?: string | undefined;
  /** Default 0 (any free port). */
  port?: number | undefined;
  /**
   * `{ token }` for one shared operator token, `{ tokens: [...] }` for several (some bound to one requester),
   * or `"none"` (only allowed on loopback hosts). Default: `"none"` on loopback, required elsewhere.
   */
  auth?: ListenAuth | undefined;
  /** Interval of `tick` events (default 30,000 ms). */
  tickIntervalMs?: number | undefined;
  /** Largest frame after `connect` (default 1 MiB); larger frames get `PAYLOAD_TOO_LARGE`. */
  maxPayload?: number | undefined;
  /** A connection whose unsent output exceeds this is dropped (default 8 MiB). */
  maxBufferedBytes?: number | undefined;
  /** Requests one connection may have in flight (default 4,096); more get a retryable `UNAVAILABLE`. */
  maxInFlight?: number | undefined;
  /** A response larger than this is replaced by a `PAYLOAD_TOO_LARGE` error asking for a smaller page (16 MiB). */
  maxResponseBytes?: number | undefined;
  /** A socket that has not completed `connect` after this long is closed (default 10,000 ms). */
  connectTimeoutMs?: number | undefined;
  /**
   * Browser origins allowed to connect. Without a token (`auth: "none"`) requests carrying an `Origin` header are
   * refused unless listed, so a web page cannot drive a local gateway.
   */
  allowOrigins?: readonly string[] | undefined;
  /**
   * Plain HTTP on the same port. `static`: a folder served at `/` (GET/HEAD; `index.html` for paths without an
   * extension), e.g. `consoleAssetsDir()` from `@sessions/console`. A page served from it on a loopback address may
   * open the WebSocket without a token (its `Origin` is this server); other origins stay refused.
   */
  http?: { static?: string | undefined } | undefined;
  /**
   * Serve the gateway's agents over A2A on the same port (`true`, or which agents and the public URL): cards at
   * `/a2a/<agentId>/.well-known/agent-card.json`, JSON-RPC at `POST /a2a/<agentId>`, authenticated by `auth`'s
   * tokens as bearer tokens. See docs/a2a.md.
   */
  a2a?: boolean | A2AServerOptions | undefined;
  logger?: Logger | undefined;
}

/** A listening WebSocket server, from `gateway.listen`. */
export interface GatewayServer {
  readonly url: string;
  readonly host: string;
  readonly port: number;
  /** Open connections right now. */
  connections(): number;
  /** Refuses new connections; existing ones keep working (the first step of a graceful stop). */
  stopAccepting(): void;
  /** Stops accepting, tells every client `shutdown`, closes their sockets. */
  close(options?: { reason?: string | undefined; restartExpectedMs?: number | undefined }): Promise<void>;
}

/** What the gateway tells its servers beyond public events: each run as it is recorded, before it can emit. */
export interface ServerInternals {
  watchRuns(listener: (run: CreatedRun) => void): () => void;
  /** `gateway.call` for an answer that is only sent (it may hold `JsonTexts`: see known-json.ts). */
  callForWire(method: GatewayMethodName, params: unknown): Promise<unknown>;
}

const routers = new WeakMap<Gateway, Set<EventRouter<Connection>>>();

/** The routing entries of a gateway's open servers (tests: back to zero once runs end and connections close). */
export function interestSize(gateway: Gateway): ReturnType<EventRouter<Connection>["size"]> {
  const total = { live: 0, sessions: 0, all: 0, ended: 0, expected: 0 };
  for (const router of routers.get(gateway) ?? []) {
    for (const [name, n] of Object.entries(router.size())) total[name as keyof typeof total] += n;
  }
  return total;
}

/** Serves a gateway over WebSocket, speaking docs/protocol.md. */
export async function listenGateway(
  gateway: Gateway,
  options: ListenOptions = {},
  internals?: ServerInternals,
): Promise<GatewayServer> {
  const host = options.host ?? "127.0.0.1";
  const logger = (options.logger ?? silentLogger).child("server");
  const tickIntervalMs = options.tickIntervalMs ?? 30_000;
  const maxPayload = options.maxPayload ?? 1024 * 1024;
  const maxBufferedBytes = options.maxBufferedBytes ?? 8 * 1024 * 1024;
  const connectTimeoutMs = options.connectTimeoutMs ?? 10_000;
  const allowOrigins = new Set(options.allowOrigins ?? []);
  const authenticate = createAuthenticator(host, options.auth);
  const serveStatic =
    options.http?.static === undefined ? undefined : createStaticHandler(options.http.static);
  const open = options.auth === "none" || options.auth === undefined;
  await gateway.ready;

  const connections = new Map<string, Connection>();
  const router = new EventRouter<Connection>();
  const out = createFrameWriter({
    logger,
    maxBufferedBytes,
    maxResponseBytes: options.maxResponseBytes ?? 16 * 1024 * 1024,
  });
  const handshake = {
    config: gateway.config,
    authenticate,
    out,
    policy: { maxPayload, maxBufferedBytes, tickIntervalMs },
  };
  const replay = new RunReplay();
  const requests = {
    gateway,
    call:
      internals?.callForWire ??
      ((method: GatewayMethodName, params: unknown) => gateway.call(method, params)),
    out,
    router,
    replay,
    logger,
  };
  const onMessage = createFrameReader(
    { maxPayload, maxInFlight: options.maxInFlight ?? 4096 },
    {
      out,
      logger,
      connect: (conn, id, params) => handleConnect(handshake, conn, id, params),
      request: (conn, id, method, params) => handleRequest(requests, conn, id, method, params),
    },
  );
  let closing = false;
  let closed = false;

  const unwatchRuns = internals?.watchRuns((run) => router.runCreated(run));
  const unsubscribe = gateway.subscribe((event: GatewayEvent) => {
    replay.record(event);
    const recipients = router.recipients(event);
    if (recipients.length === 0) return;
    if (event.type === "sessions.changed") {
      out.fanOut(recipients, "sessions.changed", { key: event.key, reason: event.reason });
    } else if (event.type === "delivery") {
      out.fanOut(recipients, "delivery", event.record);
    } else {
      const { type, ...payload } = event;
      out.fanOut(recipients, type, payload);
    }
  });
  const own = routers.get(gateway) ?? new Set();
  routers.set(gateway, own);
  own.add(router);

  let baseUrl = "";
  const a2a =
    options.a2a === undefined || options.a2a === false
      ? undefined
      : createA2ARoutes(
          gateway,
          options.a2a === true ? {} : options.a2a,
          bearerCaller(authenticate),
          !open,
          () => baseUrl,
        );
  const http: Server = createServer((req, res) => {
    void (async () => {
      if (a2a !== undefined && (await a2a(req, res))) return;
      if (serveStatic !== undefined) return serveStatic(req, res);
      res
        .writeHead(426, { "content-type": "text/plain" })
        .end("sessions gateway: connect with a WebSocket\n");
    })().catch((error: unknown) => {
      logger.warn("http request failed", { url: req.url, error: String(error) });
      if (!res.headersSent) res.writeHead(500).end();
    });
  });
  // The hard cap sits above maxPayload so oversized frames get an error reply instead of a killed socket.
  const wss = new WebSocketServer({ noServer: true, maxPayload: Math.max(maxPayload * 4, 4 * 1024 * 1024) });
  http.on("upgrade", (req: IncomingMessage, socket, head) => {
    if (closing) {
      socket.destroy();
      return;
    }
    const origin = req.headers.origin;
    const ownPage =
      serveStatic !== undefined && origin !== undefined && isSameLoopbackOrigin(origin, req.headers.host);
    if (origin !== undefined && open && !allowOrigins.has(origin) && !ownPage) {
      socket.end("HTTP/1.1 403 Forbidden\r\nConnection: close\r\n\r\n");
      return;
    }
    // The upgrade's answer and the challenge after it leave in one write, at once.
    socket.cork();
    wss.handleUpgrade(req, socket, head, (ws) => accept(ws, socket));
    socket.uncork();
  });
  function accept(ws: WebSocket, socket: Duplex): void {
    const conn = newConnection(ws, socket);
    conn.connectTimer = setTimeout(() => {
      if (!conn.connected) conn.ws.close(1008, "connect timeout");
    }, connectTimeoutMs);
    conn.connectTimer.unref();
    connections.set(conn.id, conn);
    ws.on("message", (data, isBinary) => onMessage(conn, data, isBinary));
    ws.on("close", () => {
      if (conn.connectTimer !== undefined) clearTimeout(conn.connectTimer);
      conn.closed = true;
      router.drop(conn);
      connections.delete(conn.id);
    });
    ws.on("error", (error) => logger.debug("socket error", { connId: conn.id, error: String(error) }));
    // A nonce from the pooled UUID source: 122 random bits without a system call per connection.
    out.event(conn, "connect.challenge", { nonce: randomUUID().replaceAll("-", ""), ts: Date.now() });
    out.flush(conn);
  }

  const tick = setInterval(() => {
    for (const conn of connections.values()) if (conn.connected) out.event(conn, "tick", { ts: Date.now() });
  }, tickIntervalMs);
  tick.unref();

  await new Promise<void>((resolve, reject) => {
    http.once("error", reject);
    http.listen(options.port ?? 0, host, () => {
      http.off("error", reject);
      resolve();
    });
  }).catch((error) => {
    clearInterval(tick);
    unsubscribe();
    unwatchRuns?.();
    own.delete(router);
    throw error;
  });
  const address = http.address() as AddressInfo;
  let stopped: Promise<void> = Promise.resolve();
  function stopAccepting() {
    if (closing) return;
    closing = true;
    stopped = new Promise<void>((resolve) => http.close(() => resolve()));
  }
  const urlHost = address.family === "IPv6" ? `[${address.address}]` : address.address;
  baseUrl = `http://${urlHost}:${address.port}`;

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
      unwatchRuns?.();
      const sockets: Promise<void>[] = [];
      for (const conn of connections.values()) {
        if (conn.connected) {
          out.event(conn, "shutdown", {
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
      own.delete(router);
    },
  };
}
