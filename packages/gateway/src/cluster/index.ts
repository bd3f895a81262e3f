import type { ClusterRuntime, GatewayContext } from "../context.js";
import type { GatewayEvent } from "../gateway.js";
import { listenForAborts } from "../runs/abort.js";
import { isFinal } from "../runs/wait.js";
import type { CreatedRun } from "../server/event-routing.js";
import { createClusterLanes } from "./lanes.js";
import type { ClusterSettings } from "./options.js";
import { createEventRelay } from "./remote-events.js";
import { StoreContact } from "./store-contact.js";

export { type ExclusiveConnection, type HeldConnection, holdExclusiveConnection } from "./connections.js";
export { type ClusterOptions, type ClusterSettings, clusterSettings } from "./options.js";

/** What cluster mode needs of the gateway around it, beyond the context. */
export interface ClusterHooks {
  /** Takes over the work of dead gateways (one recovery pass). */
  recover(): Promise<void>;
  /** Raises an event to this gateway's subscribers only. */
  emitHere(event: GatewayEvent): void;
  /** Tells this gateway's servers of a run executing elsewhere, so they route its events. */
  announceRun(run: CreatedRun): void;
}

/**
 * Cluster mode for one gateway: shared session lanes (woken by the change feed), the events of other gateways'
 * runs (streamed through the store's `publish` when it has one), and a recovery pass every `recoveryIntervalMs`
 * that takes over the work of gateways that died.
 */
export function startCluster(
  ctx: GatewayContext,
  settings: ClusterSettings,
  hooks: ClusterHooks,
): ClusterRuntime & {
  contact: StoreContact;
  runCreated(run: CreatedRun): void;
  published(event: GatewayEvent): void;
  stop(): Promise<void>;
} {
  const { recover } = hooks;
  const contact = new StoreContact(ctx.clock, settings);
  const lanes = createClusterLanes({
    store: ctx.store,
    clock: ctx.clock,
    owner: ctx.owner,
    settings,
    contact,
    closed: () => ctx.tasks.closed,
    logger: ctx.logger,
    runsHere: (sessionKey) => ctx.runs.lanes.runsOf(sessionKey),
  });
  const unwatchLanes = ctx.store.watch((change) => {
    if (change.type === "run" && isFinal(change.status)) lanes.wake(change.sessionKey);
  });
  // Other gateways ask this one to abort its runs (`chat.abort`, queue mode `interrupt`).
  const unlistenAborts = listenForAborts(ctx);
  const relay = createEventRelay({
    ctx,
    emitHere: hooks.emitHere,
    announceRun: hooks.announceRun,
    graceMs: settings.heartbeatMs,
  });
  // A change announced by a process that died right after committing it, or sent while this gateway's LISTEN
  // connection was down, is never heard: each pass re-reads the runs someone here waits on.
  // Only waits older than one pass are re-read: the young ones are still covered by their own first read.
  let previous = new Set<string>();
  const recheckWaits = async () => {
    const awaited = new Set(ctx.runs.awaitedRuns());
    for (const runId of awaited) {
      if (!previous.has(runId)) continue;
      const run = await ctx.store.getRun(runId);
      if (run !== undefined && isFinal(run.status)) ctx.runs.settle(run);
    }
    previous = awaited;
  };
  let pass: Promise<void> | undefined;
  const timer = setInterval(() => {
    if (pass !== undefined || ctx.tasks.closed) return;
    pass = Promise.all([recover(), recheckWaits(), relay.sweep(settings.leaseTtlMs)])
      .then(() => undefined)
      .catch((error: unknown) => ctx.logger.warn("cluster recovery pass failed", { error: String(error) }))
      .finally(() => {
        pass = undefined;
      });
  }, settings.recoveryIntervalMs);
  timer.unref();
  return {
    lane: (sessionKey, task, taken) => lanes.run(sessionKey, task, taken),
    laneLease: (sessionKey) => lanes.lease(sessionKey),
    giveLane: (sessionKey) => lanes.give(sessionKey),
    // On the session's local lane: a run accepted meanwhile queues behind it rather than take the lease with its start.
    giveKeptLane: (sessionKey) => {
      ctx.tasks.track(ctx.runs.lanes.run(sessionKey, () => lanes.giveKept(sessionKey)));
    },
    exclusive: (name, task) => lanes.exclusive(name, task),
    lapsedBefore: () => contact.lapsedBefore(),
    contact,
    runCreated: (run) => relay.localRunCreated(run),
    published: (event) => relay.published(event),
    async stop() {
      clearInterval(timer);
      unwatchLanes();
      unlistenAborts();
      relay.stop();
      await pass;
      await lanes.releaseKept();
    },
  };
}
