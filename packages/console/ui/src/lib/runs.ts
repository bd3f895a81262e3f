import type { ActiveRunPayload, AgentEventPayload } from "@sessions/core";
import type { GatewayClient } from "@sessions/gateway-client";
import { textOf } from "./messages.js";
import { createStore, type Store } from "./store.js";

/**
 * A run under way on the gateway (listed with `runs.list` when the page connects, and after a gap) or seen through
 * events since: the last ones that ended are kept too.
 */
export interface LiveRun {
  runId: string;
  sessionKey?: string;
  startedAt: number;
  /** Waiting for its session's lane (listed as queued, not yet started). */
  queued?: boolean;
  /** The reply streamed so far. */
  text: string;
  lastTool?: string;
  state: "running" | "final" | "aborted" | "error";
  endedAt?: number;
  error?: string;
}

const KEEP_ENDED = 30;

interface ChatEvent {
  runId?: unknown;
  sessionKey?: unknown;
  state?: unknown;
  deltaText?: unknown;
  message?: unknown;
  errorMessage?: unknown;
}

/**
 * Follows every run this connection hears of (`sessions.subscribe({ all: true })` makes that all of them). An
 * `agent` event names no session; the run's session comes from its first `chat` event, or from the transcript of a
 * session that just changed (its input message carries the runId).
 */
export function trackRuns(client: GatewayClient): {
  runs: Store<LiveRun[]>;
  adopt(active: readonly ActiveRunPayload[]): void;
  stop(): void;
} {
  const runs = createStore<LiveRun[]>([]);
  const recentKeys = new Map<string, number>();
  const upsert = (runId: string, fn: (run: LiveRun) => LiveRun) =>
    runs.update((list) => {
      const index = list.findIndex((r) => r.runId === runId);
      const current =
        index >= 0
          ? (list[index] as LiveRun)
          : { runId, startedAt: Date.now(), text: "", state: "running" as const };
      const next = fn(current);
      const rest = index >= 0 ? [...list.slice(0, index), ...list.slice(index + 1)] : list;
      const running = [next, ...rest].filter((r) => r.state === "running");
      const ended = [next, ...rest].filter((r) => r.state !== "running").slice(0, KEEP_ENDED);
      return [...running, ...ended];
    });

  async function findSession(runId: string): Promise<void> {
    const since = Date.now() - 10_000;
    for (const [key, at] of [...recentKeys].reverse()) {
      if (at < since) continue;
      if (runs.get().find((r) => r.runId === runId)?.sessionKey !== undefined) return;
      try {
        const history = await client.chat.history({ sessionKey: key, limit: 5 });
        if (history.messages.some((m) => m.runId === runId)) {
          upsert(runId, (r) => ({ ...r, sessionKey: key }));
          return;
        }
      } catch {
        // The session went away: try the next one.
      }
    }
  }

  const offAgent = client.on("agent", (payload) => {
    const event = payload as AgentEventPayload;
    if (typeof event?.runId !== "string") return;
    const data = (event.data ?? {}) as { phase?: string; type?: string; toolName?: string; error?: string };
    if (event.stream === "lifecycle" && data.phase === "start") {
      upsert(event.runId, (r) => ({
        ...r,
        state: "running",
        queued: false,
        startedAt: event.ts ?? r.startedAt,
      }));
      setTimeout(() => {
        if (
          runs
            .get()
            .find((r) => r.runId === event.runId && r.sessionKey === undefined && r.state === "running")
        )
          void findSession(event.runId);
      }, 250);
    } else if (event.stream === "tool" && data.type === "tool-call" && data.toolName) {
      upsert(event.runId, (r) => ({ ...r, lastTool: data.toolName as string }));
    }
  });
  const offChat = client.on("chat", (payload) => {
    const event = payload as ChatEvent;
    if (typeof event?.runId !== "string") return;
    const sessionKey = typeof event.sessionKey === "string" ? event.sessionKey : undefined;
    const state = event.state;
    upsert(event.runId, (r) => {
      const base = { ...r, ...(sessionKey ? { sessionKey } : {}) };
      if (state === "delta")
        return { ...base, text: base.text + (typeof event.deltaText === "string" ? event.deltaText : "") };
      if (state === "final" || state === "aborted" || state === "error") {
        const finalText = textOf(event.message);
        return {
          ...base,
          state,
          endedAt: Date.now(),
          ...(finalText ? { text: finalText } : {}),
          ...(typeof event.errorMessage === "string" ? { error: event.errorMessage } : {}),
        };
      }
      // Other states (OpenClaw sends `status`) do not end a run.
      return base;
    });
  });
  const offChanged = client.on("sessions.changed", (payload) => {
    const key = (payload as { key?: unknown })?.key;
    if (typeof key !== "string") return;
    recentKeys.delete(key);
    recentKeys.set(key, Date.now());
    if (recentKeys.size > 50) recentKeys.delete(recentKeys.keys().next().value as string);
  });

  return {
    runs,
    /**
     * Runs the gateway lists as under way (`runs.list`), for those that started before this page heard of them. A
     * run already known is left as its events made it: one that ended while the list was on its way stays ended.
     */
    adopt(active) {
      for (const run of active) {
        if (runs.get().some((r) => r.runId === run.runId)) continue;
        upsert(run.runId, (r) => ({
          ...r,
          sessionKey: run.sessionKey,
          startedAt: run.startedAt ?? run.createdAt,
          queued: run.status === "queued",
        }));
      }
    },
    stop() {
      offAgent();
      offChat();
      offChanged();
    },
  };
}

/** After a gap, runs believed running may have ended: ask the gateway (a wait of 0 ms never blocks). */
export async function recheckRuns(client: GatewayClient, runs: Store<LiveRun[]>): Promise<void> {
  for (const run of runs.get().filter((r) => r.state === "running")) {
    try {
      const result = await client.agentWait({ runId: run.runId, timeoutMs: 0 });
      if (result.status === "timeout") continue;
      runs.update((list) =>
        list.map((r) =>
          r.runId === run.runId
            ? {
                ...r,
                state: result.status === "ok" ? "final" : "error",
                endedAt: result.endedAt ?? Date.now(),
              }
            : r,
        ),
      );
    } catch {
      // Unknown run: leave it; the next event or gap tells.
    }
  }
}
