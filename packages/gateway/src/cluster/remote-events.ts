import type { GatewayContext } from "../context.js";
import type { GatewayEvent } from "../gateway.js";
import type { RunTable } from "../run-table.js";
import { emitFinal, emitStart } from "../runs/run-events.js";
import { isFinal } from "../runs/wait.js";
import type { CreatedRun } from "../server/event-routing.js";
import type { RunRecord, StoreChange } from "../store/types.js";

/** Ended runs of other gateways remembered, so that a late copy of their events is dropped. */
const ENDED_KEPT = 4096;

/** What one gateway tells the others through `store.publish`: one event it raised, and the run it belongs to. */
export interface EventMessage {
  v: 1;
  /** The gateway that raised it (it does not hear its own). */
  from: string;
  event: GatewayEvent;
  /** For run events: the run's session and delivery target, so the others can route it like their own. */
  run?: Pick<CreatedRun, "sessionKey" | "deliverTo"> | undefined;
}

interface RemoteRun {
  sessionKey: string;
  /** The last event `seq` heard; events at or below it are copies and dropped. */
  lastSeq: number;
  ended: boolean;
  /** When an event or change of it was last heard (for the sweep). */
  heard: number;
  fallback?: ReturnType<typeof setTimeout> | undefined;
}

const isRunEvent = (event: GatewayEvent): event is Extract<GatewayEvent, { type: "agent" | "chat" }> =>
  event.type === "agent" || event.type === "chat";
const endsRun = (event: GatewayEvent) => event.type === "chat" && event.state !== "delta";

function parseMessage(value: unknown): EventMessage | undefined {
  if (value === null || typeof value !== "object") return undefined;
  const message = value as Partial<EventMessage>;
  if (message.v !== 1 || typeof message.from !== "string") return undefined;
  const event = message.event as { type?: unknown; runId?: unknown; seq?: unknown } | undefined;
  if (event === null || typeof event !== "object" || typeof event.type !== "string") return undefined;
  if (event.type === "agent" || event.type === "chat") {
    if (typeof event.runId !== "string" || typeof event.seq !== "number") return undefined;
    if (typeof message.run?.sessionKey !== "string") return undefined;
  }
  return message as EventMessage;
}

/**
 * Events of runs that execute on other gateways, for the clients connected here. With a store that can publish
 * (`store.publish`, e.g. Postgres NOTIFY) every event a gateway raises — run start, streamed deltas, tool calls,
 * the end, `sessions.changed`, `delivery` — reaches the other gateways as it happens, with the executing gateway's
 * per-run `seq`. The change feed is the fallback: a run that ends without its end being heard (its gateway died,
 * or a message was lost) gets its end raised here from the stored record, continuing the run's `seq`. A store
 * without `publish` gets only that: start and end from the change feed, no deltas.
 */
export function createEventRelay(deps: {
  ctx: GatewayContext;
  /** Raises an event to this gateway's subscribers only (never published again). */
  emitHere(event: GatewayEvent): void;
  /** Tells this gateway's servers of a run before its first event, so they route it like their own. */
  announceRun(run: CreatedRun): void;
  /** How long a run's end heard on the change feed waits for its events before it is raised from the store. */
  graceMs: number;
}) {
  const { ctx, emitHere, announceRun, graceMs } = deps;
  const { store } = ctx;
  const canPublish = typeof store.publish === "function" && typeof store.subscribe === "function";
  const local = new Map<string, Pick<CreatedRun, "sessionKey" | "deliverTo">>();
  const remote = new Map<string, RemoteRun>();
  const ended: string[] = [];

  function remoteRun(runId: string, run: Pick<CreatedRun, "sessionKey" | "deliverTo">): RemoteRun {
    let known = remote.get(runId);
    if (known === undefined) {
      known = { sessionKey: run.sessionKey, lastSeq: 0, ended: false, heard: Date.now() };
      remote.set(runId, known);
      announceRun({ runId, ...run });
    }
    return known;
  }

  function markEnded(runId: string, known: RemoteRun): void {
    known.ended = true;
    if (known.fallback !== undefined) clearTimeout(known.fallback);
    known.fallback = undefined;
    ended.push(runId);
    while (ended.length > ENDED_KEPT) remote.delete(ended.shift() as string);
  }

  /** Raises events of a remote run from the store, continuing the `seq` the run's own events reached here. */
  function raise(known: RemoteRun, emit: (events: Pick<GatewayContext, "runs" | "clock" | "emit">) => void) {
    const seqs = { nextSeq: () => ++known.lastSeq, forgetSeq: () => {} } as unknown as RunTable;
    emit({ runs: seqs, clock: ctx.clock, emit: emitHere });
  }

  async function endFromStore(runId: string): Promise<void> {
    const known = remote.get(runId);
    if (known?.ended === true) return;
    const run = await store.getRun(runId);
    if (run === undefined || !isFinal(run.status)) return;
    const current = remote.get(runId) ?? remoteRun(runId, run);
    if (current.ended) return;
    markEnded(runId, current);
    raise(current, (events) => emitFinal(events, run));
  }

  function endLater(runId: string, sessionKey: string): void {
    const known = remoteRun(runId, { sessionKey });
    if (known.ended || known.fallback !== undefined) return;
    known.fallback = setTimeout(() => {
      known.fallback = undefined;
      endFromStore(runId).catch((error: unknown) =>
        ctx.logger.warn("could not read a remote run's end", { runId, error: String(error) }),
      );
    }, graceMs);
    known.fallback.unref?.();
  }

  function heard(value: unknown): void {
    const message = parseMessage(value);
    if (message === undefined || message.from === ctx.owner) return;
    const { event } = message;
    if (!isRunEvent(event)) {
      emitHere(event);
      return;
    }
    if (local.has(event.runId)) return;
    const known = remoteRun(event.runId, message.run as NonNullable<EventMessage["run"]>);
    known.heard = Date.now();
    if (known.ended || event.seq <= known.lastSeq) return;
    known.lastSeq = event.seq;
    if (endsRun(event)) markEnded(event.runId, known);
    emitHere(event);
  }

  const unsubscribe = canPublish ? (store.subscribe?.(heard) ?? (() => {})) : () => {};
  function underWay(change: Extract<StoreChange, { type: "run" }>): void {
    if (local.has(change.runId)) return;
    const known = remoteRun(change.runId, change);
    known.heard = Date.now();
    // Without published events, the change feed is all there is: the start is raised from it.
    if (!canPublish && change.status === "running" && known.lastSeq === 0) {
      raise(known, (events) => emitStart(events, change as unknown as RunRecord));
    }
  }

  const unwatch = store.watch((change) => {
    if (change.type !== "run") return;
    // A run this gateway creates is announced on commit, a moment before it is registered here as its own.
    if (!isFinal(change.status)) return void setImmediate(() => underWay(change));
    if (local.has(change.runId)) {
      // Its final event normally ends it here; this is the safety net for a run that never raised one.
      setTimeout(() => local.delete(change.runId), 60_000).unref?.();
      return;
    }
    if (canPublish) endLater(change.runId, change.sessionKey);
    else
      endFromStore(change.runId).catch((error: unknown) =>
        ctx.logger.warn("could not read a remote run's end", { runId: change.runId, error: String(error) }),
      );
  });

  return {
    /** A run of this gateway was recorded: its events are published from now on. */
    localRunCreated(run: CreatedRun): void {
      const mistaken = remote.get(run.runId);
      if (mistaken?.fallback !== undefined) clearTimeout(mistaken.fallback);
      remote.delete(run.runId);
      local.set(run.runId, {
        sessionKey: run.sessionKey,
        ...(run.deliverTo === undefined ? {} : { deliverTo: run.deliverTo }),
      });
    },
    /** Every event this gateway raises: its own runs' events and its session and delivery events go out. */
    published(event: GatewayEvent): void {
      if (!canPublish) return;
      let run: EventMessage["run"];
      if (isRunEvent(event)) {
        run = local.get(event.runId);
        if (run === undefined) return;
        if (endsRun(event)) local.delete(event.runId);
      }
      const message: EventMessage = { v: 1, from: ctx.owner, event, ...(run === undefined ? {} : { run }) };
      try {
        store.publish?.(message);
      } catch (error) {
        ctx.logger.warn("could not publish an event to the other gateways", { error: String(error) });
      }
    },
    /**
     * Remote runs not heard of for `quietMs` are read again: one whose end was never announced (a lost NOTIFY)
     * gets its end raised here.
     */
    async sweep(quietMs: number): Promise<void> {
      const now = Date.now();
      for (const [runId, known] of [...remote]) {
        if (known.ended || known.fallback !== undefined || now - known.heard < quietMs) continue;
        known.heard = now;
        await endFromStore(runId);
      }
    },
    stop(): void {
      unsubscribe();
      unwatch();
      for (const known of remote.values()) if (known.fallback !== undefined) clearTimeout(known.fallback);
    },
  };
}

export type EventRelay = ReturnType<typeof createEventRelay>;
