import type { GatewayEvent } from "../gateway.js";
import type { RunRecord } from "../store/types.js";

/** Ended runs whose reply is still being delivered, remembered so their starters hear the `delivery` event. */
const ENDED_RUNS_KEPT = 1024;

/** What one connection asked to hear; kept on the connection, so closing it costs O(its own entries). */
export interface Interest {
  /** `sessions.subscribe` bare or `{ all: true }`: every run, session and delivery event. */
  all: boolean;
  /** Session keys (stored form) it subscribed to. */
  readonly keys: Set<string>;
  /** Runs under way that it started or subscribed to. */
  readonly runs: Set<string>;
  /** Ended runs it started whose reply delivery is still pending. */
  readonly ended: Set<string>;
  /** Idempotency keys of its `chat.send` / `agent` calls in flight, with how many calls use each. */
  readonly expecting: Map<string, number>;
  /** The last event it was picked for (one copy per event, however many reasons it has). */
  stamp: number;
}

export interface Routed {
  readonly interest: Interest;
}

export const newInterest = (): Interest => ({
  all: false,
  keys: new Set(),
  runs: new Set(),
  ended: new Set(),
  expecting: new Map(),
  stamp: 0,
});

/** A run under way, as far as routing cares: its session and who started or follows it. */
interface LiveRun<C> {
  sessionKey: string;
  /** Its reply goes to a chat: a `delivery` event follows the end. */
  delivers: boolean;
  conns: Set<C>;
}

/** The run as the gateway records it when it is created (before it can emit anything). */
export type CreatedRun = Pick<RunRecord, "runId" | "sessionKey" | "idempotencyKey" | "deliverTo">;

function addTo<K, C>(map: Map<K, Set<C>>, key: K, conn: C): void {
  let set = map.get(key);
  if (set === undefined) {
    set = new Set();
    map.set(key, set);
  }
  set.add(conn);
}

function removeFrom<K, C>(map: Map<K, Set<C>>, key: K, conn: C): void {
  const set = map.get(key);
  if (set === undefined) return;
  set.delete(conn);
  if (set.size === 0) map.delete(key);
}

/**
 * Who hears which run, session and delivery event on one server. Every lookup is by run id or session key, so an
 * event costs O(connections that asked for it), never O(connections).
 */
export class EventRouter<C extends Routed> {
  private readonly live = new Map<string, LiveRun<C>>();
  private readonly sessions = new Map<string, Set<C>>();
  private readonly everything = new Set<C>();
  private readonly ended = new Map<string, Set<C>>();
  private readonly expected = new Map<string, Set<C>>();
  private stamp = 0;

  /** A run was recorded: callers waiting on its idempotency key become its starters before it can emit. */
  runCreated(run: CreatedRun): void {
    const conns = new Set<C>();
    const waiting = run.idempotencyKey === undefined ? undefined : this.expected.get(run.idempotencyKey);
    for (const conn of waiting ?? []) {
      conns.add(conn);
      conn.interest.runs.add(run.runId);
    }
    const delivers = Boolean(run.deliverTo?.channel && run.deliverTo.to);
    this.live.set(run.runId, { sessionKey: run.sessionKey, delivers, conns });
  }

  /** `conn` is about to call a method that may start a run under `idempotencyKey`; the result stops waiting. */
  expectRun(conn: C, idempotencyKey: string): () => void {
    addTo(this.expected, idempotencyKey, conn);
    const { expecting } = conn.interest;
    expecting.set(idempotencyKey, (expecting.get(idempotencyKey) ?? 0) + 1);
    return () => {
      const left = (expecting.get(idempotencyKey) ?? 1) - 1;
      if (left > 0) return void expecting.set(idempotencyKey, left);
      expecting.delete(idempotencyKey);
      removeFrom(this.expected, idempotencyKey, conn);
    };
  }

  /** `conn` hears a run under way from now on; false if the run is not under way here (ended, or unknown). */
  followRun(conn: C, runId: string): boolean {
    const run = this.live.get(runId);
    if (run === undefined) return false;
    run.conns.add(conn);
    conn.interest.runs.add(runId);
    return true;
  }

  unfollowRun(conn: C, runId: string): void {
    this.live.get(runId)?.conns.delete(conn);
    conn.interest.runs.delete(runId);
  }

  subscribeAll(conn: C): void {
    conn.interest.all = true;
    this.everything.add(conn);
  }

  unsubscribeAll(conn: C): void {
    conn.interest.all = false;
    this.everything.delete(conn);
  }

  subscribeKey(conn: C, key: string): void {
    conn.interest.keys.add(key);
    addTo(this.sessions, key, conn);
  }

  unsubscribeKey(conn: C, key: string): void {
    conn.interest.keys.delete(key);
    removeFrom(this.sessions, key, conn);
  }

  /** A connection closed: every entry it had goes. */
  drop(conn: C): void {
    const { interest } = conn;
    this.unsubscribeAll(conn);
    for (const key of interest.keys) removeFrom(this.sessions, key, conn);
    for (const runId of interest.runs) this.live.get(runId)?.conns.delete(conn);
    for (const runId of interest.ended) removeFrom(this.ended, runId, conn);
    for (const key of interest.expecting.keys()) removeFrom(this.expected, key, conn);
    interest.keys.clear();
    interest.runs.clear();
    interest.ended.clear();
    interest.expecting.clear();
  }

  /**
   * The connections that get `event`, each once. A run's final `chat` event is its last: its entry goes (kept
   * for its starters only while its reply's `delivery` event is due).
   */
  recipients(event: GatewayEvent): C[] {
    const stamp = ++this.stamp;
    const out: C[] = [];
    const add = (conns: Iterable<C> | undefined) => {
      if (conns === undefined) return;
      for (const conn of conns) {
        if (conn.interest.stamp === stamp) continue;
        conn.interest.stamp = stamp;
        out.push(conn);
      }
    };
    add(this.everything);
    switch (event.type) {
      case "sessions.changed":
        add(this.sessions.get(event.key));
        break;
      case "delivery": {
        const { record } = event;
        add(this.sessions.get(record.sessionKey));
        if (record.runId !== undefined) {
          add(this.live.get(record.runId)?.conns);
          add(this.ended.get(record.runId));
          this.forgetEnded(record.runId);
        }
        break;
      }
      case "agent": {
        const run = this.live.get(event.runId);
        if (run !== undefined) {
          add(run.conns);
          add(this.sessions.get(run.sessionKey));
        }
        break;
      }
      case "chat": {
        const run = this.live.get(event.runId);
        add(run?.conns);
        add(this.sessions.get(run?.sessionKey ?? event.sessionKey));
        if (event.state !== "delta" && run !== undefined) this.runEnded(event.runId, run, !!event.message);
        break;
      }
    }
    return out;
  }

  /** Entry counts, for tests: all zero once every run has ended and every connection has closed. */
  size(): { live: number; sessions: number; all: number; ended: number; expected: number } {
    return {
      live: this.live.size,
      sessions: this.sessions.size,
      all: this.everything.size,
      ended: this.ended.size,
      expected: this.expected.size,
    };
  }

  private runEnded(runId: string, run: LiveRun<C>, replied: boolean): void {
    this.live.delete(runId);
    for (const conn of run.conns) conn.interest.runs.delete(runId);
    if (!run.delivers || !replied || run.conns.size === 0) return;
    this.ended.set(runId, run.conns);
    for (const conn of run.conns) conn.interest.ended.add(runId);
    if (this.ended.size > ENDED_RUNS_KEPT) {
      const oldest = this.ended.keys().next().value as string;
      this.forgetEnded(oldest);
    }
  }

  private forgetEnded(runId: string): void {
    const conns = this.ended.get(runId);
    if (conns === undefined) return;
    this.ended.delete(runId);
    for (const conn of conns) conn.interest.ended.delete(runId);
  }
}
