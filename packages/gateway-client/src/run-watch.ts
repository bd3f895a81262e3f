import {
  type AgentEventPayload,
  type AgentWaitPayload,
  type ChatEventPayload,
  type HelloOk,
  isTerminalChatState,
  type ReplayedEvent,
} from "@sessions/core";
import type { Call, ClientState, GatewayClient, RunStreamItem } from "./client-types.js";
import { clientError, GatewayClientError } from "./errors.js";

/** What waiting for and streaming a run need from the client. */
export interface RunWatchDeps {
  request: Call;
  state(): ClientState;
  ready(): Promise<HelloOk>;
  on: GatewayClient["on"];
}

/** `ready()`, but giving up after `ms` or when `signal` aborts (a wait must not outlive its own deadline). */
function readyWithin(deps: RunWatchDeps, ms: number, signal?: AbortSignal): Promise<HelloOk> {
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
    deps.ready().then(
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

type RunEventItem = Extract<RunStreamItem, { type: "chat" | "agent" }>;

/** `agent.wait` in chunks until the run ends or `timeoutMs` runs out, across reconnects and gateway restarts. */
export async function waitRun(
  deps: RunWatchDeps,
  runId: string,
  opts: { timeoutMs?: number | undefined; signal?: AbortSignal | undefined } = {},
): Promise<AgentWaitPayload> {
  const deadline = opts.timeoutMs === undefined ? Number.POSITIVE_INFINITY : Date.now() + opts.timeoutMs;
  for (;;) {
    if (opts.signal?.aborted) throw clientError("aborted", "waitRun aborted", { requestSent: false });
    const remaining = deadline - Date.now();
    if (remaining <= 0) return { runId, status: "timeout" as const };
    const chunk = Math.min(30_000, remaining);
    try {
      if (deps.state() !== "connected") await readyWithin(deps, remaining, opts.signal);
      const result = await deps.request(
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
      if (!retry || deps.state() === "closed") throw error;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

/** The gateway hands back a run's past events on `sessions.subscribe { runIds, replay: true }`. */
const REPLAY = "sessions.subscribe.replay";

/**
 * A run's events as an async iterator, every one of them from the run's first whenever it is called: it subscribes
 * to the run (`sessions.subscribe { runIds, replay: true }`), whose answer carries the events so far (streamed text
 * joined), and holds live events until then so that each comes once, in `seq` order. It ends at the `chat` event
 * whose state is `final`, `aborted` or `error` (never at `status`, `delta` or a state it does not know: OpenClaw
 * sends `status` before the model starts), with the outcome of `agent.wait` when the events cannot come (the run
 * ended and was forgotten, is unknown, or runs on another gateway), or with `disconnected`. An OpenClaw gateway
 * replays nothing: there, events sent before the call are missed.
 */
export function streamRun(deps: RunWatchDeps, runId: string): AsyncIterableIterator<RunStreamItem> {
  const queue: RunStreamItem[] = [];
  let done = false;
  let wake: (() => void) | undefined;
  const stop = new AbortController();
  /** Live events that came before the subscription's answer; undefined once it came. */
  let held: RunEventItem[] | undefined = [];
  /**
   * With a replay, the newest `seq` handed out: an event at or below it came already. Without one (OpenClaw, whose
   * `chat` and `agent` events may be numbered apart), every event passes in the order it came.
   */
  let lastSeq: number | undefined;
  const push = (item: RunStreamItem, end = false) => {
    if (done) return;
    queue.push(item);
    if (end) finish();
    wake?.();
  };
  const pushEvent = (item: RunEventItem) => {
    if (lastSeq !== undefined) {
      if (item.payload.seq <= lastSeq) return;
      lastSeq = item.payload.seq;
    }
    push(item, item.type === "chat" && isTerminalChatState(item.payload.state));
  };
  const live = (item: RunEventItem) => {
    if (held !== undefined) held.push(item);
    else pushEvent(item);
  };
  /**
   * The subscription answered: with a replay, its events first, then the live ones held meanwhile, each once in
   * `seq` order; without, the held ones as they came.
   */
  const release = (replayed: readonly ReplayedEvent[] | undefined) => {
    if (held === undefined) return;
    let before = held;
    held = undefined;
    if (replayed !== undefined) {
      lastSeq = Number.NEGATIVE_INFINITY;
      before = before.sort((a, b) => a.payload.seq - b.payload.seq);
      for (const { event, payload } of replayed) {
        if (payload.runId !== runId) continue;
        if (event === "chat") pushEvent({ type: "chat", payload: payload as ChatEventPayload });
        else pushEvent({ type: "agent", payload: payload as AgentEventPayload });
      }
    }
    for (const item of before) pushEvent(item);
  };
  const offChat = deps.on("chat", (payload) => {
    const chat = payload as ChatEventPayload;
    if (chat.runId === runId) live({ type: "chat", payload: chat });
  });
  const offAgent = deps.on("agent", (payload) => {
    const agent = payload as AgentEventPayload;
    if (agent.runId === runId) live({ type: "agent", payload: agent });
  });
  const offClose = deps.on("disconnected", (payload) => {
    release(undefined);
    push(
      {
        type: "disconnected",
        reason: (payload as { reason?: string | undefined }).reason ?? "connection closed",
      },
      true,
    );
  });
  function finish() {
    done = true;
    offChat();
    offAgent();
    offClose();
    stop.abort();
  }
  const outcome = (result: AgentWaitPayload) => {
    if (result.status !== "timeout" || result.endedAt !== undefined) push({ type: "done", result }, true);
  };
  const failed = (error: unknown) => {
    if (error instanceof GatewayClientError && !error.retryable) push({ type: "error", error }, true);
  };
  const subscribe = async () => {
    const hello = await deps.ready();
    const replay = hello.features?.capabilities?.includes(REPLAY) === true;
    const payload = await deps.request(
      "sessions.subscribe",
      { runIds: [runId], ...(replay ? { replay: true as const } : {}) },
      { timeoutMs: 10_000 },
    );
    release(replay ? (payload.events ?? []) : undefined);
    return payload.runIds;
  };
  subscribe()
    .then(
      (followed) => followed,
      () => {
        release(undefined);
        return undefined;
      },
    )
    .then((followed) => {
      if (done || followed?.includes(runId)) return;
      if (followed !== undefined) {
        // Not under way on this gateway: ended, unknown or running elsewhere; its outcome ends the stream.
        waitRun(deps, runId, { signal: stop.signal }).then(outcome, failed);
        return;
      }
      // A gateway that sends every event to everyone: only a run that had already ended needs asking.
      deps.request("agent.wait", { runId, timeoutMs: 0 }, { timeoutMs: 10_000 }).then(outcome, failed);
    });
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
