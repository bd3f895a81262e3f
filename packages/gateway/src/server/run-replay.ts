import { isTerminalChatState, type ReplayedEvent } from "@sessions/core";
import type { GatewayEvent } from "../gateway.js";

/** Ended runs whose events are kept for a follower that comes late, at most. */
export const REPLAY_ENDED_RUNS_KEPT = 1024;
/** How long an ended run's events are kept. */
export const REPLAY_KEPT_MS = 60_000;
/** Events kept per run at most (streamed text is joined, so only tool and guard events count towards it). */
export const REPLAY_EVENTS_PER_RUN = 2000;
/** Runs kept at most, ended or not (a run whose end this server never hears goes with the oldest). */
export const REPLAY_RUNS_KEPT = 16_384;

type RunEvent = Extract<GatewayEvent, { type: "chat" | "agent" }>;

interface Log {
  events: ReplayedEvent[];
  endedAt?: number | undefined;
}

const isTextDelta = (entry: ReplayedEvent | undefined, event: "chat" | "agent"): boolean =>
  entry !== undefined &&
  entry.event === event &&
  (event === "chat" ? entry.payload.state === "delta" : entry.payload.stream === "assistant");

/**
 * The `chat` and `agent` events of the runs this server has seen, so that `sessions.subscribe { runIds, replay }`
 * can hand a late follower everything it missed (what resumable streams do). A run's streamed text is joined into
 * one `chat` delta and one `agent` assistant event (each with the newest `seq`), so a run costs its text and its
 * tool events. Kept while the run is under way and `REPLAY_KEPT_MS` after its end, for the newest
 * `REPLAY_ENDED_RUNS_KEPT` ended runs.
 */
export class RunReplay {
  private readonly logs = new Map<string, Log>();
  private readonly ended = new Map<string, number>();

  constructor(private readonly now: () => number = Date.now) {}

  /** Notes one event (every event passes here; only `chat` and `agent` events are kept). */
  record(event: GatewayEvent): void {
    if (event.type !== "chat" && event.type !== "agent") return;
    const { type, ...payload } = event as RunEvent;
    let log = this.logs.get(event.runId);
    if (log === undefined) {
      log = { events: [] };
      this.logs.set(event.runId, log);
      if (this.logs.size > REPLAY_RUNS_KEPT) this.forget(this.logs.keys().next().value as string);
    }
    if (log.endedAt !== undefined) return;
    const entry = { event: type, payload } as ReplayedEvent;
    const { events } = log;
    if (isTextDelta(entry, type)) this.join(events, entry);
    else events.push(entry);
    if (events.length > REPLAY_EVENTS_PER_RUN) events.splice(0, events.length - REPLAY_EVENTS_PER_RUN);
    if (entry.event === "chat" && isTerminalChatState(entry.payload.state)) this.runEnded(event.runId, log);
  }

  /** The events of `runId` so far, oldest first (empty for a run this server has not seen or has forgotten). */
  events(runId: string): ReplayedEvent[] {
    this.expire();
    return [...(this.logs.get(runId)?.events ?? [])];
  }

  /** How many runs are kept, for tests. */
  size(): number {
    return this.logs.size;
  }

  /** Streamed text joins the previous piece of the same kind, if one of the last two entries is that piece. */
  private join(events: ReplayedEvent[], entry: ReplayedEvent): void {
    for (let i = events.length - 1; i >= Math.max(0, events.length - 2); i--) {
      const previous = events[i];
      if (!isTextDelta(previous, entry.event)) continue;
      events.splice(i, 1);
      events.push(joined(previous as ReplayedEvent, entry));
      return;
    }
    events.push(entry);
  }

  private runEnded(runId: string, log: Log): void {
    log.endedAt = this.now();
    this.ended.set(runId, log.endedAt);
    this.expire();
  }

  private expire(): void {
    const cutoff = this.now() - REPLAY_KEPT_MS;
    for (const [runId, endedAt] of this.ended) {
      if (endedAt > cutoff && this.ended.size <= REPLAY_ENDED_RUNS_KEPT) break;
      this.forget(runId);
    }
  }

  private forget(runId: string): void {
    this.ended.delete(runId);
    this.logs.delete(runId);
  }
}

/** Two pieces of streamed text as one, numbered as the newer. */
function joined(previous: ReplayedEvent, next: ReplayedEvent): ReplayedEvent {
  if (previous.event === "chat" && next.event === "chat") {
    return {
      event: "chat",
      payload: {
        ...next.payload,
        deltaText: `${previous.payload.deltaText ?? ""}${next.payload.deltaText ?? ""}`,
      },
    };
  }
  if (previous.event === "agent" && next.event === "agent") {
    const text = (data: unknown) => String((data as { text?: unknown } | undefined)?.text ?? "");
    const data = {
      ...(next.payload.data as object),
      text: text(previous.payload.data) + text(next.payload.data),
    };
    return { event: "agent", payload: { ...next.payload, data } };
  }
  return next;
}
