import type {
  AgentEventPayload,
  AgentWaitPayload,
  ChatEventPayload,
  EventFrame,
  GatewayMethodName,
  HelloOk,
  Logger,
  MethodParams,
  MethodPayload,
} from "@sessions/core";
import type { GatewayClientError } from "./errors.js";

/** The public shape of a client: its options, the object `createGatewayClient` returns, its stream items. */

/** The subset of the WHATWG WebSocket the client uses (browsers' global, Node 22's global, or `ws`). */
export interface WebSocketLike {
  readonly readyState: number;
  /** Sends one text frame. */
  send(data: string): void;
  /** Closes the socket with an optional code and reason. */
  close(code?: number, reason?: string): void;
  /** Called once the socket is open. */
  onopen: ((event: unknown) => void) | null;
  /** Called with each frame received. */
  onmessage: ((event: { data: unknown }) => void) | null;
  /** Called once the socket is closed, with its close code. */
  onclose: ((event: { code: number; reason: string }) => void) | null;
  /** Called on a socket error (a close follows). */
  onerror: ((event: unknown) => void) | null;
}
/** A WebSocket class: `new (url) => WebSocketLike`. */
export type WebSocketConstructor = new (url: string) => WebSocketLike;

/** How the client backs off between reconnect attempts. */
export interface ReconnectOptions {
  /** First delay (default 250 ms); doubles per attempt. */
  initialDelayMs?: number | undefined;
  /** Ceiling (default 10,000 ms). */
  maxDelayMs?: number | undefined;
  /** ±fraction of random jitter (default 0.3). */
  jitter?: number | undefined;
}

/**
 * Events may have been missed; state built from them may be stale, so refresh it (`sessions.list`,
 * `chat.history`, `agent.wait`). `seq`: an event arrived with a `seq` that skipped numbers on this connection.
 * `reconnect`: the connection dropped while this client was listening to events (a subscription, a stream or an
 * event handler) and is back, subscriptions restored; whatever happened in the `downMs` between is unknown.
 */
export type GatewayGap =
  | { reason: "seq"; expected: number; received: number }
  | { reason: "reconnect"; downMs: number };

/** Options of `createGatewayClient`: the gateway's URL is the only required one. */
export interface GatewayClientOptions {
  url: string;
  token?: string | undefined;
  /** Default `gateway-client` (with mode `backend`): the identity an OpenClaw gateway trusts on loopback. */
  clientId?: string | undefined;
  clientVersion?: string | undefined;
  displayName?: string | undefined;
  /** Default: the global WebSocket, else the `ws` package. */
  WebSocket?: WebSocketConstructor | undefined;
  /** Client-side timeout of a request (default 30,000 ms; `agent.wait` adds its own wait). */
  requestTimeoutMs?: number | undefined;
  /** Time allowed for the challenge and `hello-ok` after the socket opens (default 10,000 ms). */
  connectTimeoutMs?: number | undefined;
  /** `false` disables reconnecting. */
  reconnect?: ReconnectOptions | false | undefined;
  /** Called when events may have been missed: a `seq` that skipped, or a reconnect (see `GatewayGap`). */
  onGap?: ((gap: GatewayGap) => void) | undefined;
  logger?: Logger | undefined;
}

/** Where a client's connection is: `connecting`, `connected`, `reconnecting` or `closed`. */
export type ClientState = "connecting" | "connected" | "reconnecting" | "closed";

/** One item of `streamRun`: a `chat` or `agent` event of the run, or how the stream ended. */
export type RunStreamItem =
  | { type: "chat"; payload: ChatEventPayload }
  | { type: "agent"; payload: AgentEventPayload }
  /** The run's outcome from `agent.wait`, when its events cannot reach this stream (it had ended, or runs elsewhere). */
  | { type: "done"; result: AgentWaitPayload }
  /** The run is unknown (or the gateway refused to say). */
  | { type: "error"; error: GatewayClientError }
  | { type: "disconnected"; reason: string };

export type Call = <M extends GatewayMethodName>(
  method: M,
  params?: MethodParams<M>,
  options?: RequestOptions,
) => Promise<MethodPayload<M>>;

/** Per-request options: a timeout and an abort signal. */
export interface RequestOptions {
  timeoutMs?: number | undefined;
  signal?: AbortSignal | undefined;
}

/** A connection to a gateway, from `createGatewayClient`: every wire method, run waiting and streaming, events. */
export interface GatewayClient {
  readonly state: ClientState;
  readonly hello: HelloOk | undefined;
  /** Resolves once connected (again); rejects if the client is closed or authentication fails. */
  ready(): Promise<HelloOk>;
  request: Call;
  sessions: {
    /**
     * `sessions.list`: one page of sessions, newest first (default 100). `sortBy: "key"` walks them by key instead:
     * pass each page's `nextCursor` back as `cursor` to read every session once while others are written.
     */
    list(
      params?: MethodParams<"sessions.list">,
      options?: RequestOptions,
    ): Promise<MethodPayload<"sessions.list">>;
    /**
     * `sessions.search` (ours): sessions whose transcript, key, label or display name contain the words of `query`,
     * best first, each with its best-matching messages (snippets with the matches' ranges), paged by `offset`. With
     * `requesterKey`, only the sessions that session's tools may see.
     */
    search(
      params: MethodParams<"sessions.search">,
      options?: RequestOptions,
    ): Promise<MethodPayload<"sessions.search">>;
    /** `sessions.resolve`: the one session matching a key, sessionId or label. */
    resolve(
      params: MethodParams<"sessions.resolve">,
      options?: RequestOptions,
    ): Promise<MethodPayload<"sessions.resolve">>;
    /** `sessions.patch`: set or clear (`null`) a session's label, send policy, model or levels. */
    patch(
      params: MethodParams<"sessions.patch">,
      options?: RequestOptions,
    ): Promise<MethodPayload<"sessions.patch">>;
    /** `sessions.delete`: delete a session (and its transcript). */
    delete(
      params: MethodParams<"sessions.delete">,
      options?: RequestOptions,
    ): Promise<MethodPayload<"sessions.delete">>;
    /**
     * Asks for events beyond the runs this client starts. Bare: every `chat`, `agent`, `delivery` and
     * `sessions.changed` event; `{ keys }`: those sessions' runs, deliveries and changes; `{ runIds }`: those runs
     * while under way. `all` and `keys` are restored after a reconnect; `runIds` are not.
     */
    subscribe(
      params?: MethodParams<"sessions.subscribe">,
      options?: RequestOptions,
    ): Promise<MethodPayload<"sessions.subscribe">>;
    /** Bare: drops `all` and every key; otherwise just the `all`, `keys` or `runIds` named. */
    unsubscribe(
      params?: MethodParams<"sessions.unsubscribe">,
      options?: RequestOptions,
    ): Promise<MethodPayload<"sessions.unsubscribe">>;
  };
  chat: {
    /**
     * `chat.history`: a session's newest messages, oldest first. Pass a page's `nextCursor` back as `cursor` for the
     * messages before it (appends meanwhile never shift it; `CURSOR_STALE` once the session was reset or deleted).
     */
    history(
      params: MethodParams<"chat.history">,
      options?: RequestOptions,
    ): Promise<MethodPayload<"chat.history">>;
    /** `chat.send`: a user turn and a run; the run id is the `idempotencyKey`. */
    send(params: MethodParams<"chat.send">, options?: RequestOptions): Promise<MethodPayload<"chat.send">>;
    /** `chat.abort`: stop a session's runs in progress. */
    abort(params: MethodParams<"chat.abort">, options?: RequestOptions): Promise<MethodPayload<"chat.abort">>;
  };
  /** `agent`: start a run; answers when it is accepted. */
  agent(params: MethodParams<"agent">, options?: RequestOptions): Promise<MethodPayload<"agent">>;
  /** `agent.wait`: one server-side wait (`waitRun` keeps waiting across reconnects). */
  agentWait(
    params: MethodParams<"agent.wait">,
    options?: RequestOptions,
  ): Promise<MethodPayload<"agent.wait">>;
  agents: {
    /** `agents.list`: the configured agents, the default agent id and the main session key. */
    list(options?: RequestOptions): Promise<MethodPayload<"agents.list">>;
  };
  runs: {
    /**
     * `runs.list` (ours): the runs queued or running now on every gateway of the store, oldest first; all, or of
     * one session, or of one status. To abort one: `chat.abort { sessionKey, runId }`.
     */
    list(params?: MethodParams<"runs.list">, options?: RequestOptions): Promise<MethodPayload<"runs.list">>;
    /**
     * `runs.tree` (ours): every run of the tree `runId` belongs to, oldest first: what caused each (`parentRunId`,
     * `cause`), its session, status, times, usage and deliveries. With `requesterKey`, as that session may see it.
     */
    tree(params: MethodParams<"runs.tree">, options?: RequestOptions): Promise<MethodPayload<"runs.tree">>;
  };
  deliveries: {
    /** `deliveries.get`: one outbox record. */
    get(
      params: MethodParams<"deliveries.get">,
      options?: RequestOptions,
    ): Promise<MethodPayload<"deliveries.get">>;
    /** `deliveries.list`: outbox records, by session, run or status. */
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
  waitRun(
    runId: string,
    options?: { timeoutMs?: number | undefined; signal?: AbortSignal | undefined },
  ): Promise<AgentWaitPayload>;
  /**
   * The run's `chat`/`agent` events from its first, whenever it is called: it subscribes to the run, and our
   * gateway hands back the events sent before (streamed text joined into one delta) while the run is under way and
   * for a minute after its end. Each event comes once, in `seq` order. Ends at the `chat` event whose state is
   * `final`, `aborted` or `error` (not at `status`, `delta` or an unknown state), with `done` when the events
   * cannot come here (the run ended longer ago, or runs on another gateway), or with `disconnected`. An OpenClaw
   * gateway replays nothing: there, only the events that arrive after the call are seen.
   */
  streamRun(runId: string): AsyncIterableIterator<RunStreamItem>;
  /**
   * Listens to an event (`chat`, `agent`, `sessions.changed`, `delivery`, `tick`, `shutdown`, or `*`). The gateway
   * sends a run's events to the connection that started it and to subscribers (`sessions.subscribe`).
   */
  on(event: string, handler: (payload: unknown, frame: EventFrame) => void): () => void;
  /** Closes the connection for good; pending requests fail. */
  close(): Promise<void>;
}
