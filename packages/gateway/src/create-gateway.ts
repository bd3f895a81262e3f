import { randomUUID } from "node:crypto";
import {
  type GatewayMethodName,
  normalizeChannelId,
  parseSessionsConfig,
  SessionsError,
  silentLogger,
} from "@sessions/core";
import { followAgentToAgent } from "./a2a/flow.js";
import type { ChannelAdapterV1 } from "./adapter.js";
import { followThreadBindings, sweepBindings, threadClosed } from "./bindings/expiry.js";
import { createDeadlineTimer, systemClock } from "./clock.js";
import {
  clusterSettings,
  type ExclusiveConnection,
  type HeldConnection,
  holdExclusiveConnection,
  startCluster,
} from "./cluster/index.js";
import type { Channels, GatewayContext, Tasks } from "./context.js";
import { createOutbox } from "./delivery/outbox.js";
import type { Gateway, GatewayEvent, GatewayOptions } from "./gateway.js";
import { receive } from "./inbound/receive.js";
import { Lanes } from "./lanes.js";
import { Lifecycle } from "./lifecycle.js";
import { dispatch } from "./methods/index.js";
import { callTool } from "./methods/tools.js";
import { createRemoteAgents } from "./remotes/remote-agents.js";
import { RunTable } from "./run-table.js";
import { recordingRunner, recordingWriter, recordRequestsAndDeliveries } from "./runner/recording.js";
import { followInterrupts } from "./runs/interrupt.js";
import { holdGatewayLease } from "./runs/ownership.js";
import { recoverRuns } from "./runs/recovery.js";
import { emitFinal } from "./runs/run-events.js";
import { isFinal } from "./runs/wait.js";
import type { CreatedRun } from "./server/event-routing.js";
import { type GatewayServer, listenGateway } from "./server/listen.js";
import { operatorKey } from "./sessions/entries.js";
import { createSqliteStore } from "./store/sqlite.js";
import { sweepArchive } from "./subagents/archive.js";
import { followSubagents } from "./subagents/finished.js";
import { buildTools } from "./tools/build.js";
import { markSandboxed, toolContextFor } from "./tools/tool-context.js";
import { loadTracing } from "./tracing/load.js";

function channelsOf(adapters: readonly ChannelAdapterV1[]): Channels {
  const map = new Map<string, ChannelAdapterV1>();
  const aliases: Record<string, string> = {};
  for (const adapter of adapters) {
    const channel = normalizeChannelId(adapter.channel);
    if (channel === undefined || adapter.specVersion !== 1 || typeof adapter.deliver !== "function") {
      throw new SessionsError("invalid_config", `Invalid channel adapter ${String(adapter?.channel)}`, {
        field: "adapters",
      });
    }
    map.set(channel, adapter);
    for (const alias of adapter.aliases ?? []) aliases[alias.trim().toLowerCase()] = channel;
  }
  return { adapters: map, aliases };
}

/**
 * Creates an embedded gateway: composes the feature modules around one context. Invalid config throws a
 * `SessionsError` (`invalid_config`) naming the path.
 */
export function createGateway(options: GatewayOptions): Gateway {
  if (options === null || typeof options !== "object") {
    throw new SessionsError("invalid_config", "createGateway needs an options object");
  }
  if (options.runner === undefined || typeof options.runner?.run !== "function") {
    throw new SessionsError("invalid_config", "createGateway: runner must implement run(request)", {
      field: "runner",
    });
  }
  const config = parseSessionsConfig(options.config ?? {});
  const clock = options.clock ?? systemClock;
  const logger = (options.logger ?? silentLogger).child("gateway");
  const channels = channelsOf(options.adapters ?? []);
  const store = options.store ?? createSqliteStore({ path: options.path ?? ".sessions/sessions.db" });

  const listeners = new Set<(event: GatewayEvent) => void>();
  const emitHere = (event: GatewayEvent) => {
    for (const listener of listeners) {
      try {
        listener(event);
      } catch (error) {
        logger.warn("event listener threw", { error: String(error) });
      }
    }
  };
  // In a cluster, what this gateway raises reaches the clients of the others too.
  const emit = (event: GatewayEvent) => {
    emitHere(event);
    clustered?.published(event);
  };
  const background = new Set<Promise<unknown>>();
  let closed = false;
  const tasks: Tasks = {
    get closed() {
      return closed;
    },
    track(promise) {
      background.add(promise);
      void promise.then(
        () => background.delete(promise),
        (error) => {
          background.delete(promise);
          logger.error("background task failed", { error: String(error) });
        },
      );
      return promise;
    },
  };

  // Servers route events by run: they learn of each run before it can emit.
  const runWatchers = new Set<(run: CreatedRun) => void>();
  const owner = randomUUID();
  const cluster = clusterSettings(options.cluster, store);
  let clustered: ReturnType<typeof startCluster> | undefined;
  const connections = new Set<HeldConnection>();
  const lifecycle = new Lifecycle(logger);
  const record = options.record === undefined ? undefined : recordingWriter(options.record);
  if (record !== undefined) lifecycle.subscribe(recordRequestsAndDeliveries(record));
  const ctx: GatewayContext = {
    owner,
    config,
    store,
    clock,
    logger,
    runner: record === undefined ? options.runner : recordingRunner(options.runner, record),
    remotes: createRemoteAgents(config, process.env),
    channels,
    outbox: createOutbox({
      store,
      clock,
      logger,
      adapters: channels.adapters,
      sendPolicy: () => config.session.sendPolicy,
      options: options.outbox ?? {},
      owner,
      onFinal: (record) => {
        emit({ type: "delivery", record });
        lifecycle.emit("deliveryFinal", record);
      },
      onAttempt: (record, attempt) => lifecycle.emit("deliveryAttempted", record, attempt),
    }),
    runs: new RunTable(config.agents.defaults.subagents.maxConcurrent),
    locks: { bindings: new Lanes(), idempotency: new Lanes(), spawns: new Lanes(), budgets: new Lanes() },
    tasks,
    timers: {
      archive: createDeadlineTimer(clock, () => void tasks.track(sweepArchive(ctx))),
      bindings: createDeadlineTimer(clock, () => void tasks.track(sweepBindings(ctx))),
    },
    extraTools: options.tools ?? [],
    knownModels: options.models ?? options.runner.models,
    historyWindow: Math.max(1, options.historyWindow ?? 50),
    get cluster() {
      return clustered;
    },
    emit,
    listening: () => listeners.size > 0 || clustered !== undefined,
    lifecycle,
    toolsFor: (tool, run, lane) => buildTools(ctx, tool, run, lane),
  };
  // What follows a run or a delivery, in the modules it belongs to.
  lifecycle.subscribe(followAgentToAgent(ctx));
  lifecycle.subscribe(followSubagents(ctx));
  lifecycle.subscribe(followThreadBindings(ctx));
  lifecycle.subscribe(followInterrupts(ctx));
  // Servers and the cluster route events by run: they learn of each run before it can emit.
  lifecycle.subscribe({
    accepted(run) {
      clustered?.runCreated(run);
      announceRun(run);
    },
    resumed(run) {
      clustered?.runCreated(run);
      announceRun(run);
    },
  });
  function announceRun(run: CreatedRun): void {
    for (const watcher of runWatchers) {
      try {
        watcher(run);
      } catch (error) {
        logger.warn("run watcher threw", { runId: run.runId, error: String(error) });
      }
    }
  }

  // Waits end on the store's change feed, so a run that ends anywhere (here or in another process) wakes them.
  const unwatch = store.watch((change) => {
    if (change.type !== "run" || !isFinal(change.status)) return;
    const local = ctx.runs.localRun(change.runId);
    // A run this process ends itself wakes its waiters as it ends (no read needed); one still queued here was
    // ended by someone else (another run took its message, or recovery): its waiters hear of it now.
    if (local !== undefined ? local.status !== "queued" : !ctx.runs.isAwaited(change.runId)) return;
    store.getRun(change.runId).then(
      (run) => {
        if (run === undefined || !isFinal(run.status)) return;
        if (local !== undefined && run.mergedInto !== undefined) emitFinal(ctx, run);
        ctx.runs.settle(run);
      },
      (error) => logger.warn("run re-read failed", { runId: change.runId, error: String(error) }),
    );
  });
  // Several gateways on the store: shared lanes, other gateways' run events, and recovery every few seconds.
  if (cluster !== undefined) {
    clustered = startCluster(ctx, cluster, {
      async recover() {
        await recoverRuns(ctx);
        await ctx.outbox.replay();
      },
      emitHere,
      announceRun,
    });
  }
  let lease: { release(): Promise<void> } | undefined;
  const tracing = options.tracing === false ? undefined : loadTracing(ctx);
  const ready = (async () => {
    // Traced from the first run (recovery's follow-ups too).
    await tracing;
    lease = await holdGatewayLease(ctx, cluster?.leaseTtlMs, clustered?.contact);
    await recoverRuns(ctx);
    await ctx.outbox.replay();
    await sweepArchive(ctx);
    await sweepBindings(ctx);
  })();
  ready.catch((error) => logger.error("gateway recovery failed", { error: String(error) }));

  // Once recovery is done, a call goes straight to its method (no extra promise and turn per call).
  let isReady = false;
  ready.then(
    () => {
      isReady = true;
    },
    () => undefined,
  );
  function dispatchWhenReady(method: GatewayMethodName, params: unknown, wire: boolean): Promise<unknown> {
    if (!isReady) return ready.then(() => dispatch(ctx, method, params, wire));
    try {
      return dispatch(ctx, method, params, wire);
    } catch (error) {
      return Promise.reject(error);
    }
  }
  const call = (method: GatewayMethodName, params?: unknown) => dispatchWhenReady(method, params, false);

  const servers = new Set<GatewayServer>();
  const self: Gateway = {
    config,
    store,
    ready,
    async listen(listenOptions) {
      const server = await listenGateway(self, listenOptions, {
        callForWire: (method, params) => dispatchWhenReady(method, params, true),
        watchRuns(watcher) {
          runWatchers.add(watcher);
          return () => runWatchers.delete(watcher);
        },
      });
      servers.add(server);
      const close = server.close.bind(server);
      return {
        get url() {
          return server.url;
        },
        host: server.host,
        port: server.port,
        connections: () => server.connections(),
        stopAccepting: () => server.stopAccepting(),
        async close(closeOptions) {
          servers.delete(server);
          await close(closeOptions);
        },
      };
    },
    async tools(requesterKey, opts = {}) {
      await ready;
      const key = operatorKey(ctx, requesterKey, "requesterKey");
      const sandboxed = opts.sandboxed === true;
      const entry = sandboxed ? await markSandboxed(ctx, key) : await store.getEntry(key);
      return buildTools(ctx, toolContextFor(ctx, entry, key, sandboxed));
    },
    async callTool(requesterKey, name, params, opts = {}) {
      await ready;
      return callTool(ctx, requesterKey, name, params, opts);
    },
    async receive(inbound) {
      await ready;
      return receive(ctx, inbound);
    },
    call,
    sessions: {
      list: (params) => call("sessions.list", params) as ReturnType<Gateway["sessions"]["list"]>,
      search: (params) => call("sessions.search", params) as ReturnType<Gateway["sessions"]["search"]>,
      resolve: (params) => call("sessions.resolve", params) as ReturnType<Gateway["sessions"]["resolve"]>,
      patch: (params) => call("sessions.patch", params) as ReturnType<Gateway["sessions"]["patch"]>,
      delete: (params) => call("sessions.delete", params) as ReturnType<Gateway["sessions"]["delete"]>,
    },
    chat: {
      history: (params) => call("chat.history", params) as ReturnType<Gateway["chat"]["history"]>,
      send: (params) => call("chat.send", params) as ReturnType<Gateway["chat"]["send"]>,
      abort: (params) => call("chat.abort", params) as ReturnType<Gateway["chat"]["abort"]>,
    },
    agent: (params) => call("agent", params) as ReturnType<Gateway["agent"]>,
    agentWait: (params) => call("agent.wait", params) as ReturnType<Gateway["agentWait"]>,
    agents: { list: (params) => call("agents.list", params) as ReturnType<Gateway["agents"]["list"]> },
    runs: {
      list: (params) => call("runs.list", params) as ReturnType<Gateway["runs"]["list"]>,
      tree: (params) => call("runs.tree", params) as ReturnType<Gateway["runs"]["tree"]>,
    },
    deliveries: {
      get: (params) => call("deliveries.get", params) as ReturnType<Gateway["deliveries"]["get"]>,
      list: (params) => call("deliveries.list", params) as ReturnType<Gateway["deliveries"]["list"]>,
    },
    async sweep() {
      await sweepArchive(ctx);
      await sweepBindings(ctx);
    },
    async threadClosed(event) {
      await ready;
      return threadClosed(ctx, event);
    },
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    lifecycle: { subscribe: (hooks) => lifecycle.subscribe(hooks) },
    holdConnection(
      nameOrConnection: string | (ExclusiveConnection & { readonly name: string }),
      given?: ExclusiveConnection,
    ) {
      const named = typeof nameOrConnection === "object" && nameOrConnection !== null;
      const name = named ? nameOrConnection.name : nameOrConnection;
      const connection = named ? nameOrConnection : given;
      if (typeof name !== "string" || name.trim() === "" || name.length > 200) {
        throw new SessionsError("invalid_params", "holdConnection: name must be 1–200 characters", {
          field: "name",
        });
      }
      if (typeof connection?.start !== "function" || typeof connection.stop !== "function") {
        throw new SessionsError("invalid_params", "holdConnection: connection needs start() and stop()", {
          field: "connection",
        });
      }
      if (closed) throw new SessionsError("unavailable", "The gateway is closed");
      const settings = cluster ?? (clusterSettings(true, store) as NonNullable<typeof cluster>);
      const held = holdExclusiveConnection(
        { store, clock, owner, settings, logger },
        name,
        connection as ExclusiveConnection,
      );
      connections.add(held);
      return held;
    },
    async close(opts = {}) {
      if (closed) return;
      // Graceful order: refuse new connections, let running work finish (up to drainMs), then say shutdown.
      for (const server of servers) server.stopAccepting();
      // Exclusive connections go first, so another gateway takes them over while this one drains.
      await Promise.all([...connections].map((held) => held.release()));
      await ready.catch(() => undefined);
      const deadline = Date.now() + (opts.drainMs ?? 5000);
      while (background.size > 0 && Date.now() < deadline) {
        await Promise.race([
          Promise.allSettled([...background]),
          new Promise((r) => setTimeout(r, Math.max(1, deadline - Date.now()))),
        ]);
      }
      await Promise.all([...servers].map((server) => server.close({ reason: "gateway closing" })));
      servers.clear();
      closed = true;
      ctx.runs.abortAll();
      ctx.outbox.stop();
      await ctx.outbox.drain(opts.drainMs ?? 5000);
      ctx.timers.archive.stop();
      ctx.timers.bindings.stop();
      await Promise.allSettled([...background]);
      unwatch();
      await clustered?.stop();
      await lease?.release();
      await store.close();
    },
  };
  return self;
}
