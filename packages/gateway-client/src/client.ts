import {
  type AgentEventPayload,
  type AgentWaitPayload,
  type ChatEventPayload,
  type EventFrame,
  type GatewayMethodName,
  type HelloOk,
  type Logger,
  type MethodParams,
  type MethodPayload,
  PROTOCOL_VERSION,
  silentLogger,
  utf8Length,
  type WireError,
} from "@sessions/core";
import { clientError, fromWireError, GatewayClientError } from "./errors.js";

/** The subset of the WHATWG WebSocket the client uses (browsers' global, Node 22's global, or `ws`). */
export interface WebSocketLike {
  readonly readyState: number;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  onopen: ((event: unknown) => void) | null;
  onmessage: ((event: { data: unknown }) => void) | null;
  onclose: ((event: { code: number; reason: string }) => void) | null;
  onerror: ((event: unknown) => void) | null;
}
export type WebSocketConstructor = new (url: string) => WebSocketLike;

export interface ReconnectOptions {
  /** First delay (default 250 ms); doubles per attempt. */
  initialDelayMs?: number;
  /** Ceiling (default 10,000 ms). */
  maxDelayMs?: number;
  /** ±fraction of random jitter (default 0.3). */
  jitter?: number;
}

export interface GatewayClientOptions {
  url: string;
  token?: string;
  /** Default `gateway-client` (with mode `backend`): the identity an OpenClaw gateway trusts on loopback. */
  clientId?: string;
  clientVersion?: string;
  displayName?: string;
  /** Default: the global WebSocket, else the `ws` package. */
  WebSocket?: WebSocketConstructor;
  /** Client-side timeout of a request (default 30,000 ms; `agent.wait` adds its own wait). */
  requestTimeoutMs?: number;
  /** Time allowed for the challenge and `hello-ok` after the socket opens (default 10,000 ms). */
  connectTimeoutMs?: number;
  /** `false` disables reconnecting. */
  reconnect?: ReconnectOptions | false;
  /** Called when an event arrives with a `seq` that skipped numbers (state may be stale: refresh it). */
  onGap?: (gap: { expected: number; received: number }) => void;
  logger?: Logger;
}

export type ClientState = "connecting" | "connected" | "reconnecting" | "closed";

export type RunStreamItem =
  | { type: "chat"; payload: ChatEventPayload }
  | { type: "agent"; payload: AgentEventPayload }
  /** The run had already ended when the stream started (its outcome, from `agent.wait`). */
  | { type: "done"; result: AgentWaitPayload }
  /** The run is unknown (or the gateway refused to say). */
  | { type: "error"; error: GatewayClientError }
  | { type: "disconnected"; reason: string };

type Call = <M extends GatewayMethodName>(
  method: M,
  params?: MethodParams<M>,
  options?: RequestOptions,
) => Promise<MethodPayload<M>>;

export interface RequestOptions {
  timeoutMs?: number;
  signal?: AbortSignal;
}

export interface GatewayClient {
  readonly state: ClientState;
  readonly hello: HelloOk | undefined;
  /** Resolves once connected (again); rejects if the client is closed or authentication fails. */
  ready(): Promise<HelloOk>;
  request: Call;
  sessions: {
    list(
      params?: MethodParams<"sessions.list">,
      options?: RequestOptions,
    ): Promise<MethodPayload<"sessions.list">>;
    resolve(
      params: MethodParams<"sessions.resolve">,
      options?: RequestOptions,
    ): Promise<MethodPayload<"sessions.resolve">>;
    patch(
      params: MethodParams<"sessions.patch">,
      options?: RequestOptions,
    ): Promise<MethodPayload<"sessions.patch">>;
    delete(
      params: MethodParams<"sessions.delete">,
      options?: RequestOptions,
    ): Promise<MethodPayload<"sessions.delete">>;
    /** Subscribes to `sessions.changed` (kept across reconnects). */
    subscribe(): Promise<void>;
    unsubscribe(): Promise<void>;
  };
  chat: {
    history(
      params: MethodParams<"chat.history">,
      options?: RequestOptions,
    ): Promise<MethodPayload<"chat.history">>;
    send(params: MethodParams<"chat.send">, options?: RequestOptions): Promise<MethodPayload<"chat.send">>;
    abort(params: MethodParams<"chat.abort">, options?: RequestOptions): Promise<MethodPayload<"chat.abort">>;
  };
  agent(params: MethodParams<"agent">, options?: RequestOptions): Promise<MethodPayload<"agent">>;
  agentWait(
    params: MethodParams<"agent.wait">,
    options?: RequestOptions,
  ): Promise<MethodPayload<"agent.wait">>;
  agents: { list(options?: RequestOptions): Promise<MethodPayload<"agents.list">> };
  deliveries: {
    get(
      params: MethodParams<"deliveries.get">,
      options?: RequestOptions,
    ): Promise<MethodPayload<"deliveries.get">>;
    list(
      params?: MethodParams<"deliveries.list">,
      options?: RequestOptions,
    ): Promise<MethodPayload<"deliveries.list">>;
  };
  /** Executes a session tool on the gateway as `requesterKey`. */
  callTool(
    params: MethodParams<"sessions.tools.call">,
    options?: RequestOptions,
  ): Promise<MethodPayload<"sessions.tools.call">>;
  /**
   * Waits for a run to end, across reconnects and gateway restarts (the gateway keeps outcomes). Resolves with
   * `status: "timeout"` (no `endedAt`) only when `timeoutMs` runs out; never cancels the run.
   */
  waitRun(runId: string, options?: { timeoutMs?: number; signal?: AbortSignal }): Promise<AgentWaitPayload>;
  /** The run's `chat`/`agent` events as they arrive; ends at the final event, or with `disconnected`. */
  streamRun(runId: string): AsyncIterableIterator<RunStreamItem>;
  /** Listens to an event (`chat`, `agent`, `sessions.changed`, `delivery`, `tick`, `shutdown`, or `*`). */
  on(event: string, handler: (payload: unknown, frame: EventFrame) => void): () => void;
  close(): Promise<void>;
}

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

async function defaultWebSocket(): Promise<WebSocketConstructor> {
  const global = (globalThis as { WebSocket?: WebSocketConstructor }).WebSocket;
  if (global !== undefined) return global;
  const mod = (await import("ws")) as unknown as { WebSocket: WebSocketConstructor };
  return mod.WebSocket;
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
  let subscribed = false;
  let restoring = false;
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
          options.onGap?.({ expected: lastSeq + 1, received: event.seq });
        lastSeq = event.seq;
      }
      if (event.event === "connect.challenge") {
        sendConnect();
        return;
      }
      if (event.event === "shutdown") {
        const restart = (event.payload as { restartExpectedMs?: number } | undefined)?.restartExpectedMs;
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
    const params = {
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
        restoring = subscribed;
        const restored = subscribed
          ? requestRaw("sessions.subscribe", {}, {}).catch(() => undefined)
          : Promise.resolve();
        void restored.then(() => {
          restoring = false;
          if (hello === greeting) settleReady();
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
    (watchdog as { unref?: () => void }).unref?.();
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
    (handshakeTimer as { unref?: () => void }).unref?.();
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

  const request: Call = (method, params, opts = {}) =>
    requestRaw(method, params ?? {}, opts) as Promise<MethodPayload<typeof method>>;

  /** `ready()`, but giving up after `ms` or when `signal` aborts (a wait must not outlive its own deadline). */
  function readyWithin(ms: number, signal?: AbortSignal): Promise<HelloOk> {
    return new Promise((resolve, reject) => {
      const timer = Number.isFinite(ms)
        ? setTimeout(() => {
            signal?.removeEventListener("abort", onAbort);
            reject(clientError("timeout", "not connected in time", { retryable: true, requestSent: false }));
          }, ms)
        : undefined;
      const onAbort = () => {
        if (timer !== undefined) clearTimeout(timer);
        reject(clientError("aborted", "waitRun aborted", { requestSent: false }));
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      client.ready().then(
        (h) => {
          if (timer !== undefined) clearTimeout(timer);
          signal?.removeEventListener("abort", onAbort);
          resolve(h);
        },
        (error) => {
          if (timer !== undefined) clearTimeout(timer);
          signal?.removeEventListener("abort", onAbort);
          reject(error);
        },
      );
    });
  }

  async function waitRun(runId: string, opts: { timeoutMs?: number; signal?: AbortSignal } = {}) {
    const deadline = opts.timeoutMs === undefined ? Number.POSITIVE_INFINITY : Date.now() + opts.timeoutMs;
    for (;;) {
      if (opts.signal?.aborted) throw clientError("aborted", "waitRun aborted", { requestSent: false });
      const remaining = deadline - Date.now();
      if (remaining <= 0) return { runId, status: "timeout" as const };
      const chunk = Math.min(30_000, remaining);
      try {
        if (state !== "connected") await readyWithin(remaining, opts.signal);
        const result = await request(
          "agent.wait",
          { runId, timeoutMs: chunk },
          { timeoutMs: chunk + 10_000, ...(opts.signal ? { signal: opts.signal } : {}) },
        );
        if (result.status !== "timeout" || result.endedAt !== undefined) return result;
      } catch (error) {
        if (error instanceof GatewayClientError && error.code === "aborted") throw error;
        if (
          error instanceof GatewayClientError &&
          error.detailsCode === "TIMEOUT" &&
          deadline - Date.now() <= 0
        ) {
          return { runId, status: "timeout" as const };
        }
        const retry = error instanceof GatewayClientError && error.retryable;
        if (!retry || state === "closed") throw error;
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  }

  function streamRun(runId: string): AsyncIterableIterator<RunStreamItem> {
    const queue: RunStreamItem[] = [];
    let done = false;
    let wake: (() => void) | undefined;
    const push = (item: RunStreamItem, end = false) => {
      if (done) return;
      queue.push(item);
      if (end) finish();
      wake?.();
    };
    const offChat = client.on("chat", (payload) => {
      const chat = payload as ChatEventPayload;
      if (chat.runId !== runId) return;
      push({ type: "chat", payload: chat }, chat.state !== "delta");
    });
    const offAgent = client.on("agent", (payload) => {
      const agent = payload as AgentEventPayload;
      if (agent.runId === runId) push({ type: "agent", payload: agent });
    });
    const offClose = client.on("disconnected", (payload) => {
      push(
        { type: "disconnected", reason: (payload as { reason?: string }).reason ?? "connection closed" },
        true,
      );
    });
    function finish() {
      done = true;
      offChat();
      offAgent();
      offClose();
    }
    // A run that already ended (or never existed) would otherwise leave the stream waiting forever.
    request("agent.wait", { runId, timeoutMs: 0 }, { timeoutMs: 10_000 }).then(
      (result) => {
        if (result.status !== "timeout" || result.endedAt !== undefined) push({ type: "done", result }, true);
      },
      (error: unknown) => {
        if (error instanceof GatewayClientError && !error.retryable) push({ type: "error", error }, true);
      },
    );
    const iterator: AsyncIterableIterator<RunStreamItem> = {
      [Symbol.asyncIterator]() {
        return iterator;
      },
      async next() {
        while (queue.length === 0 && !done) await new Promise<void>((r) => (wake = r));
        const item = queue.shift();
        if (item !== undefined) return { value: item, done: false };
        return { value: undefined, done: true };
      },
      async return() {
        finish();
        queue.length = 0;
        wake?.();
        return { value: undefined, done: true };
      },
    };
    return iterator;
  }

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
    sessions: {
      list: (params, opts) => request("sessions.list", params ?? {}, opts),
      resolve: (params, opts) => request("sessions.resolve", params, opts),
      patch: (params, opts) => request("sessions.patch", params, opts),
      delete: (params, opts) => request("sessions.delete", params, opts),
      async subscribe() {
        await request("sessions.subscribe", {});
        subscribed = true;
      },
      async unsubscribe() {
        subscribed = false;
        await request("sessions.unsubscribe", {});
      },
    },
    chat: {
      history: (params, opts) => request("chat.history", params, opts),
      send: (params, opts) => request("chat.send", params, opts),
      abort: (params, opts) => request("chat.abort", params, opts),
    },
    agent: (params, opts) => request("agent", params, opts),
    agentWait: (params, opts) =>
      request("agent.wait", params, { timeoutMs: (params.timeoutMs ?? 30_000) + 10_000, ...opts }),
    agents: { list: (opts) => request("agents.list", {}, opts) },
    deliveries: {
      get: (params, opts) => request("deliveries.get", params, opts),
      list: (params, opts) => request("deliveries.list", params ?? {}, opts),
    },
    callTool: (params, opts) => request("sessions.tools.call", params, { timeoutMs: 15 * 60_000, ...opts }),
    waitRun,
    streamRun,
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
      failReady(clientError("unavailable", "the client was closed"));
      if (handshakeTimer !== undefined) clearTimeout(handshakeTimer);
      emit("disconnected", { code: 1000, reason: "client closed" }, { type: "event", event: "disconnected" });
      closing?.close(1000, "client closed");
    },
  };

  void open();
  return client;
}
