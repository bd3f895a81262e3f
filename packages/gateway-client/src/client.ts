import {
  type EventFrame,
  type HelloOk,
  type MethodPayload,
  silentLogger,
  utf8Length,
  type WireError,
} from "@sessions/core";
import type {
  Call,
  ClientState,
  GatewayClient,
  GatewayClientOptions,
  RequestOptions,
  WebSocketConstructor,
  WebSocketLike,
} from "./client-types.js";
import { connectParams } from "./connect-params.js";
import { clientError, fromWireError, type GatewayClientError } from "./errors.js";
import { extensionOf, requireExtension } from "./extensions.js";
import { wireMethods } from "./methods.js";
import { type RunWatchDeps, streamRun, waitRun } from "./run-watch.js";
import { Subscriptions } from "./subscriptions.js";

export type {
  ClientState,
  GatewayClient,
  GatewayClientOptions,
  GatewayGap,
  ReconnectOptions,
  RequestOptions,
  RunStreamItem,
  WebSocketConstructor,
  WebSocketLike,
} from "./client-types.js";

/** Events a client listens to because of runs and sessions: listening to any of them means a gap matters. */
const RUN_AND_SESSION_EVENTS = ["chat", "agent", "delivery", "sessions.changed", "*"];

interface Pending {
  method: string;
  frame: string;
  sent: boolean;
  resolve: (payload: unknown) => void;
  reject: (error: unknown) => void;
  timer: ReturnType<typeof setTimeout> | undefined;
  cleanup: () => void;
}

const OPEN = 1;

/** `ws`, once imported: a connect after the first does not go through the module loader again. */
let importedWebSocket: WebSocketConstructor | undefined;

async function defaultWebSocket(): Promise<WebSocketConstructor> {
  const global = (globalThis as { WebSocket?: WebSocketConstructor | undefined }).WebSocket;
  if (global !== undefined) return global;
  if (importedWebSocket !== undefined) return importedWebSocket;
  const mod = (await import("ws")) as unknown as { WebSocket: WebSocketConstructor };
  importedWebSocket = mod.WebSocket;
  return importedWebSocket;
}

/** Creates a client and starts connecting. Every method waits for the connection (and for reconnects). */
export function createGatewayClient(options: GatewayClientOptions): GatewayClient {
  let validUrl = typeof options?.url === "string" && /^wss?:\/\//.test(options.url);
  try {
    if (validUrl) new URL(options.url);
  } catch {
    validUrl = false;
  }
  if (!validUrl) {
    throw clientError("invalid_params", "createGatewayClient: url must be a ws:// or wss:// URL", {
      detailsCode: "INVALID_URL",
    });
  }
  const logger = (options.logger ?? silentLogger).child("gateway-client");
  const requestTimeoutMs = options.requestTimeoutMs ?? 30_000;
  const reconnect = options.reconnect === false ? undefined : (options.reconnect ?? {});
  const listeners = new Map<string, Set<(payload: unknown, frame: EventFrame) => void>>();
  const pending = new Map<string, Pending>();
  const readyWaiters = new Set<{ resolve: (hello: HelloOk) => void; reject: (error: unknown) => void }>();

  let state: ClientState = "connecting";
  let hello: HelloOk | undefined;
  let socket: WebSocketLike | undefined;
  let counter = 0;
  let attempt = 0;
  let lastSeq = 0;
  let lastMessageAt = Date.now();
  let watchdog: ReturnType<typeof setInterval> | undefined;
  let reconnectTimer: ReturnType<typeof setTimeout> | undefined;
  const subscriptions = new Subscriptions();
  let restoring = false;
  /** When a connection that had listeners for events dropped; reported once the next one is up. */
  let missingSince: number | undefined;
  let nextDelayOverride: number | undefined;
  let fatal: GatewayClientError | undefined;
  let handshakeTimer: ReturnType<typeof setTimeout> | undefined;
  const connectTimeoutMs = options.connectTimeoutMs ?? 10_000;

  const emit = (event: string, payload: unknown, frame: EventFrame) => {
    for (const key of [event, "*"]) {
      for (const handler of listeners.get(key) ?? []) {
        try {
          handler(payload, frame);
        } catch (error) {
          logger.warn("event handler threw", { event, error: String(error) });
        }
      }
    }
  };

  function reportGap(gap: Parameters<NonNullable<GatewayClientOptions["onGap"]>>[0]) {
    try {
      options.onGap?.(gap);
    } catch (error) {
      logger.warn("onGap threw", { error: String(error) });
    }
  }

  function listening(): boolean {
    return (
      subscriptions.active || RUN_AND_SESSION_EVENTS.some((event) => (listeners.get(event)?.size ?? 0) > 0)
    );
  }

  function setState(next: ClientState) {
    state = next;
  }

  function settleReady() {
    if (hello === undefined) return;
    for (const waiter of readyWaiters) waiter.resolve(hello);
    readyWaiters.clear();
  }

  function failReady(error: unknown) {
    for (const waiter of readyWaiters) waiter.reject(error);
    readyWaiters.clear();
  }

  function flushQueue() {
    for (const entry of pending.values()) {
      if (!entry.sent && socket?.readyState === OPEN && state === "connected") {
        socket.send(entry.frame);
        entry.sent = true;
      }
    }
  }

  function failPending(reason: string) {
    for (const [id, entry] of pending) {
      if (!entry.sent) continue;
      pending.delete(id);
      entry.cleanup();
      entry.reject(
        clientError("unavailable", `connection lost before the response to ${entry.method} (${reason})`, {
          retryable: true,
          requestSent: true,
          detailsCode: "CONNECTION_LOST",
        }),
      );
    }
  }

  function scheduleReconnect(reason: string) {
    if (state === "closed") return;
    if (reconnect === undefined || fatal !== undefined) {
      setState("closed");
      failReady(fatal ?? clientError("unavailable", `disconnected: ${reason}`, { retryable: false }));
      for (const [id, entry] of pending) {
        pending.delete(id);
        entry.cleanup();
        entry.reject(
          fatal ?? clientError("unavailable", `disconnected: ${reason}`, { requestSent: entry.sent }),
        );
      }
      return;
    }
    setState("reconnecting");
    const base = Math.min(reconnect.maxDelayMs ?? 10_000, (reconnect.initialDelayMs ?? 250) * 2 ** attempt);
    const jitter = reconnect.jitter ?? 0.3;
    const delay = nextDelayOverride ?? Math.round(base * (1 - jitter + Math.random() * 2 * jitter));
    nextDelayOverride = undefined;
    attempt++;
    logger.debug("reconnecting", { delay, reason });
    reconnectTimer = setTimeout(() => {
      reconnectTimer = undefined;
      void open();
    }, delay);
  }

  function handleFrame(text: string) {
    let frame: Record<string, unknown>;
    try {
      frame = JSON.parse(text) as Record<string, unknown>;
    } catch {
      logger.warn("ignoring a malformed frame from the gateway");
      return;
    }
    if (frame.type === "event") {
      const event = frame as unknown as EventFrame;
      if (typeof event.seq === "number") {
        if (lastSeq !== 0 && event.seq !== lastSeq + 1)
          reportGap({ reason: "seq", expected: lastSeq + 1, received: event.seq });
        lastSeq = event.seq;
      }
      if (event.event === "connect.challenge") {
        sendConnect();
        return;
      }
      if (event.event === "shutdown") {
        const restart = (event.payload as { restartExpectedMs?: number | undefined } | undefined)
          ?.restartExpectedMs;
        if (typeof restart === "number") nextDelayOverride = restart;
      }
      emit(event.event, event.payload, event);
      return;
    }
    if (frame.type !== "res" || typeof frame.id !== "string") return;
    const entry = pending.get(frame.id);
    if (entry === undefined) return;
    pending.delete(frame.id);
    entry.cleanup();
    if (frame.ok === true) entry.resolve(frame.payload);
    else entry.reject(fromWireError(frame.error as WireError));
  }

  function sendConnect() {
    const id = `connect-${++counter}`;
    const params = connectParams(options);
    const entry: Pending = {
      method: "connect",
      frame: "",
      sent: true,
      timer: undefined,
      cleanup: () => {},
      resolve: (payload) => {
        const greeting = payload as HelloOk;
        if (handshakeTimer !== undefined) clearTimeout(handshakeTimer);
        hello = greeting;
        attempt = 0;
        setState("connected");
        startWatchdog(greeting.policy?.tickIntervalMs ?? 30_000);
        flushQueue();
        // Subscriptions are restored before ready() resolves, so nothing after a reconnect is missed.
        const requests = subscriptions.restore();
        restoring = requests.length > 0;
        const restored = Promise.all(
          requests.map((params) => requestRaw("sessions.subscribe", params, {}).catch(() => undefined)),
        );
        void restored.then(() => {
          restoring = false;
          if (hello !== greeting) return;
          if (missingSince !== undefined) {
            const downMs = Date.now() - missingSince;
            missingSince = undefined;
            reportGap({ reason: "reconnect", downMs });
          }
          settleReady();
        });
      },
      reject: (error) => {
        const err = error as GatewayClientError;
        if (err.wireCode === "INVALID_REQUEST" || err.wireCode === "FORBIDDEN") fatal = err;
        if (typeof err.retryAfterMs === "number") nextDelayOverride = err.retryAfterMs;
        failReady(err);
      },
    };
    pending.set(id, entry);
    socket?.send(JSON.stringify({ type: "req", id, method: "connect", params }));
  }

  function startWatchdog(tickIntervalMs: number) {
    if (watchdog !== undefined) clearInterval(watchdog);
    lastMessageAt = Date.now();
    watchdog = setInterval(
      () => {
        if (Date.now() - lastMessageAt > 2 * tickIntervalMs && socket !== undefined) {
          logger.warn("no tick for two intervals; reconnecting");
          abandon(socket, 4000, "tick timeout");
        }
      },
      Math.max(50, Math.floor(tickIntervalMs / 2)),
    );
    (watchdog as { unref?: (() => void) | undefined }).unref?.();
  }

  async function open(): Promise<void> {
    if (state === "closed") return;
    let WS: WebSocketConstructor;
    try {
      WS = options.WebSocket ?? (await defaultWebSocket());
    } catch (error) {
      fatal = clientError(
        "unavailable",
        "no WebSocket implementation: install `ws` or pass options.WebSocket",
        {
          cause: error,
        },
      );
      scheduleReconnect("no WebSocket");
      return;
    }
    if ((state as ClientState) === "closed") return;
    lastSeq = 0;
    hello = undefined;
    let ws: WebSocketLike;
    try {
      ws = new WS(options.url);
    } catch (error) {
      fatal = clientError("invalid_params", `cannot open ${options.url}: ${(error as Error).message}`, {
        cause: error,
      });
      scheduleReconnect("invalid url");
      return;
    }
    socket = ws;
    // A server that accepts the socket but never completes the handshake must not leave ready() hanging.
    if (handshakeTimer !== undefined) clearTimeout(handshakeTimer);
    handshakeTimer = setTimeout(() => {
      if (socket === ws && hello === undefined) abandon(ws, 4001, "handshake timeout");
    }, connectTimeoutMs);
    (handshakeTimer as { unref?: (() => void) | undefined }).unref?.();
    ws.onmessage = (event) => {
      if (socket !== ws) return;
      lastMessageAt = Date.now();
      handleFrame(typeof event.data === "string" ? event.data : String(event.data));
    };
    ws.onerror = () => {};
    ws.onclose = (event) => onSocketClosed(ws, event.code, event.reason);
  }

  /** Closes a socket that may not answer (a silent peer) and handles the close now, with our own code. */
  function abandon(ws: WebSocketLike, code: number, reason: string) {
    ws.onmessage = null;
    ws.onclose = null;
    try {
      ws.close(code, reason);
    } catch {
      // The socket is already gone; the close is handled below either way.
    }
    onSocketClosed(ws, code, reason);
  }

  function onSocketClosed(ws: WebSocketLike, code: number, closeReason: string) {
    {
      if (socket !== ws) return;
      const event = { code, reason: closeReason };
      socket = undefined;
      if (watchdog !== undefined) clearInterval(watchdog);
      watchdog = undefined;
      const reason = `closed ${event.code}${event.reason ? ` ${event.reason}` : ""}`;
      const connectEntry = [...pending.entries()].find(([, p]) => p.method === "connect");
      if (connectEntry !== undefined) pending.delete(connectEntry[0]);
      if (event.code === 1008 && fatal === undefined) {
        fatal = clientError("forbidden", `gateway refused the connection (${reason})`, {
          detailsCode: "REFUSED",
        });
      }
      // What happened while no connection was up is unknown to whoever listens to events: say so after it is back.
      if (hello !== undefined && missingSince === undefined && listening()) missingSince = Date.now();
      hello = undefined;
      failPending(reason);
      emit(
        "disconnected",
        { code: event.code, reason: event.reason },
        { type: "event", event: "disconnected" },
      );
      scheduleReconnect(reason);
    }
  }

  function requestRaw(method: string, params: unknown, opts: RequestOptions): Promise<unknown> {
    if (state === "closed") {
      return Promise.reject(
        fatal ?? clientError("unavailable", "the client is closed", { requestSent: false }),
      );
    }
    const id = String(++counter);
    const frame = JSON.stringify({ type: "req", id, method, params: params ?? {} });
    const limit = hello?.policy?.maxPayload;
    if (typeof limit === "number" && utf8Length(frame) > limit) {
      return Promise.reject(
        clientError(
          "payload_too_large",
          `${method} request of ${utf8Length(frame)} bytes exceeds the gateway's ${limit}`,
          {
            requestSent: false,
            detailsCode: "PAYLOAD_TOO_LARGE",
          },
        ),
      );
    }
    return new Promise((resolve, reject) => {
      const timeoutMs = opts.timeoutMs ?? requestTimeoutMs;
      const onAbort = () => {
        pending.delete(id);
        entry.cleanup();
        reject(clientError("aborted", `${method} aborted`, { requestSent: entry.sent }));
      };
      const entry: Pending = {
        method,
        frame,
        sent: false,
        resolve,
        reject,
        timer: setTimeout(() => {
          pending.delete(id);
          entry.cleanup();
          reject(
            clientError("timeout", `${method} timed out after ${timeoutMs} ms`, {
              retryable: true,
              requestSent: entry.sent,
            }),
          );
        }, timeoutMs),
        cleanup: () => {
          if (entry.timer !== undefined) clearTimeout(entry.timer);
          opts.signal?.removeEventListener("abort", onAbort);
        },
      };
      if (opts.signal?.aborted) return onAbort();
      opts.signal?.addEventListener("abort", onAbort, { once: true });
      pending.set(id, entry);
      if (state === "connected" && socket?.readyState === OPEN) {
        socket.send(frame);
        entry.sent = true;
      }
    });
  }

  // Our extensions (`agent { spawnedBy }`) go only to a gateway whose hello-ok announces them.
  const request: Call = (method, params, opts = {}) => {
    const send = () => requestRaw(method, params ?? {}, opts) as Promise<MethodPayload<typeof method>>;
    const extension = extensionOf(method, params);
    if (extension === undefined) return send();
    return client.ready().then((greeting) => {
      requireExtension(greeting, extension);
      return send();
    });
  };

  const watch: RunWatchDeps = {
    request,
    state: () => state,
    ready: () => client.ready(),
    on: (event, handler) => client.on(event, handler),
  };

  const client: GatewayClient = {
    get state() {
      return state;
    },
    get hello() {
      return hello;
    },
    ready() {
      if (state === "connected" && hello !== undefined && !restoring) return Promise.resolve(hello);
      if (state === "closed")
        return Promise.reject(fatal ?? clientError("unavailable", "the client is closed"));
      return new Promise((resolve, reject) => readyWaiters.add({ resolve, reject }));
    },
    request,
    ...wireMethods(request, subscriptions),
    waitRun: (runId, opts) => waitRun(watch, runId, opts),
    streamRun: (runId) => streamRun(watch, runId),
    on(event, handler) {
      let set = listeners.get(event);
      if (set === undefined) {
        set = new Set();
        listeners.set(event, set);
      }
      set.add(handler);
      return () => set.delete(handler);
    },
    async close() {
      if (state === "closed") return;
      setState("closed");
      if (reconnectTimer !== undefined) clearTimeout(reconnectTimer);
      if (watchdog !== undefined) clearInterval(watchdog);
      const closing = socket;
      socket = undefined;
      for (const [id, entry] of pending) {
        pending.delete(id);
        entry.cleanup();
        entry.reject(clientError("unavailable", "the client was closed", { requestSent: entry.sent }));
      }
      // An error (and its stack) only for someone still waiting on ready().
      if (readyWaiters.size > 0) failReady(clientError("unavailable", "the client was closed"));
      if (handshakeTimer !== undefined) clearTimeout(handshakeTimer);
      emit("disconnected", { code: 1000, reason: "client closed" }, { type: "event", event: "disconnected" });
      closing?.close(1000, "client closed");
    },
  };

  void open();
  return client;
}
