import { randomUUID } from "node:crypto";
import {
  type AgentEventPayload,
  type AgentsListResult,
  buildPeerSessionKey,
  buildSubagentSessionKey,
  type ChatEventPayload,
  type ChatType,
  channelOf,
  checkSessionAccess,
  type DeliveryContext,
  defaultAgentId,
  findAgentConfig,
  formatSubagentAnnounce,
  type GatewayMethodName,
  type InterSessionProvenance,
  isAnnounceSkip,
  isReplySkip,
  isReservedKey,
  type Logger,
  looksLikeSessionId,
  METHOD_PARAMS,
  type MethodParams,
  mergeDeliveryContext,
  normalizeAccountId,
  normalizeAgentId,
  normalizeChannelId,
  normalizeDeliveryContext,
  parseSendCommand,
  parseSessionKey,
  parseSessionsConfig,
  parseToolParams,
  resolveAnnounceTarget,
  resolveSendPolicy,
  resolveThreadBindings,
  resolveVisibility,
  type SessionRow,
  type SessionsConfig,
  type SessionsConfigInput,
  SessionsError,
  type SessionsHistoryResult,
  type SessionsListResult,
  type SessionsSendResult,
  type SessionsSpawnResult,
  type SessionToolName,
  sessionKindOf,
  sessionTools,
  silentLogger,
  type TranscriptMessage,
  toSessionsError,
  toStoreKey,
} from "@sessions/core";
import { z } from "zod";
import type { ChannelAdapterV1, DeliveryTarget, InboundMessage, ReceiveResult } from "./adapter.js";
import { type Clock, createDeadlineTimer, systemClock } from "./clock.js";
import { Lanes, Semaphore } from "./lanes.js";
import { createOutbox, type OutboxOptions } from "./outbox.js";
import type { AgentRunEvent, AgentRunner, RunnerTool } from "./runner/types.js";
import { type GatewayServer, type ListenOptions, listenGateway } from "./server.js";
import { createSqliteStore } from "./store/sqlite.js";
import type {
  DeliveryRecord,
  RunKind,
  RunRecord,
  SessionStore,
  StoredEntry,
  StoredMessage,
  SubagentRecord,
  ThreadBindingRecord,
} from "./store/types.js";
import { isToolMessage, toolResultText } from "./transcript.js";

export interface GatewayOptions {
  /** The sessions config (validated with the core schema; defaults filled in). */
  config?: SessionsConfigInput;
  /** Where everything is kept. Default: a SQLite file at `path`. */
  store?: SessionStore;
  /** SQLite file used when no `store` is given (default `./.sessions/sessions.db`). */
  path?: string;
  runner: AgentRunner;
  adapters?: readonly ChannelAdapterV1[];
  /** Extra tools every agent gets (sub-agents too, unless `tools.subagents.tools` filters them). */
  tools?: readonly RunnerTool[];
  logger?: Logger;
  clock?: Clock;
  /** Model ids accepted for `sessions_spawn({ model })`; default: the runner's list, else any. */
  models?: readonly string[];
  outbox?: OutboxOptions;
  /** How many recent messages a run sees (default 50). */
  historyWindow?: number;
}

export type GatewayEvent =
  | ({ type: "chat" } & ChatEventPayload)
  | ({ type: "agent" } & AgentEventPayload)
  | { type: "sessions.changed"; key: string; reason: string }
  | { type: "delivery"; record: DeliveryRecord };

export interface WaitResult {
  runId: string;
  status: "ok" | "error" | "timeout";
  startedAt?: number;
  endedAt?: number;
  error?: string;
  reply?: string;
}

export interface GatewayTool extends RunnerTool {
  name: SessionToolName | string;
}

export interface Gateway {
  readonly config: SessionsConfig;
  readonly store: SessionStore;
  /** Resolves when recovery after a restart has finished; every method waits for it. */
  readonly ready: Promise<void>;
  /** The tools for a requester session, bound to it, with their zod contracts. */
  tools(requesterKey: string, options?: { sandboxed?: boolean }): Promise<GatewayTool[]>;
  /** Executes one session tool as `requesterKey` (validates params; invalid → `invalid_params`). */
  callTool(
    requesterKey: string,
    name: string,
    params: unknown,
    options?: { sandboxed?: boolean },
  ): Promise<unknown>;
  /** Takes a chat message from an adapter: routes it, runs the agent, delivers the reply. */
  receive(inbound: InboundMessage): Promise<ReceiveResult>;
  /** Calls a gateway method by its wire name with validated params. */
  call(method: GatewayMethodName, params?: unknown): Promise<unknown>;
  sessions: {
    list(params?: MethodParams<"sessions.list">): Promise<SessionsListPayload>;
    resolve(params: MethodParams<"sessions.resolve">): Promise<{ ok: true; key: string }>;
    patch(params: MethodParams<"sessions.patch">): Promise<{ ok: true; key: string; entry: StoredEntry }>;
    delete(params: MethodParams<"sessions.delete">): Promise<{ ok: true; key: string; deleted: boolean }>;
  };
  chat: {
    history(params: MethodParams<"chat.history">): Promise<ChatHistoryPayload>;
    send(
      params: MethodParams<"chat.send">,
    ): Promise<{ runId: string; status: "started" | "in_flight" | "ok" | "error" }>;
    abort(params: MethodParams<"chat.abort">): Promise<{ ok: true; aborted: boolean; runIds: string[] }>;
  };
  agent(
    params: MethodParams<"agent">,
  ): Promise<{ runId: string; sessionKey: string; agentId: string; status: "accepted"; acceptedAt: number }>;
  agentWait(params: MethodParams<"agent.wait">): Promise<WaitResult>;
  agents: { list(params?: MethodParams<"agents.list">): Promise<AgentsListPayload> };
  deliveries: {
    get(params: MethodParams<"deliveries.get">): Promise<DeliveryRecord>;
    list(params?: MethodParams<"deliveries.list">): Promise<{ deliveries: DeliveryRecord[] }>;
  };
  /** Serves this gateway over WebSocket (PROTOCOL.md) until the server or the gateway is closed. */
  listen(options?: ListenOptions): Promise<GatewayServer>;
  /** Runs the archive and thread-binding sweeps now (they also run on their own timers). */
  sweep(): Promise<void>;
  /** An adapter reports a platform thread archived or deleted; its binding (if any) ends. */
  threadClosed(event: { channel: string; accountId?: string; threadId: string }): Promise<boolean>;
  subscribe(listener: (event: GatewayEvent) => void): () => void;
  /** Stops timers, waits for work under way (up to `drainMs`), closes the store. */
  close(options?: { drainMs?: number }): Promise<void>;
}

export interface GatewayRow {
  key: string;
  kind: "direct" | "group" | "global" | "unknown";
  label?: string;
  displayName?: string;
  channel?: string;
  chatType?: ChatType;
  updatedAt: number;
  sessionId: string;
  spawnedBy?: string;
  sendPolicy?: "allow" | "deny";
  model?: string;
  contextTokens?: number;
  inputTokens?: number;
  outputTokens?: number;
  totalTokens?: number;
  thinkingLevel?: string;
  systemSent?: boolean;
  abortedLastRun?: boolean;
  lastChannel?: string;
  lastTo?: string;
  lastAccountId?: string;
  deliveryContext?: DeliveryContext;
}

export interface SessionsListPayload {
  ts: number;
  count: number;
  totalCount?: number;
  hasMore: boolean;
  nextOffset: number | null;
  sessions: GatewayRow[];
}

export interface ChatHistoryPayload {
  sessionKey: string;
  sessionId: string;
  messages: StoredMessage[];
  totalMessages: number;
  hasMore: boolean;
  nextOffset: number | null;
}

export interface AgentsListPayload {
  defaultId: string;
  mainKey: string;
  scope: string;
  agents: { id: string; name?: string }[];
}

interface ToolContext {
  requesterKey: string;
  agentId: string;
  sandboxed: boolean;
  depth: number;
  isSubagent: boolean;
}

interface RunSpec {
  /** Set when the caller must know the id before the run exists (sub-agent records). */
  runId?: string;
  followUp?: RunRecord["followUp"];
  sessionKey: string;
  kind: RunKind;
  input: TranscriptMessage;
  idempotencyKey?: string;
  deliverTo?: DeliveryContext;
  system?: string[];
  tools: ToolContext | null;
  timeoutMs?: number;
  model?: string;
  thinking?: string;
  subagentSlot?: boolean;
  onSettled?: (run: RunRecord) => Promise<void>;
}

const FINAL_STATUSES = new Set(["ok", "error", "timeout", "aborted"]);
/** Turns on these surfaces are recorded but never overwrite a session's route (SPEC 8.1). */
const INTERNAL_ROUTE_CHANNELS = new Set(["webchat", "internal"]);

const idText = z.union([z.string(), z.number().finite()]).transform((v) => String(v).trim());
const InboundMessageSchema = z.object({
  channel: z.string().trim().min(1),
  accountId: z.string().trim().min(1).optional(),
  chatType: z.enum(["direct", "group", "channel"]),
  peerId: idText.pipe(z.string().min(1)),
  senderId: idText.pipe(z.string().min(1)),
  senderName: z.string().optional(),
  isOwner: z.boolean().optional(),
  // A colon would split the key: thread ids keep everything else as sent.
  threadId: idText.transform((v) => v.replace(/:/g, "_")).optional(),
  threadKind: z.enum(["thread", "topic"]).optional(),
  parentId: idText.optional(),
  to: z.string().trim().min(1),
  text: z.string().max(256 * 1024),
  messageId: idText.optional(),
  displayName: z.string().optional(),
  agentId: z.string().trim().min(1).optional(),
});
const MAX_HISTORY_FIELD = 4000;
const MAX_HISTORY_BYTES = 80 * 1024;
const A2A_TURN_WAIT_MS = 10 * 60_000;

class RunTimeout extends Error {
  constructor(readonly seconds: number) {
    super(`run timed out after ${seconds}s`);
  }
}

class RunAborted extends Error {
  constructor() {
    super("run aborted");
  }
}

function sessionsError(
  code: ConstructorParameters<typeof SessionsError>[0],
  message: string,
  field?: string,
) {
  return new SessionsError(code, message, field === undefined ? {} : { field });
}

function parseParams<M extends GatewayMethodName>(method: M, params: unknown) {
  const result = METHOD_PARAMS[method].safeParse(params ?? {});
  if (!result.success) throw toSessionsError(result.error, "invalid_params", `Invalid ${method} params`);
  return result.data as never;
}

/** Provenance of a message one session puts into another (SPEC 3.3): never mistaken for user input. */
function interSession(
  sourceSessionKey: string,
  sourceChannel: string,
  sourceTool: "sessions_send" | "sessions_spawn",
): InterSessionProvenance {
  return { kind: "inter_session", sourceSessionKey, sourceChannel, sourceTool };
}

function connectionOnly(method: string): SessionsError {
  return new SessionsError(
    "invalid_params",
    `${method} is a WebSocket connection method; in process use gateway.subscribe()`,
    {
      field: "method",
    },
  );
}

function truncateText(text: string): string {
  if (text.length <= MAX_HISTORY_FIELD) return text;
  return `${text.slice(0, MAX_HISTORY_FIELD)}… [truncated ${text.length - MAX_HISTORY_FIELD} chars]`;
}

function boundMessage(message: StoredMessage): StoredMessage {
  const copy: StoredMessage = { ...message };
  if (typeof copy.content === "string") copy.content = truncateText(copy.content);
  else {
    copy.content = copy.content.map((part) => {
      const next = { ...part };
      for (const [k, v] of Object.entries(next)) if (typeof v === "string") next[k] = truncateText(v);
      if ("output" in next && typeof next.output !== "string") {
        const json = JSON.stringify(next.output) ?? "";
        if (json.length > MAX_HISTORY_FIELD) next.output = truncateText(json);
      }
      return next;
    });
  }
  return copy;
}

/** Creates an embedded gateway. Invalid config throws a `SessionsError` (`invalid_config`) naming the path. */
export function createGateway(options: GatewayOptions): Gateway {
  if (options === null || typeof options !== "object") {
    throw sessionsError("invalid_config", "createGateway needs an options object");
  }
  if (options.runner === undefined || typeof options.runner?.run !== "function") {
    throw sessionsError("invalid_config", "createGateway: runner must implement run(request)", "runner");
  }
  const config = parseSessionsConfig(options.config ?? {});
  const clock = options.clock ?? systemClock;
  const logger = (options.logger ?? silentLogger).child("gateway");
  const store = options.store ?? createSqliteStore({ path: options.path ?? ".sessions/sessions.db" });
  const runner = options.runner;
  const historyWindow = Math.max(1, options.historyWindow ?? 50);
  const mainKey = config.session.mainKey;
  const adapters = new Map<string, ChannelAdapterV1>();
  const aliases: Record<string, string> = {};
  for (const adapter of options.adapters ?? []) {
    const channel = normalizeChannelId(adapter.channel);
    if (channel === undefined || adapter.specVersion !== 1 || typeof adapter.deliver !== "function") {
      throw sessionsError(
        "invalid_config",
        `Invalid channel adapter ${String(adapter?.channel)}`,
        "adapters",
      );
    }
    adapters.set(channel, adapter);
    for (const alias of adapter.aliases ?? []) aliases[alias.trim().toLowerCase()] = channel;
  }
  const knownModels = options.models ?? runner.models;
  const extraTools = options.tools ?? [];
  const subagentDefaults = config.agents.defaults.subagents;

  const lanes = new Lanes();
  const entryLocks = new Lanes();
  const idempotencyLocks = new Lanes();
  const spawnLocks = new Lanes();
  const subagentSlots = new Semaphore(subagentDefaults.maxConcurrent);
  const active = new Map<string, { controller: AbortController; sessionKey: string }>();
  const waiters = new Map<string, Set<(run: RunRecord) => void>>();
  const background = new Set<Promise<unknown>>();
  const listeners = new Set<(event: GatewayEvent) => void>();
  const chatSeq = new Map<string, number>();
  let closed = false;
  const archiveTimer = createDeadlineTimer(clock, () => void track(sweep()));
  const bindingTimer = createDeadlineTimer(clock, () => void track(sweepBindings()));
  const scheduleArchive = (at: number) => archiveTimer.schedule(at);
  const scheduleBindingSweep = (at: number) => bindingTimer.schedule(at);

  const now = () => clock.now();
  const emit = (event: GatewayEvent) => {
    for (const listener of listeners) {
      try {
        listener(event);
      } catch (error) {
        logger.warn("event listener threw", { error: String(error) });
      }
    }
  };
  const track = <T>(promise: Promise<T>): Promise<T> => {
    background.add(promise);
    void promise.then(
      () => background.delete(promise),
      (error) => {
        background.delete(promise);
        logger.error("background task failed", { error: String(error) });
      },
    );
    return promise;
  };

  const outbox = createOutbox({
    store,
    clock,
    logger,
    adapters,
    sendPolicy: () => config.session.sendPolicy,
    options: options.outbox ?? {},
    onFinal: (record) => {
      emit({ type: "delivery", record });
      if (record.kind === "subagent_announce") track(cleanupAfterAnnounce(record));
    },
  });

  // ------------------------------------------------------------------ entries

  const storeKey = (agentId: string, key: unknown) => {
    if (
      config.session.scope === "global" &&
      typeof key === "string" &&
      key.trim().toLowerCase() === "global"
    ) {
      return toStoreKey({ agentId, key: "main", mainKey });
    }
    return toStoreKey({ agentId, key, mainKey });
  };
  const kindOf = (entry: Pick<StoredEntry, "key" | "chatType">) =>
    sessionKindOf(entry.key, {
      mainKey,
      ...(entry.chatType === undefined ? {} : { chatType: entry.chatType }),
    });

  function newEntry(key: string, init: Partial<StoredEntry> = {}): StoredEntry {
    const parsed = parseSessionKey(key);
    const t = now();
    const entry = {
      ...init,
      key,
      sessionId: randomUUID(),
      agentId: parsed?.agentId ?? normalizeAgentId(undefined),
      createdAt: t,
      updatedAt: t,
    } as StoredEntry;
    if (entry.chatType === undefined && parsed !== null && parsed.chatType !== "unknown")
      entry.chatType = parsed.chatType;
    if (entry.channel === undefined && parsed?.channel !== undefined) entry.channel = parsed.channel;
    entry.kind = kindOf(entry);
    return entry;
  }

  function updateEntry(
    key: string,
    fn: (entry: StoredEntry | undefined) => StoredEntry | undefined,
    reason = "updated",
  ): Promise<StoredEntry | undefined> {
    return entryLocks.run(key, async () => {
      const current = await store.getEntry(key);
      const next = fn(current);
      if (next === undefined) return current;
      next.kind = kindOf(next);
      await store.putEntry(next);
      emit({ type: "sessions.changed", key, reason });
      return next;
    });
  }

  const ensureEntry = (key: string, init: Partial<StoredEntry> = {}) =>
    updateEntry(
      key,
      (entry) => (entry === undefined ? newEntry(key, init) : undefined),
      "created",
    ) as Promise<StoredEntry>;

  const touch = (key: string, patch: Partial<StoredEntry> = {}) =>
    updateEntry(key, (entry) => (entry === undefined ? undefined : { ...entry, ...patch, updatedAt: now() }));

  // ------------------------------------------------------------------ runs

  function notify(run: RunRecord) {
    const set = waiters.get(run.runId);
    if (set === undefined) return;
    waiters.delete(run.runId);
    for (const resolve of set) resolve(run);
  }

  function nextChatSeq(runId: string): number {
    const seq = (chatSeq.get(runId) ?? 0) + 1;
    chatSeq.set(runId, seq);
    return seq;
  }

  async function startRun(spec: RunSpec): Promise<{ run: RunRecord; created: boolean }> {
    if (closed) throw new SessionsError("unavailable", "The gateway is closing", { retryAfterMs: 1000 });
    const create = async (): Promise<{ run: RunRecord; created: boolean }> => {
      if (spec.idempotencyKey !== undefined) {
        const existing = await store.findRunByIdempotencyKey(spec.idempotencyKey);
        if (existing !== undefined) return { run: existing, created: false };
      }
      const runId = spec.runId ?? randomUUID();
      const stored = await store.appendMessage(spec.sessionKey, { ...spec.input, runId });
      const run: RunRecord = {
        runId,
        sessionKey: spec.sessionKey,
        agentId: parseSessionKey(spec.sessionKey)?.agentId ?? "main",
        kind: spec.kind,
        status: "queued",
        createdAt: now(),
        inputSeq: stored.seq,
      };
      if (spec.idempotencyKey !== undefined) run.idempotencyKey = spec.idempotencyKey;
      if (spec.deliverTo !== undefined) run.deliverTo = spec.deliverTo;
      if (spec.followUp !== undefined) run.followUp = spec.followUp;
      await store.putRun(run);
      await touch(spec.sessionKey);
      const controller = new AbortController();
      active.set(runId, { controller, sessionKey: spec.sessionKey });
      track(lanes.run(spec.sessionKey, () => executeRun(run, spec, stored, controller)));
      return { run, created: true };
    };
    // Check-then-create under one lock per key, so concurrent retries of one request make one run.
    return spec.idempotencyKey === undefined ? create() : idempotencyLocks.run(spec.idempotencyKey, create);
  }

  async function executeRun(
    queued: RunRecord,
    spec: RunSpec,
    input: StoredMessage,
    controller: AbortController,
  ): Promise<RunRecord> {
    const release = spec.subagentSlot ? await subagentSlots.acquire() : undefined;
    let timer: unknown;
    let run: RunRecord = { ...queued, status: "running", startedAt: now() };
    try {
      if (closed) throw new SessionsError("unavailable", "gateway closed before the run started");
      if (controller.signal.aborted) throw controller.signal.reason;
      const latest = await store.getRun(queued.runId);
      if (latest !== undefined && latest.status !== "queued") return latest;
      await store.putRun(run);
      emit({
        type: "agent",
        runId: run.runId,
        seq: nextChatSeq(run.runId),
        stream: "lifecycle",
        ts: now(),
        data: { phase: "start" },
      });
      if (spec.timeoutMs !== undefined && spec.timeoutMs > 0) {
        const seconds = Math.round(spec.timeoutMs / 1000);
        timer = clock.setTimeout(() => controller.abort(new RunTimeout(seconds)), spec.timeoutMs);
      }
      const entry = await store.getEntry(spec.sessionKey);
      const history = await store.readMessages(spec.sessionKey, {
        limit: historyWindow,
        beforeSeq: input.seq + 1,
      });
      const tools = spec.tools === null ? [] : buildTools(spec.tools, run.runId);
      const aborted = new Promise<never>((_, reject) => {
        if (controller.signal.aborted) reject(controller.signal.reason);
        controller.signal.addEventListener("abort", () => reject(controller.signal.reason), { once: true });
      });
      aborted.catch(() => {});
      const model = spec.model ?? entry?.model;
      const thinking = spec.thinking ?? entry?.thinkingLevel;
      const result = await Promise.race([
        runner.run({
          runId: run.runId,
          agentId: run.agentId,
          sessionKey: spec.sessionKey,
          kind: spec.kind,
          ...(model === undefined ? {} : { model }),
          ...(thinking === undefined ? {} : { thinking }),
          messages: history,
          input,
          system: spec.system ?? [],
          tools,
          signal: controller.signal,
          emit: (event: AgentRunEvent) => onRunnerEvent(run, event),
        }),
        aborted,
      ]);
      const reply = typeof result?.reply === "string" ? result.reply : "";
      if (reply.trim() !== "") {
        await store.appendMessage(spec.sessionKey, {
          role: "assistant",
          content: reply,
          ts: now(),
          runId: run.runId,
        });
      }
      run = { ...run, status: "ok", endedAt: now(), reply };
      if (result?.usage !== undefined) run.usage = result.usage;
      const usage = result?.usage;
      await touch(spec.sessionKey, {
        ...(usage?.inputTokens === undefined
          ? {}
          : { inputTokens: (entry?.inputTokens ?? 0) + usage.inputTokens }),
        ...(usage?.outputTokens === undefined
          ? {}
          : { outputTokens: (entry?.outputTokens ?? 0) + usage.outputTokens }),
        ...(usage?.totalTokens === undefined
          ? {}
          : { totalTokens: (entry?.totalTokens ?? 0) + usage.totalTokens }),
        ...(entry?.abortedLastRun ? { abortedLastRun: false } : {}),
        systemSent: true,
      });
    } catch (error) {
      const reason = controller.signal.aborted ? controller.signal.reason : error;
      if (reason instanceof RunTimeout)
        run = { ...run, status: "timeout", error: reason.message, endedAt: now() };
      else if (reason instanceof RunAborted)
        run = { ...run, status: "aborted", error: reason.message, endedAt: now() };
      else
        run = {
          ...run,
          status: "error",
          error: error instanceof Error ? error.message : String(error),
          endedAt: now(),
        };
      if (run.status === "aborted") await touch(spec.sessionKey, { abortedLastRun: true });
    } finally {
      if (timer !== undefined) clock.clearTimeout(timer);
      active.delete(queued.runId);
      release?.();
    }
    // The reply is queued before the run is recorded as ok, so a crash in between cannot lose it.
    if (run.status === "ok" && run.reply && run.deliverTo?.channel && run.deliverTo.to) {
      await outbox.enqueue({
        idempotencyKey: `reply:${run.runId}`,
        kind: "reply",
        sessionKey: run.sessionKey,
        runId: run.runId,
        target: run.deliverTo as DeliveryTarget,
        text: run.reply,
      });
    }
    await store.putRun(run);
    emitFinal(run);
    notify(run);
    if (spec.onSettled !== undefined) track(spec.onSettled(run));
    return run;
  }

  function emitFinal(run: RunRecord) {
    const state = run.status === "ok" ? "final" : run.status === "aborted" ? "aborted" : "error";
    // The lifecycle end goes first so stream readers that stop at the final chat event still see it.
    emit({
      type: "agent",
      runId: run.runId,
      seq: nextChatSeq(run.runId),
      stream: "lifecycle",
      ts: now(),
      data: {
        phase: run.status === "ok" ? "end" : "error",
        status: run.status,
        ...(run.error ? { error: run.error } : {}),
      },
    });
    emit({
      type: "chat",
      runId: run.runId,
      sessionKey: run.sessionKey,
      seq: nextChatSeq(run.runId),
      state,
      ...(run.reply ? { message: run.reply } : {}),
      ...(run.error ? { errorMessage: run.error } : {}),
    });
    chatSeq.delete(run.runId);
  }

  function onRunnerEvent(run: RunRecord, event: AgentRunEvent) {
    if (event.type === "text-delta") {
      emit({
        type: "chat",
        runId: run.runId,
        sessionKey: run.sessionKey,
        seq: nextChatSeq(run.runId),
        state: "delta",
        deltaText: event.text,
      });
      emit({
        type: "agent",
        runId: run.runId,
        seq: nextChatSeq(run.runId),
        stream: "assistant",
        ts: now(),
        data: { text: event.text },
      });
    } else {
      emit({
        type: "agent",
        runId: run.runId,
        seq: nextChatSeq(run.runId),
        stream: "tool",
        ts: now(),
        data: event,
      });
    }
  }

  function toWaitResult(run: RunRecord): WaitResult {
    const result: WaitResult = {
      runId: run.runId,
      status: run.status === "ok" ? "ok" : run.status === "timeout" ? "timeout" : "error",
    };
    if (run.startedAt !== undefined) result.startedAt = run.startedAt;
    if (run.endedAt !== undefined) result.endedAt = run.endedAt;
    if (run.error !== undefined) result.error = run.error;
    if (run.reply) result.reply = run.reply;
    return result;
  }

  /** Waits for a run to end, up to `timeoutMs`; never cancels it. */
  async function waitRun(runId: string, timeoutMs: number): Promise<WaitResult> {
    const stored = await store.getRun(runId);
    if (stored === undefined) throw sessionsError("not_found", `Run not found: ${runId}`, "runId");
    if (FINAL_STATUSES.has(stored.status)) return toWaitResult(stored);
    return new Promise<WaitResult>((resolve) => {
      let set = waiters.get(runId);
      if (set === undefined) {
        set = new Set();
        waiters.set(runId, set);
      }
      const onDone = (run: RunRecord) => {
        clock.clearTimeout(timer);
        resolve(toWaitResult(run));
      };
      const timer = clock.setTimeout(() => {
        waiters.get(runId)?.delete(onDone);
        resolve({
          runId,
          status: "timeout",
          ...(stored.startedAt === undefined ? {} : { startedAt: stored.startedAt }),
          error: `Run still in progress after ${Math.round(timeoutMs / 1000)}s; it continues`,
        });
      }, timeoutMs);
      set.add(onDone);
      // The run may have ended between the read above and registering.
      store.getRun(runId).then(
        (latest) => {
          if (latest !== undefined && FINAL_STATUSES.has(latest.status) && set?.has(onDone)) {
            set.delete(onDone);
            onDone(latest);
          }
        },
        (error) => logger.warn("run re-check failed", { runId, error: String(error) }),
      );
    });
  }

  // ------------------------------------------------------------------ tools

  function toolContextFor(
    entry: StoredEntry | undefined,
    requesterKey: string,
    sandboxed: boolean,
  ): ToolContext {
    const parsed = parseSessionKey(requesterKey);
    const isSubagent = parsed?.subagent === true;
    const agentId = parsed?.agentId ?? "main";
    return {
      requesterKey,
      agentId,
      // Sandboxing follows the agent's config on every run path, and children inherit it from their parent.
      sandboxed: sandboxed || findAgentConfig(config, agentId)?.sandboxed === true,
      isSubagent,
      depth: entry?.spawnDepth ?? (isSubagent ? 1 : 0),
    };
  }

  function allowedToolNames(ctx: ToolContext): Set<string> {
    const names = new Set<string>([...Object.keys(sessionTools), ...extraTools.map((t) => t.name)]);
    if (!ctx.isSubagent) return names;
    const filter = config.tools.subagents.tools;
    for (const name of [...names]) {
      if (filter.allow !== undefined && !filter.allow.includes(name)) names.delete(name);
      if (filter.deny.includes(name)) names.delete(name);
    }
    return names;
  }

  function buildTools(ctx: ToolContext, runId?: string): GatewayTool[] {
    const allowed = allowedToolNames(ctx);
    const tools: GatewayTool[] = [];
    let counter = 0;
    const record = async (name: string, params: unknown, exec: () => Promise<unknown>) => {
      const toolCallId = `${runId ?? "direct"}:${++counter}`;
      if (runId !== undefined) {
        await store.appendMessage(ctx.requesterKey, {
          role: "assistant",
          content: [{ type: "tool-call", toolCallId, toolName: name, input: params }],
          ts: now(),
          runId,
        });
      }
      let result: unknown;
      try {
        result = await exec();
      } catch (error) {
        result = SessionsError.isInstance(error)
          ? { status: "error", code: error.code, error: error.message }
          : { status: "error", error: error instanceof Error ? error.message : String(error) };
      }
      if (runId !== undefined) {
        await store.appendMessage(ctx.requesterKey, {
          role: "toolResult",
          content: [{ type: "tool-result", toolCallId, toolName: name, output: result }],
          ts: now(),
          runId,
        });
      }
      return result;
    };
    for (const contract of Object.values(sessionTools)) {
      if (!allowed.has(contract.name)) continue;
      tools.push({
        name: contract.name,
        description: contract.description,
        parameters: contract.parameters,
        jsonSchema: contract.jsonSchema,
        execute: (params) => record(contract.name, params, () => executeTool(ctx, contract.name, params)),
      });
    }
    for (const tool of extraTools) {
      if (!allowed.has(tool.name)) continue;
      tools.push({ ...tool, execute: (params) => record(tool.name, params, () => tool.execute(params)) });
    }
    return tools;
  }

  async function executeTool(ctx: ToolContext, name: SessionToolName, raw: unknown): Promise<unknown> {
    if (!allowedToolNames(ctx).has(name)) {
      return {
        status: "forbidden",
        code: "tool_not_allowed",
        error: `${name} is not available to this session (tools.subagents.tools)`,
      };
    }
    switch (name) {
      case "sessions_list":
        return listTool(ctx, parseToolParams("sessions_list", raw));
      case "sessions_history":
        return historyTool(ctx, parseToolParams("sessions_history", raw));
      case "sessions_send":
        return sendTool(ctx, parseToolParams("sessions_send", raw));
      case "sessions_spawn":
        return spawnTool(ctx, parseToolParams("sessions_spawn", raw));
      case "agents_list":
        parseToolParams("agents_list", raw);
        return agentsListTool(ctx);
    }
  }

  const visibilityFor = (ctx: ToolContext) =>
    resolveVisibility({
      visibility: config.tools.sessions.visibility,
      sandboxed: ctx.sandboxed,
      sandboxVisibility: config.agents.defaults.sandbox.sessionToolsVisibility,
    });

  function access(ctx: ToolContext, action: "list" | "history" | "send", entry: StoredEntry) {
    return checkSessionAccess({
      action,
      requesterKey: ctx.requesterKey,
      targetKey: entry.key,
      visibility: visibilityFor(ctx),
      agentToAgent: config.tools.agentToAgent,
      spawnedBy: entry.spawnedBy,
    });
  }

  const displayKey = (ctx: ToolContext, key: string) =>
    key === toStoreKey({ agentId: ctx.agentId, key: "main", mainKey }) ? "main" : key;

  function notFound(input: string) {
    return {
      status: "not_found" as const,
      code: "not_found",
      error: `Session not found: ${input} (use the key from sessions_list)`,
    };
  }

  type Resolved =
    | { entry: StoredEntry }
    | { status: "not_found" | "forbidden" | "error"; code: string; error: string };

  /** Key or sessionId → a visible entry; hidden sessions look exactly like missing ones. */
  async function resolveTarget(
    ctx: ToolContext,
    input: string,
    action: "history" | "send",
  ): Promise<Resolved> {
    const candidates: StoredEntry[] = [];
    let key: string | undefined;
    try {
      key = storeKey(ctx.agentId, input);
    } catch {
      key = undefined;
    }
    const byKey = key === undefined || isReservedKey(key) ? undefined : await store.getEntry(key);
    if (byKey !== undefined) candidates.push(byKey);
    const keyLike = key !== undefined && (input.includes(":") || input.trim().toLowerCase() === "main");
    if (byKey === undefined && (looksLikeSessionId(input) || !keyLike)) {
      candidates.push(...(await store.findEntriesBySessionId(input.trim().toLowerCase())));
      if (input.trim() !== input.trim().toLowerCase())
        candidates.push(...(await store.findEntriesBySessionId(input.trim())));
    }
    const decisions = candidates.map((entry) => ({ entry, decision: access(ctx, action, entry) }));
    // Only a self-send is worth explaining; every other denial looks exactly like a missing session.
    const visible = decisions.filter((d) => d.decision.allowed || d.decision.code === "send_to_self");
    if (visible.length === 0) return notFound(input);
    if (visible.length > 1) {
      return {
        status: "error",
        code: "ambiguous",
        error: `Several sessions match ${input}: ${visible.map((v) => v.entry.key).join(", ")}`,
      };
    }
    const only = visible[0] as (typeof visible)[number];
    if (!only.decision.allowed)
      return { status: "error", code: only.decision.code, error: only.decision.message };
    return { entry: only.entry };
  }

  function rowFor(ctx: ToolContext, entry: StoredEntry): SessionRow {
    const row: SessionRow = {
      key: displayKey(ctx, entry.key),
      kind: entry.kind,
      channel: channelOf(
        {
          key: entry.key,
          kind: entry.kind,
          ...(entry.channel === undefined ? {} : { channel: entry.channel }),
          ...(entry.lastChannel === undefined ? {} : { lastChannel: entry.lastChannel }),
          ...(entry.deliveryContext === undefined ? {} : { deliveryContext: entry.deliveryContext }),
          ...(entry.chatType === undefined ? {} : { chatType: entry.chatType }),
        },
        aliases,
      ),
      updatedAt: entry.updatedAt,
      sessionId: entry.sessionId,
    };
    const copy = [
      "displayName",
      "label",
      "model",
      "contextTokens",
      "totalTokens",
      "thinkingLevel",
      "verboseLevel",
      "systemSent",
      "abortedLastRun",
      "sendPolicy",
      "lastChannel",
      "lastTo",
    ] as const;
    for (const field of copy)
      if (entry[field] !== undefined) (row as unknown as Record<string, unknown>)[field] = entry[field];
    const ctxDelivery = normalizeDeliveryContext(
      entry.deliveryContext === undefined
        ? undefined
        : {
            channel: entry.deliveryContext.channel,
            to: entry.deliveryContext.to,
            accountId: entry.deliveryContext.accountId,
          },
      aliases,
    );
    if (ctxDelivery !== undefined) row.deliveryContext = ctxDelivery;
    const path = store.transcriptPath?.(entry.sessionId);
    if (path !== undefined) row.transcriptPath = path;
    return row;
  }

  /** Agents whose sessions "all" can show, when that set is finite: the filter then runs in the store. */
  function visibleAgentIds(agentId: string): string[] | undefined {
    const a2a = config.tools.agentToAgent;
    if (!a2a.enabled) return [agentId];
    if (a2a.allow.length === 0 || a2a.allow.some((pattern) => pattern.includes("*"))) return undefined;
    return [...new Set([agentId, ...a2a.allow.map((id) => normalizeAgentId(id))])];
  }

  async function listTool(
    ctx: ToolContext,
    params: ReturnType<typeof parseToolParams<"sessions_list">>,
  ): Promise<SessionsListResult> {
    const visibility = visibilityFor(ctx);
    const since = params.activeMinutes === undefined ? undefined : now() - params.activeMinutes * 60_000;
    const base = {
      ...(params.kinds === undefined ? {} : { kinds: params.kinds }),
      ...(since === undefined ? {} : { updatedSince: since }),
    };
    const rows: StoredEntry[] = [];
    const accept = (entry: StoredEntry) => !isReservedKey(entry.key) && access(ctx, "list", entry).allowed;
    if (visibility === "self" || visibility === "tree") {
      const own = await store.getEntry(ctx.requesterKey);
      const candidates =
        own !== undefined &&
        (since === undefined || own.updatedAt >= since) &&
        (params.kinds === undefined || params.kinds.includes(own.kind)) &&
        own.archivedAt === undefined
          ? [own]
          : [];
      if (visibility === "tree")
        candidates.push(
          ...(await store.listEntries({ ...base, spawnedBy: ctx.requesterKey, limit: params.limit })),
        );
      candidates.sort((a, b) => b.updatedAt - a.updatedAt || (a.key < b.key ? -1 : 1));
      rows.push(...candidates.filter(accept).slice(0, params.limit));
    } else {
      const agentIds = visibility === "agent" ? [ctx.agentId] : visibleAgentIds(ctx.agentId);
      let after: { updatedAt: number; key: string } | undefined;
      const pageSize = Math.max(params.limit, 50);
      for (;;) {
        const page = await store.listEntries({
          ...base,
          ...(agentIds ? { agentIds } : {}),
          ...(after ? { after } : {}),
          limit: pageSize,
        });
        for (const entry of page) {
          if (accept(entry)) rows.push(entry);
          if (rows.length >= params.limit) break;
        }
        const last = page[page.length - 1];
        if (rows.length >= params.limit || page.length < pageSize || last === undefined) break;
        after = { updatedAt: last.updatedAt, key: last.key };
      }
    }
    const sessions: SessionRow[] = [];
    for (const entry of rows) {
      const row = rowFor(ctx, entry);
      if (params.messageLimit > 0) {
        row.messages = await readNonToolMessages(entry.key, params.messageLimit);
      }
      sessions.push(row);
    }
    return { count: sessions.length, sessions };
  }

  /** The newest `limit` messages without tool results, reading back in chunks (cost ∝ limit for normal chats). */
  /** The newest `limit` messages without tool results, reading back in chunks (cost ∝ limit for normal chats). */
  async function readNonToolMessages(key: string, limit: number): Promise<StoredMessage[]> {
    const out: StoredMessage[] = [];
    let before: number | undefined;
    while (out.length < limit) {
      const chunk = await store.readMessages(key, {
        limit: Math.max(limit * 2, 20),
        ...(before === undefined ? {} : { beforeSeq: before }),
      });
      for (let i = chunk.length - 1; i >= 0 && out.length < limit; i--) {
        const message = chunk[i] as StoredMessage;
        if (!isToolMessage(message)) out.push(message);
      }
      const first = chunk[0];
      if (first === undefined || first.seq <= 1) break;
      before = first.seq;
    }
    return out.reverse();
  }

  async function historyTool(
    ctx: ToolContext,
    params: ReturnType<typeof parseToolParams<"sessions_history">>,
  ): Promise<SessionsHistoryResult> {
    const resolved = await resolveTarget(ctx, params.sessionKey, "history");
    if (!("entry" in resolved)) return { ...resolved, sessionKey: params.sessionKey, messages: [] };
    const key = resolved.entry.key;
    const raw = params.includeTools
      ? await store.readMessages(key, { limit: params.limit })
      : await readNonToolMessages(key, params.limit);
    const messages = raw.map(boundMessage);
    let bytes = messages.reduce((n, m) => n + JSON.stringify(m).length + 1, 0);
    let dropped = 0;
    while (bytes > MAX_HISTORY_BYTES && messages.length > 0) {
      const first = messages.shift() as StoredMessage;
      bytes -= JSON.stringify(first).length + 1;
      dropped++;
    }
    const truncated =
      dropped > 0 || messages.some((m, i) => JSON.stringify(m) !== JSON.stringify(raw[i + dropped]));
    return {
      status: "ok",
      sessionKey: displayKey(ctx, key),
      messages,
      ...(truncated ? { truncated: true } : {}),
      ...(dropped > 0 ? { droppedMessages: dropped } : {}),
    };
  }

  async function channelFor(key: string): Promise<string> {
    const entry = await store.getEntry(key);
    if (entry === undefined) return "unknown";
    return channelOf(
      {
        key,
        kind: entry.kind,
        ...(entry.channel ? { channel: entry.channel } : {}),
        ...(entry.lastChannel ? { lastChannel: entry.lastChannel } : {}),
        ...(entry.deliveryContext ? { deliveryContext: entry.deliveryContext } : {}),
      },
      aliases,
    );
  }

  function a2aContext(requesterKey: string, requesterChannel: string, targetKey: string): string {
    return [
      "Agent-to-agent message context:",
      `- This message comes from another agent's session, not from the end user.`,
      `- Requester session: ${requesterKey} (channel ${requesterChannel}).`,
      `- Target session: ${targetKey}.`,
    ].join("\n");
  }

  async function sendTool(
    ctx: ToolContext,
    params: ReturnType<typeof parseToolParams<"sessions_send">>,
  ): Promise<SessionsSendResult> {
    const resolved = await resolveTarget(ctx, params.sessionKey, "send");
    if (!("entry" in resolved)) return resolved;
    const target = resolved.entry;
    const sourceChannel = await channelFor(ctx.requesterKey);
    const { run } = await startRun({
      sessionKey: target.key,
      kind: "inter_session",
      input: {
        role: "user",
        content: params.message,
        ts: now(),
        provenance: interSession(ctx.requesterKey, sourceChannel, "sessions_send"),
      },
      system: [a2aContext(ctx.requesterKey, sourceChannel, target.key)],
      tools: toolContextFor(target, target.key, false),
      followUp: {
        kind: "agent_to_agent",
        requesterKey: ctx.requesterKey,
        requesterChannel: sourceChannel,
        request: params.message,
      },
      onSettled: (primary) => agentToAgentFlow(primary),
    });
    const sessionKey = displayKey(ctx, target.key);
    if (params.timeoutSeconds === 0) {
      return { runId: run.runId, status: "accepted", sessionKey, delivery: { status: "pending" } };
    }
    const waited = await waitRun(run.runId, params.timeoutSeconds * 1000);
    if (waited.status === "ok") {
      return {
        runId: run.runId,
        status: "ok",
        sessionKey,
        ...(waited.reply ? { reply: waited.reply } : {}),
        delivery: { status: "pending" },
      };
    }
    if (waited.status === "timeout" && waited.endedAt === undefined) {
      return {
        runId: run.runId,
        status: "timeout",
        sessionKey,
        error: `No reply within ${params.timeoutSeconds}s; the run continues — read its result later with sessions_history`,
      };
    }
    return { runId: run.runId, status: "error", sessionKey, error: waited.error ?? "run failed" };
  }

  async function runAndWait(spec: RunSpec): Promise<RunRecord> {
    const { run } = await startRun(spec);
    const waited = await waitRun(run.runId, A2A_TURN_WAIT_MS);
    return (await store.getRun(waited.runId)) ?? run;
  }

  /** SPEC 5: reply-back ping-pong, then the announce step (target agent only). */
  /** Runs the follow-up of a `sessions_send` run and marks it done (so a restart resumes it only if needed). */
  async function agentToAgentFlow(primary: RunRecord): Promise<void> {
    const followUp = primary.followUp;
    if (followUp === undefined || closed) return;
    if (primary.status === "ok") {
      await replyBackAndAnnounce(
        followUp.requesterKey,
        followUp.requesterChannel,
        primary.sessionKey,
        followUp.request,
        primary,
      );
    }
    if (closed) return;
    const latest = await store.getRun(primary.runId);
    if (latest !== undefined) await store.putRun({ ...latest, followUpDone: true });
  }

  async function replyBackAndAnnounce(
    requesterKey: string,
    requesterChannel: string,
    targetKey: string,
    request: string,
    primary: RunRecord,
  ): Promise<void> {
    const round1 = primary.reply ?? "";
    let latest = round1;
    const targetChannel = await channelFor(targetKey);
    const maxTurns = config.session.agentToAgent.maxPingPongTurns;
    if (round1.trim() !== "" && !isReplySkip(round1) && requesterKey !== targetKey) {
      for (let turn = 1; turn <= maxTurns && !closed; turn++) {
        const toRequester = turn % 2 === 1;
        const speaker = toRequester ? requesterKey : targetKey;
        const from = toRequester ? targetKey : requesterKey;
        const fromChannel = toRequester ? targetChannel : requesterChannel;
        const speakerEntry = await store.getEntry(speaker);
        if (speakerEntry === undefined) break;
        const run = await runAndWait({
          sessionKey: speaker,
          kind: "ping_pong",
          input: {
            role: "user",
            content: latest,
            ts: now(),
            provenance: interSession(from, fromChannel, "sessions_send"),
          },
          system: [
            a2aContext(from, fromChannel, speaker),
            `Reply-back turn ${turn} of at most ${maxTurns}. Reply REPLY_SKIP to end the conversation.`,
          ],
          tools: toolContextFor(speakerEntry, speaker, false),
        });
        const reply = run.reply ?? "";
        if (run.status !== "ok" || reply.trim() === "" || isReplySkip(reply)) break;
        latest = reply;
      }
    }
    if (closed) return;
    const targetEntry = await store.getEntry(targetKey);
    if (targetEntry === undefined) return;
    const announce = await runAndWait({
      sessionKey: targetKey,
      kind: "announce",
      input: {
        role: "user",
        content: [
          "Agent-to-agent announce step.",
          `Original request from ${requesterKey}:`,
          request,
          "",
          "Round 1 reply:",
          round1,
          "",
          "Latest reply:",
          latest,
        ].join("\n"),
        ts: now(),
        provenance: interSession(requesterKey, requesterChannel, "sessions_send"),
      },
      system: [
        "Announce step: reply ANNOUNCE_SKIP to stay silent; any other reply is posted to this session's channel.",
      ],
      tools: null,
    });
    // A gateway that is closing leaves the announce to the next start (the run's follow-up stays pending).
    if (closed) return;
    const text = announce.reply ?? "";
    const idempotencyKey = `announce:${primary.runId}`;
    const base = { idempotencyKey, kind: "announce" as const, sessionKey: targetKey, runId: primary.runId };
    if (announce.status !== "ok" || text.trim() === "" || isAnnounceSkip(text)) {
      await outbox.enqueue({
        ...base,
        target: { channel: targetChannel, to: "-" },
        text,
        suppressedReason: announce.status !== "ok" ? `announce step ${announce.status}` : "ANNOUNCE_SKIP",
      });
      return;
    }
    const target = resolveAnnounceTarget(targetKey, targetEntry);
    if (target === null) {
      await outbox.enqueue({
        ...base,
        target: { channel: targetChannel, to: "-" },
        text,
        suppressedReason: "target session has no delivery context",
      });
      return;
    }
    await outbox.enqueue({ ...base, target, text });
  }

  async function spawnTool(
    ctx: ToolContext,
    params: ReturnType<typeof parseToolParams<"sessions_spawn">>,
  ): Promise<SessionsSpawnResult> {
    const requester = await store.getEntry(ctx.requesterKey);
    const targetAgent = params.agentId ?? ctx.agentId;
    const requesterConfig = findAgentConfig(config, ctx.agentId);
    const decision = checkSessionAccess({
      action: "spawn",
      requesterKey: ctx.requesterKey,
      targetKey: `agent:${targetAgent}:subagent:new`,
      requesterDepth: ctx.depth,
      maxSpawnDepth: subagentDefaults.maxSpawnDepth,
      allowAgents: requesterConfig?.subagents.allowAgents ?? [],
    });
    if (!decision.allowed) return { status: "forbidden", code: decision.code, error: decision.message };
    const model =
      params.model ??
      findAgentConfig(config, targetAgent)?.subagents.model ??
      requesterConfig?.subagents.model ??
      subagentDefaults.model;
    if (params.model !== undefined && knownModels !== undefined && !knownModels.includes(params.model)) {
      return {
        status: "error",
        code: "unknown_model",
        error: `Unknown model "${params.model}" (known: ${knownModels.join(", ")})`,
      };
    }
    const childKey = buildSubagentSessionKey(targetAgent);
    const runId = randomUUID();
    const record: SubagentRecord = {
      childKey,
      requesterKey: ctx.requesterKey,
      runId,
      task: params.task,
      mode: params.mode,
      cleanup: params.cleanup,
      status: "running",
      createdAt: now(),
      ...(params.label === undefined ? {} : { label: params.label }),
    };
    // Count and reserve under one lock per requester, so parallel spawns cannot overshoot the limit.
    const activeCount = await spawnLocks.run(ctx.requesterKey, async () => {
      const active = await store.listSubagents({
        requesterKey: ctx.requesterKey,
        statuses: ["running", "announcing"],
      });
      if (active.length >= subagentDefaults.maxChildrenPerAgent) return active.length;
      await store.putSubagent(record);
      return undefined;
    });
    if (activeCount !== undefined) {
      return {
        status: "forbidden",
        code: "max_children",
        error: `This session already has ${activeCount} active sub-agents (agents.defaults.subagents.maxChildrenPerAgent is ${subagentDefaults.maxChildrenPerAgent})`,
      };
    }
    const child = await ensureEntry(childKey, {
      spawnedBy: ctx.requesterKey,
      spawnDepth: ctx.depth + 1,
      ...(params.label === undefined ? {} : { label: params.label }),
      ...(model === undefined ? {} : { model }),
      ...(params.thinking === undefined ? {} : { thinkingLevel: params.thinking }),
    });
    if (params.thread) {
      const bound = await bindThread(ctx, requester, child, params.label ?? params.task.slice(0, 60));
      if (!bound.ok) {
        await store.deleteEntry(childKey, { transcript: true });
        await store.putSubagent({
          ...record,
          status: "done",
          outcome: "error",
          error: bound.error,
          endedAt: now(),
        });
        return { status: "error", code: "thread_unavailable", error: bound.error };
      }
    }
    const timeoutSeconds = params.runTimeoutSeconds ?? subagentDefaults.runTimeoutSeconds;
    const childCtx = toolContextFor(child, childKey, ctx.sandboxed);
    const { run } = await startRun({
      runId,
      sessionKey: childKey,
      kind: "subagent",
      input: {
        role: "user",
        content: params.task,
        ts: now(),
        provenance: interSession(ctx.requesterKey, await channelFor(ctx.requesterKey), "sessions_spawn"),
      },
      system: [
        `You are a sub-agent spawned by ${ctx.requesterKey}. Do the task; your final reply is reported back to it.`,
      ],
      tools: childCtx,
      ...(timeoutSeconds > 0 ? { timeoutMs: timeoutSeconds * 1000 } : {}),
      ...(model === undefined ? {} : { model }),
      ...(params.thinking === undefined ? {} : { thinking: params.thinking }),
      subagentSlot: true,
      onSettled: (finished) => subagentFinished(childKey, finished),
    });
    return { status: "accepted", runId: run.runId, childSessionKey: childKey, mode: params.mode };
  }

  async function bindThread(
    ctx: ToolContext,
    requester: StoredEntry | undefined,
    child: StoredEntry,
    name: string,
  ): Promise<{ ok: true } | { ok: false; error: string }> {
    const parent = requester?.deliveryContext;
    const channel = parent?.channel;
    const adapter = channel === undefined ? undefined : adapters.get(channel);
    if (
      parent?.to === undefined ||
      channel === undefined ||
      adapter?.createThread === undefined ||
      adapter.capabilities.threads !== true
    ) {
      return {
        ok: false,
        error: `thread=true needs a requester session on a channel whose adapter can create threads (${channel ?? "no channel"})`,
      };
    }
    const settings = resolveThreadBindings(config, channel, parent.accountId);
    if (!settings.enabled)
      return {
        ok: false,
        error: `Thread bindings are disabled for ${channel} (session.threadBindings.enabled)`,
      };
    try {
      const created = await Promise.race([
        adapter.createThread({ parent: parent as DeliveryTarget, name, sessionKey: child.key }),
        new Promise<never>((_, reject) => {
          setTimeout(() => reject(new Error("the adapter did not answer within 30 s")), 30_000).unref();
        }),
      ]);
      const accountId = normalizeAccountId(parent.accountId);
      const to = created.to ?? parent.to;
      await store.putThreadBinding({
        channel,
        accountId,
        threadId: String(created.threadId),
        sessionKey: child.key,
        to,
        parentTo: parent.to,
        boundAt: now(),
        lastActivityAt: now(),
        idleHours: settings.idleHours,
        maxAgeHours: settings.maxAgeHours,
      });
      scheduleBindingSweep(
        now() +
          Math.min(
            settings.idleHours > 0 ? settings.idleHours * 3_600_000 : Number.POSITIVE_INFINITY,
            settings.maxAgeHours > 0 ? settings.maxAgeHours * 3_600_000 : Number.POSITIVE_INFINITY,
          ),
      );
      await touch(child.key, {
        channel,
        deliveryContext: { channel, to, accountId, threadId: String(created.threadId) },
        lastChannel: channel,
        lastTo: to,
        lastThreadId: String(created.threadId),
      });
      logger.debug("bound thread", {
        requester: ctx.requesterKey,
        child: child.key,
        threadId: created.threadId,
      });
      return { ok: true };
    } catch (error) {
      return {
        ok: false,
        error: `Could not create a thread: ${error instanceof Error ? error.message : String(error)}`,
      };
    }
  }

  /** SPEC 6: the child's announce step, normalised, posted to the requester; then cleanup/archive. */
  async function subagentFinished(childKey: string, run: RunRecord): Promise<void> {
    const record = await store.getSubagent(childKey);
    if (record === undefined || record.status === "done" || closed) return;
    const outcome =
      run.status === "ok"
        ? "ok"
        : run.status === "timeout"
          ? "timeout"
          : run.status === "error" || run.status === "aborted"
            ? "error"
            : "unknown";
    await store.putSubagent({
      ...record,
      status: "announcing",
      endedAt: run.endedAt ?? now(),
      outcome,
      ...(run.error ? { error: run.error } : {}),
    });
    const child = await store.getEntry(childKey);
    let announceReply = "";
    let silent = false;
    if (child !== undefined) {
      const announce = await runAndWait({
        sessionKey: childKey,
        kind: "subagent_announce",
        input: {
          role: "user",
          content: `Announce step: the run ended with status ${outcome}${run.error ? ` (${run.error})` : ""}. Summarise for the requester as "Result:" and "Notes:" sections, or reply ANNOUNCE_SKIP to stay silent.`,
          ts: now(),
        },
        system: ["Sub-agent announce step. Reply ANNOUNCE_SKIP to stay silent."],
        tools: null,
      });
      announceReply = announce.status === "ok" ? (announce.reply ?? "") : "";
      silent = announce.status === "ok" && isAnnounceSkip(announceReply);
      // Closing mid-announce: the record stays "announcing" and the next start announces.
      if (closed) return;
    }
    let deliveryId: string | undefined;
    if (!silent) {
      const reply = announceReply.trim() !== "" ? announceReply : (run.reply ?? "");
      const lastTool =
        child === undefined
          ? undefined
          : (await store.readMessages(childKey, { limit: 20 })).reverse().find(isToolMessage);
      const text = formatSubagentAnnounce({
        outcome: { status: outcome, ...(run.error ? { error: run.error } : {}) },
        reply,
        ...(lastTool === undefined ? {} : { fallbackResult: toolResultText(lastTool) }),
        stats: {
          runtimeMs: (run.endedAt ?? now()) - (run.startedAt ?? run.createdAt),
          ...(child?.inputTokens === undefined ? {} : { inputTokens: child.inputTokens }),
          ...(child?.outputTokens === undefined ? {} : { outputTokens: child.outputTokens }),
          ...(child?.totalTokens === undefined ? {} : { totalTokens: child.totalTokens }),
          ...(run.usage?.costUsd === undefined ? {} : { costUsd: run.usage.costUsd }),
          sessionKey: childKey,
          ...(child === undefined ? {} : { sessionId: child.sessionId }),
          ...(child === undefined || store.transcriptPath?.(child.sessionId) === undefined
            ? {}
            : { transcriptPath: store.transcriptPath?.(child.sessionId) as string }),
        },
      });
      const requester = await store.getEntry(record.requesterKey);
      if (requester !== undefined) {
        await store.appendMessage(record.requesterKey, {
          role: "user",
          content: text,
          ts: now(),
          provenance: { kind: "inter_session", sourceSessionKey: childKey, sourceTool: "sessions_spawn" },
        });
        await touch(record.requesterKey);
      }
      const binding = (await store.listThreadBindings({ sessionKey: childKey }))[0];
      const target =
        binding !== undefined
          ? {
              channel: binding.channel,
              to: binding.to,
              accountId: binding.accountId,
              threadId: binding.threadId,
            }
          : normalizeDeliveryContext(requester?.deliveryContext);
      if (target?.channel !== undefined && target.to !== undefined) {
        const delivery = await outbox.enqueue({
          idempotencyKey: `subagent-announce:${childKey}`,
          kind: "subagent_announce",
          sessionKey: record.requesterKey,
          runId: run.runId,
          target: target as DeliveryTarget,
          text,
        });
        deliveryId = delivery.id;
      }
    }
    if (record.mode === "run") {
      for (const binding of await store.listThreadBindings({ sessionKey: childKey }))
        await unbind(binding, "ended");
    }
    const done: SubagentRecord = {
      ...record,
      status: "done",
      endedAt: run.endedAt ?? now(),
      outcome,
      ...(run.error ? { error: run.error } : {}),
      ...(deliveryId === undefined ? {} : { announceDeliveryId: deliveryId }),
    };
    if (record.cleanup === "keep" && record.mode === "run")
      done.archiveAt = (run.endedAt ?? now()) + subagentDefaults.archiveAfterMinutes * 60_000;
    await store.putSubagent(done);
    if (done.archiveAt !== undefined) scheduleArchive(done.archiveAt);
    if (record.cleanup === "delete") {
      const delivery = deliveryId === undefined ? undefined : await store.getDelivery(deliveryId);
      if (delivery === undefined || delivery.status !== "queued") await deleteChild(childKey);
    }
  }

  async function cleanupAfterAnnounce(delivery: DeliveryRecord): Promise<void> {
    const childKey = delivery.idempotencyKey.slice("subagent-announce:".length);
    const record = await store.getSubagent(childKey);
    if (record?.cleanup === "delete" && record.status === "done") await deleteChild(childKey);
  }

  async function deleteChild(childKey: string) {
    await entryLocks.run(childKey, () => store.deleteEntry(childKey, { transcript: true }));
    emit({ type: "sessions.changed", key: childKey, reason: "deleted" });
  }

  async function agentsListTool(ctx: ToolContext): Promise<AgentsListResult> {
    const allow = findAgentConfig(config, ctx.agentId)?.subagents.allowAgents ?? [];
    const allowAny = allow.some((a) => a.trim() === "*");
    const ids = new Set<string>();
    if (allowAny) for (const agent of config.agents.list) ids.add(agent.id);
    else for (const id of allow) ids.add(normalizeAgentId(id));
    ids.delete(ctx.agentId);
    const configured = new Map(config.agents.list.map((a) => [a.id, a]));
    const describe = (id: string) => {
      const agent = configured.get(id);
      return {
        id,
        ...(agent?.name === undefined ? {} : { name: agent.name }),
        configured: agent !== undefined,
      };
    };
    return {
      requester: ctx.agentId,
      allowAny,
      agents: [describe(ctx.agentId), ...[...ids].sort().map(describe)],
    };
  }

  // ------------------------------------------------------------------ archive

  async function sweep(): Promise<void> {
    for (const record of await store.listArchiveDue(now())) {
      const { archiveAt: _archived, ...rest } = record;
      await updateEntry(
        record.childKey,
        (entry) =>
          entry === undefined || entry.archivedAt !== undefined ? undefined : { ...entry, archivedAt: now() },
        "archived",
      );
      await store.putSubagent(rest);
    }
    const next = await store.nextArchiveAt();
    if (next !== undefined) scheduleArchive(next);
  }

  // ------------------------------------------------------------------ inbound

  /** When a binding lapses: idle for `idleHours` or older than `maxAgeHours` (0 = never). */
  function bindingExpiresAt(binding: ThreadBindingRecord): number {
    const idle =
      binding.idleHours > 0
        ? binding.lastActivityAt + binding.idleHours * 3_600_000
        : Number.POSITIVE_INFINITY;
    const age =
      binding.maxAgeHours > 0 ? binding.boundAt + binding.maxAgeHours * 3_600_000 : Number.POSITIVE_INFINITY;
    return Math.min(idle, age);
  }

  /** Removes a binding and says goodbye in its thread (a notice, so it is not lost to the send policy). */
  async function unbind(binding: ThreadBindingRecord, reason: "expired" | "closed" | "ended"): Promise<void> {
    if (!(await store.deleteThreadBinding(binding.channel, binding.accountId, binding.threadId))) return;
    logger.debug("thread binding removed", { channel: binding.channel, threadId: binding.threadId, reason });
    emit({ type: "sessions.changed", key: binding.sessionKey, reason: `thread-binding-${reason}` });
    if (reason !== "expired") return;
    await outbox.enqueue({
      idempotencyKey: `farewell:${binding.channel}:${binding.accountId}:${binding.threadId}:${binding.boundAt}`,
      kind: "notice",
      sessionKey: binding.sessionKey,
      target: {
        channel: binding.channel,
        to: binding.to,
        accountId: binding.accountId,
        threadId: binding.threadId,
      },
      text: "This thread is no longer connected to its agent session (it was idle too long). New messages here start a new conversation.",
    });
  }

  /** The session bound to a thread, if the binding is still live (expired ones are removed). */
  function touchThreadBinding(
    channel: string,
    accountId: string,
    threadId: string,
  ): Promise<string | undefined> {
    return entryLocks.run(`binding:${channel}:${accountId}:${threadId}`, async () => {
      const binding = await store.getThreadBinding(channel, accountId, threadId);
      if (binding === undefined) return undefined;
      if (bindingExpiresAt(binding) <= now()) {
        await unbind(binding, "expired");
        return undefined;
      }
      const touched = { ...binding, lastActivityAt: now() };
      await store.putThreadBinding(touched);
      scheduleBindingSweep(bindingExpiresAt(touched));
      return binding.sessionKey;
    });
  }

  /** Expires lapsed bindings (with a farewell) and arms the timer for the next one. */
  async function sweepBindings(): Promise<void> {
    let next = Number.POSITIVE_INFINITY;
    for (const binding of await store.listThreadBindings()) {
      const at = bindingExpiresAt(binding);
      if (at <= now()) {
        await entryLocks.run(
          `binding:${binding.channel}:${binding.accountId}:${binding.threadId}`,
          async () => {
            const current = await store.getThreadBinding(
              binding.channel,
              binding.accountId,
              binding.threadId,
            );
            if (current !== undefined && bindingExpiresAt(current) <= now()) await unbind(current, "expired");
          },
        );
      } else next = Math.min(next, at);
    }
    if (Number.isFinite(next)) scheduleBindingSweep(next);
  }

  /** An adapter reports a thread archived or deleted: its binding ends now. */
  async function threadClosed(event: {
    channel: string;
    accountId?: string;
    threadId: string;
  }): Promise<boolean> {
    await ready;
    const channel = normalizeChannelId(event.channel, aliases);
    if (channel === undefined || typeof event.threadId !== "string") {
      throw sessionsError("invalid_params", "threadClosed needs a channel and a threadId", "threadId");
    }
    const accountId = normalizeAccountId(event.accountId);
    return entryLocks.run(`binding:${channel}:${accountId}:${event.threadId}`, async () => {
      const binding = await store.getThreadBinding(channel, accountId, event.threadId);
      if (binding === undefined) return false;
      await unbind(binding, "closed");
      return true;
    });
  }

  async function receive(raw: InboundMessage): Promise<ReceiveResult> {
    await ready;
    const inbound = validateInbound(raw);
    const channel = normalizeChannelId(inbound.channel, aliases) as string;
    const accountId = normalizeAccountId(inbound.accountId);
    const agentId = normalizeAgentId(inbound.agentId ?? defaultAgentId(config));
    const threadId = inbound.threadId?.trim() || undefined;
    let sessionKey: string | undefined;
    if (threadId !== undefined) sessionKey = await touchThreadBinding(channel, accountId, threadId);
    if (sessionKey === undefined) {
      const base = buildPeerSessionKey({
        agentId,
        channel,
        accountId,
        peerKind: inbound.chatType,
        peerId: inbound.peerId,
        dmScope: config.session.dmScope,
        identityLinks: config.session.identityLinks,
        mainKey,
      });
      sessionKey =
        threadId === undefined ? base : `${base}:${inbound.threadKind ?? "thread"}:${threadId.toLowerCase()}`;
    }
    const key = sessionKey;
    const route: DeliveryContext = {
      channel,
      to: inbound.to,
      accountId,
      ...(threadId === undefined ? {} : { threadId }),
    };
    await ensureEntry(key, {
      channel,
      chatType: inbound.chatType,
      ...(inbound.displayName ? { displayName: inbound.displayName } : {}),
    });
    await store.putRoute({
      sessionKey: key,
      channel,
      accountId,
      to: inbound.to,
      ...(threadId === undefined ? {} : { threadId }),
      updatedAt: now(),
    });
    // Internal surfaces (web chat UI, internal) are recorded as routes but never replace the session's route.
    await touch(key, {
      ...(INTERNAL_ROUTE_CHANNELS.has(channel)
        ? {}
        : {
            deliveryContext: route,
            lastChannel: channel,
            lastTo: inbound.to,
            lastAccountId: accountId,
            ...(threadId === undefined ? {} : { lastThreadId: threadId }),
          }),
      ...(inbound.displayName ? { displayName: inbound.displayName } : {}),
    });

    const command = parseSendCommand(inbound.text);
    if (command !== null) {
      const applied = inbound.isOwner === true && command.mode !== null;
      let notice: string;
      if (inbound.isOwner !== true) notice = "Only the owner can change this session's send policy.";
      else if (command.mode === null) notice = "Usage: /send on | off | inherit";
      else {
        const mode = command.mode;
        await updateEntry(
          key,
          (entry) => {
            if (entry === undefined) return undefined;
            const next = { ...entry, updatedAt: now() };
            if (mode === "inherit") delete next.sendPolicy;
            else next.sendPolicy = mode;
            return next;
          },
          "send-policy",
        );
        notice =
          mode === "inherit"
            ? "Send policy: inherit (config rules apply)."
            : `Send policy: ${mode === "allow" ? "on" : "off"} for this session.`;
      }
      await outbox.enqueue({
        idempotencyKey: `notice:${channel}:${accountId}:${inbound.messageId ?? randomUUID()}`,
        kind: "notice",
        sessionKey: key,
        target: route as DeliveryTarget,
        text: notice,
      });
      return { sessionKey: key, command: { mode: command.mode, applied } };
    }

    const entry = await store.getEntry(key);
    const { run, created } = await startRun({
      sessionKey: key,
      kind: "chat",
      input: {
        role: "user",
        content: inbound.text,
        ts: now(),
        sender: {
          id: inbound.senderId,
          ...(inbound.senderName ? { name: inbound.senderName } : {}),
          channel,
        },
      },
      ...(inbound.messageId === undefined
        ? {}
        : { idempotencyKey: `inbound:${channel}:${accountId}:${inbound.messageId}` }),
      deliverTo: route,
      tools: toolContextFor(entry, key, findAgentConfig(config, agentId)?.sandboxed === true),
    });
    return { sessionKey: key, runId: run.runId, ...(created ? {} : { duplicate: true }) };
  }

  function validateInbound(raw: InboundMessage): InboundMessage {
    const parsed = InboundMessageSchema.safeParse(raw);
    if (!parsed.success) throw toSessionsError(parsed.error, "invalid_params", "Invalid inbound message");
    return parsed.data as InboundMessage;
  }

  // ------------------------------------------------------------------ methods

  function gatewayRow(entry: StoredEntry): GatewayRow {
    const kind =
      entry.key === "global"
        ? "global"
        : entry.key === "unknown"
          ? "unknown"
          : entry.kind === "group" || entry.chatType === "group" || entry.chatType === "channel"
            ? "group"
            : "direct";
    const row: GatewayRow = { key: entry.key, kind, updatedAt: entry.updatedAt, sessionId: entry.sessionId };
    const fields = [
      "label",
      "displayName",
      "channel",
      "chatType",
      "spawnedBy",
      "sendPolicy",
      "model",
      "contextTokens",
      "inputTokens",
      "outputTokens",
      "totalTokens",
      "thinkingLevel",
      "systemSent",
      "abortedLastRun",
      "lastChannel",
      "lastTo",
      "lastAccountId",
      "deliveryContext",
    ] as const;
    for (const field of fields)
      if (entry[field] !== undefined) (row as unknown as Record<string, unknown>)[field] = entry[field];
    return row;
  }

  async function requireEntry(key: string, field = "key"): Promise<StoredEntry> {
    const entry = await store.getEntry(key);
    if (entry === undefined)
      throw new SessionsError("not_found", `Session not found: ${key}`, {
        field,
        details: { code: "NOT_FOUND" },
      });
    return entry;
  }

  /**
   * Where a delivering `chat.send` / `agent` goes: the explicit target merged over the session's context. Throws
   * `invalid_params` without a complete target and `send_policy_denied` (SPEC 8.2) when the policy says no.
   */
  function allowedDelivery(
    entry: StoredEntry,
    key: string,
    explicit: Parameters<typeof normalizeDeliveryContext>[0] | undefined,
    missing: string,
  ): DeliveryContext & { channel: string; to: string } {
    const target = mergeDeliveryContext(explicit, entry.deliveryContext, aliases);
    if (target?.channel === undefined || target.to === undefined) {
      throw sessionsError("invalid_params", missing, explicit === undefined ? "deliver" : "to");
    }
    if (
      resolveSendPolicy({ policy: config.session.sendPolicy, entry, key, channel: target.channel }) === "deny"
    ) {
      throw new SessionsError("send_policy_denied", `Send policy denies delivery to ${key}`, {
        field: "deliver",
        details: { code: "SEND_POLICY_DENIED" },
      });
    }
    return target as DeliveryContext & { channel: string; to: string };
  }

  /** Aborts a session's running and queued runs (or just `runId`); returns the ids aborted. */
  function abortSession(key: string, runId?: string): string[] {
    const runIds: string[] = [];
    for (const [id, info] of active) {
      if (info.sessionKey !== key || (runId !== undefined && runId !== id) || info.controller.signal.aborted)
        continue;
      info.controller.abort(new RunAborted());
      runIds.push(id);
    }
    return runIds;
  }

  /** A caller's key scoped to an agent; unparseable or reserved keys are `invalid_params` naming `field`. */
  const operatorKey = (key: string, field = "key", agentId = defaultAgentId(config)) => {
    let resolved: string;
    try {
      resolved = storeKey(agentId, key);
    } catch (error) {
      if (SessionsError.isInstance(error))
        throw new SessionsError("invalid_params", error.message, { field });
      throw error;
    }
    if (isReservedKey(resolved)) {
      throw new SessionsError("invalid_params", `Session key "${resolved}" is reserved`, { field });
    }
    return resolved;
  };

  const methods = {
    async "sessions.list"(params: unknown): Promise<SessionsListPayload> {
      const p = parseParams("sessions.list", params) as import("zod").infer<
        (typeof METHOD_PARAMS)["sessions.list"]
      >;
      const limit = p.limit ?? 50;
      const offset = p.offset ?? 0;
      const entries = await store.listEntries({
        ...(p.agentId === undefined ? {} : { agentIds: [normalizeAgentId(p.agentId)] }),
        ...(p.kinds === undefined ? {} : { kinds: p.kinds }),
        ...(p.label === undefined ? {} : { label: p.label }),
        ...(p.spawnedBy === undefined ? {} : { spawnedBy: p.spawnedBy }),
        ...(p.search === undefined ? {} : { search: p.search }),
        ...(p.activeMinutes === undefined ? {} : { updatedSince: now() - p.activeMinutes * 60_000 }),
        ...(p.includeArchived ? { includeArchived: true } : {}),
        limit: limit + 1,
        offset,
      });
      const filtered = entries.filter(
        (e) => (p.includeGlobal || e.key !== "global") && (p.includeUnknown || e.key !== "unknown"),
      );
      const page = filtered.slice(0, limit);
      const hasMore = entries.length > limit;
      return {
        ts: now(),
        count: page.length,
        hasMore,
        nextOffset: hasMore ? offset + limit : null,
        sessions: page.map(gatewayRow),
      };
    },
    async "sessions.resolve"(params: unknown) {
      const p = parseParams("sessions.resolve", params) as import("zod").infer<
        (typeof METHOD_PARAMS)["sessions.resolve"]
      >;
      let candidates: StoredEntry[] = [];
      if (p.key !== undefined) {
        const entry = await store.getEntry(
          storeKey(normalizeAgentId(p.agentId ?? defaultAgentId(config)), p.key),
        );
        if (entry) candidates.push(entry);
      } else if (p.sessionId !== undefined)
        candidates = await store.findEntriesBySessionId(p.sessionId.trim().toLowerCase());
      else if (p.label !== undefined) candidates = await store.findEntriesByLabel(p.label);
      else throw sessionsError("invalid_params", "sessions.resolve needs key, sessionId or label", "key");
      if (p.agentId !== undefined)
        candidates = candidates.filter((e) => e.agentId === normalizeAgentId(p.agentId));
      if (p.spawnedBy !== undefined) candidates = candidates.filter((e) => e.spawnedBy === p.spawnedBy);
      if (candidates.length === 0)
        throw new SessionsError("not_found", "No session matches", { details: { code: "NOT_FOUND" } });
      if (candidates.length > 1) {
        throw new SessionsError("ambiguous", `${candidates.length} sessions match`, {
          details: { code: "AMBIGUOUS", candidates: candidates.map((c) => c.key) },
        });
      }
      return { ok: true as const, key: (candidates[0] as StoredEntry).key };
    },
    async "sessions.patch"(params: unknown) {
      const p = parseParams("sessions.patch", params) as import("zod").infer<
        (typeof METHOD_PARAMS)["sessions.patch"]
      >;
      const key = operatorKey(p.key);
      await requireEntry(key);
      const entry = await updateEntry(
        key,
        (current) => {
          if (current === undefined) return undefined;
          const next: StoredEntry = { ...current, updatedAt: now() };
          const fields = ["label", "sendPolicy", "model", "thinkingLevel", "verboseLevel"] as const;
          for (const field of fields) {
            const value = p[field];
            if (value === undefined) continue;
            if (value === null) delete next[field];
            else (next as unknown as Record<string, unknown>)[field] = value;
          }
          return next;
        },
        "patched",
      );
      return { ok: true as const, key, entry: entry as StoredEntry };
    },
    async "sessions.delete"(params: unknown) {
      const p = parseParams("sessions.delete", params) as import("zod").infer<
        (typeof METHOD_PARAMS)["sessions.delete"]
      >;
      const key = operatorKey(p.key);
      // Runs of the session stop first, so nothing writes into a transcript that is being removed.
      abortSession(key);
      await lanes.run(key, async () => undefined);
      for (const binding of await store.listThreadBindings({ sessionKey: key })) {
        await store.deleteThreadBinding(binding.channel, binding.accountId, binding.threadId);
      }
      const deleted = await entryLocks.run(key, () =>
        store.deleteEntry(key, { transcript: p.deleteTranscript !== false }),
      );
      if (deleted) emit({ type: "sessions.changed", key, reason: "deleted" });
      return { ok: true as const, key, deleted };
    },
    async "chat.history"(params: unknown): Promise<ChatHistoryPayload> {
      const p = parseParams("chat.history", params) as import("zod").infer<
        (typeof METHOD_PARAMS)["chat.history"]
      >;
      const key = operatorKey(p.sessionKey, "sessionKey");
      const entry = await requireEntry(key, "sessionKey");
      const limit = p.limit ?? 200;
      const offset = p.offset ?? 0;
      const total = await store.countMessages(key);
      const beforeSeq = total - offset + 1;
      const messages = beforeSeq <= 1 ? [] : await store.readMessages(key, { limit, beforeSeq });
      const hasMore = total - offset - messages.length > 0;
      return {
        sessionKey: key,
        sessionId: entry.sessionId,
        messages,
        totalMessages: total,
        hasMore,
        nextOffset: hasMore ? offset + messages.length : null,
      };
    },
    async "chat.send"(params: unknown) {
      const p = parseParams("chat.send", params) as import("zod").infer<(typeof METHOD_PARAMS)["chat.send"]>;
      const key = operatorKey(p.sessionKey, "sessionKey");
      const existing = await store.findRunByIdempotencyKey(p.idempotencyKey);
      if (existing !== undefined) {
        const status = FINAL_STATUSES.has(existing.status)
          ? existing.status === "ok"
            ? "ok"
            : "error"
          : "in_flight";
        return { runId: existing.runId, status } as const;
      }
      const entry = await ensureEntry(key);
      const deliverTo =
        p.deliver === true
          ? allowedDelivery(entry, key, undefined, `Session ${key} has no delivery context to deliver to`)
          : undefined;
      const { run, created } = await startRun({
        sessionKey: key,
        kind: "chat",
        input: { role: "user", content: p.message, ts: now() },
        idempotencyKey: p.idempotencyKey,
        ...(deliverTo === undefined ? {} : { deliverTo }),
        tools: toolContextFor(entry, key, false),
        ...(p.timeoutMs ? { timeoutMs: p.timeoutMs } : {}),
      });
      if (created) return { runId: run.runId, status: "started" as const };
      // A concurrent retry with the same key got here second: report the run like a repeat would.
      const status = FINAL_STATUSES.has(run.status) ? (run.status === "ok" ? "ok" : "error") : "in_flight";
      return { runId: run.runId, status } as const;
    },
    async "chat.abort"(params: unknown) {
      const p = parseParams("chat.abort", params) as import("zod").infer<
        (typeof METHOD_PARAMS)["chat.abort"]
      >;
      const runIds = abortSession(operatorKey(p.sessionKey, "sessionKey"), p.runId);
      return { ok: true as const, aborted: runIds.length > 0, runIds };
    },
    async agent(params: unknown) {
      const p = parseParams("agent", params) as import("zod").infer<(typeof METHOD_PARAMS)["agent"]>;
      const agentId = normalizeAgentId(
        p.agentId ??
          (p.sessionKey ? parseSessionKey(p.sessionKey)?.agentId : undefined) ??
          defaultAgentId(config),
      );
      const key = operatorKey(p.sessionKey ?? "main", "sessionKey", agentId);
      const existing = await store.findRunByIdempotencyKey(p.idempotencyKey);
      if (existing !== undefined) {
        return {
          runId: existing.runId,
          sessionKey: existing.sessionKey,
          agentId: existing.agentId,
          status: "accepted" as const,
          acceptedAt: existing.createdAt,
        };
      }
      const entry = await ensureEntry(key, {
        ...(p.label === undefined ? {} : { label: p.label }),
        ...(p.spawnedBy === undefined ? {} : { spawnedBy: p.spawnedBy }),
      });
      const deliverTo =
        p.deliver === true
          ? allowedDelivery(
              entry,
              key,
              { channel: p.channel, to: p.to, accountId: p.accountId, threadId: p.threadId },
              "agent: deliver needs channel and to (or a session with a delivery context)",
            )
          : undefined;
      const provenance =
        p.inputProvenance?.kind === "inter_session" && p.inputProvenance.sourceSessionKey
          ? {
              kind: "inter_session" as const,
              sourceSessionKey: p.inputProvenance.sourceSessionKey,
              ...(p.inputProvenance.sourceChannel ? { sourceChannel: p.inputProvenance.sourceChannel } : {}),
              ...(p.inputProvenance.sourceTool ? { sourceTool: p.inputProvenance.sourceTool } : {}),
            }
          : undefined;
      const { run } = await startRun({
        sessionKey: key,
        kind: "agent",
        input: { role: "user", content: p.message, ts: now(), ...(provenance ? { provenance } : {}) },
        idempotencyKey: p.idempotencyKey,
        ...(deliverTo === undefined ? {} : { deliverTo }),
        ...(p.extraSystemPrompt ? { system: [p.extraSystemPrompt] } : {}),
        tools: toolContextFor(entry, key, false),
        ...(p.timeout ? { timeoutMs: p.timeout * 1000 } : {}),
      });
      return {
        runId: run.runId,
        sessionKey: key,
        agentId: run.agentId,
        status: "accepted" as const,
        acceptedAt: run.createdAt,
      };
    },
    async "agent.wait"(params: unknown) {
      const p = parseParams("agent.wait", params) as import("zod").infer<
        (typeof METHOD_PARAMS)["agent.wait"]
      >;
      return waitRun(p.runId, p.timeoutMs ?? 30_000);
    },
    async "agents.list"(params: unknown): Promise<AgentsListPayload> {
      parseParams("agents.list", params);
      const agents =
        config.agents.list.length > 0
          ? config.agents.list.map((a) => ({ id: a.id, ...(a.name ? { name: a.name } : {}) }))
          : [{ id: "main" }];
      return { defaultId: defaultAgentId(config), mainKey, scope: config.session.scope, agents };
    },
    async "deliveries.get"(params: unknown) {
      const p = parseParams("deliveries.get", params) as { id: string };
      const record = await store.getDelivery(p.id);
      if (record === undefined)
        throw new SessionsError("not_found", `Delivery not found: ${p.id}`, {
          field: "id",
          details: { code: "NOT_FOUND" },
        });
      return record;
    },
    async "deliveries.list"(params: unknown) {
      const p = parseParams("deliveries.list", params) as import("zod").infer<
        (typeof METHOD_PARAMS)["deliveries.list"]
      >;
      const deliveries = await store.listDeliveries({
        ...(p.sessionKey === undefined ? {} : { sessionKey: operatorKey(p.sessionKey, "sessionKey") }),
        ...(p.runId === undefined ? {} : { runId: p.runId }),
        ...(p.status === undefined ? {} : { status: p.status }),
        limit: p.limit ?? 100,
      });
      return { deliveries };
    },
    async "sessions.tools.call"(params: unknown) {
      const p = parseParams("sessions.tools.call", params) as import("zod").infer<
        (typeof METHOD_PARAMS)["sessions.tools.call"]
      >;
      return callTool(p.requesterKey, p.name, p.params ?? {}, { sandboxed: p.sandboxed === true });
    },
    async "sessions.subscribe"(): Promise<never> {
      throw connectionOnly("sessions.subscribe");
    },
    async "sessions.unsubscribe"(): Promise<never> {
      throw connectionOnly("sessions.unsubscribe");
    },
  } satisfies Record<GatewayMethodName, (params: unknown) => Promise<unknown>>;

  async function callTool(
    requesterKey: string,
    name: string,
    params: unknown,
    opts: { sandboxed?: boolean } = {},
  ) {
    await ready;
    if (!Object.hasOwn(sessionTools, name)) {
      const extra = extraTools.find((t) => t.name === name);
      if (extra === undefined) throw sessionsError("invalid_params", `Unknown tool: ${name}`, "name");
      const requester = operatorKey(requesterKey, "requesterKey");
      const ctx = toolContextFor(await store.getEntry(requester), requester, opts.sandboxed === true);
      if (!allowedToolNames(ctx).has(name)) {
        return {
          status: "forbidden",
          code: "tool_not_allowed",
          error: `${name} is not available to this session (tools.subagents.tools)`,
        };
      }
      const checked = extra.parameters.safeParse(params ?? {});
      if (!checked.success)
        throw toSessionsError(checked.error, "invalid_params", `Invalid ${name} parameters`);
      return extra.execute(checked.data);
    }
    const key = operatorKey(requesterKey, "requesterKey");
    const entry = await ensureEntry(key);
    return executeTool(toolContextFor(entry, key, opts.sandboxed === true), name as SessionToolName, params);
  }

  // ------------------------------------------------------------------ start / recovery

  async function recover(): Promise<void> {
    const interrupted = await store.listRunsByStatus(["queued", "running"]);
    for (const run of interrupted) {
      const ended: RunRecord = {
        ...run,
        status: "error",
        endedAt: now(),
        error:
          run.status === "running"
            ? "gateway restarted while the run was in progress"
            : "gateway restarted before the run started",
      };
      await store.putRun(ended);
    }
    const pending = await store.listSubagents({ statuses: ["running", "announcing"] });
    for (const record of pending) {
      const stored = await store.getRun(record.runId);
      // A record whose run never got written (a crash between the two) ended as an error all the same.
      const run: RunRecord = stored ?? {
        runId: record.runId,
        sessionKey: record.childKey,
        agentId: parseSessionKey(record.childKey)?.agentId ?? "main",
        kind: "subagent",
        status: "error",
        createdAt: record.createdAt,
        endedAt: now(),
        error: "gateway restarted before the run started",
      };
      if (FINAL_STATUSES.has(run.status)) {
        await store.putSubagent({ ...record, status: "running" });
        track(subagentFinished(record.childKey, run));
      }
    }
    for (const run of await store.listPendingFollowUps()) {
      if (FINAL_STATUSES.has(run.status)) track(agentToAgentFlow(run));
    }
    await outbox.replay();
    await sweep();
    await sweepBindings();
  }

  const ready = recover();
  ready.catch((error) => logger.error("gateway recovery failed", { error: String(error) }));

  async function call(method: GatewayMethodName, params?: unknown): Promise<unknown> {
    await ready;
    if (!Object.hasOwn(methods, method)) {
      throw new SessionsError("invalid_params", `Unknown method: ${String(method)}`, {
        field: "method",
        details: { code: "UNKNOWN_METHOD" },
      });
    }
    return methods[method](params);
  }

  const servers = new Set<GatewayServer>();
  const self: Gateway = {
    config,
    store,
    ready,
    async listen(listenOptions) {
      const server = await listenGateway(self, listenOptions);
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
      const key = operatorKey(requesterKey, "requesterKey");
      const entry = await store.getEntry(key);
      return buildTools(toolContextFor(entry, key, opts.sandboxed === true));
    },
    callTool,
    receive,
    call,
    sessions: {
      list: (params) => call("sessions.list", params) as Promise<SessionsListPayload>,
      resolve: (params) => call("sessions.resolve", params) as Promise<{ ok: true; key: string }>,
      patch: (params) =>
        call("sessions.patch", params) as Promise<{ ok: true; key: string; entry: StoredEntry }>,
      delete: (params) =>
        call("sessions.delete", params) as Promise<{ ok: true; key: string; deleted: boolean }>,
    },
    chat: {
      history: (params) => call("chat.history", params) as Promise<ChatHistoryPayload>,
      send: (params) =>
        call("chat.send", params) as Promise<{
          runId: string;
          status: "started" | "in_flight" | "ok" | "error";
        }>,
      abort: (params) =>
        call("chat.abort", params) as Promise<{ ok: true; aborted: boolean; runIds: string[] }>,
    },
    agent: (params) => call("agent", params) as ReturnType<Gateway["agent"]>,
    agentWait: (params) => call("agent.wait", params) as Promise<WaitResult>,
    agents: { list: (params) => call("agents.list", params) as Promise<AgentsListPayload> },
    deliveries: {
      get: (params) => call("deliveries.get", params) as Promise<DeliveryRecord>,
      list: (params) => call("deliveries.list", params) as Promise<{ deliveries: DeliveryRecord[] }>,
    },
    sweep: async () => {
      await sweep();
      await sweepBindings();
    },
    threadClosed,
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    async close(opts = {}) {
      if (closed) return;
      // Graceful order: refuse new connections, let running work finish (up to drainMs), then say shutdown.
      for (const server of servers) server.stopAccepting();
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
      for (const info of active.values()) info.controller.abort(new RunAborted());
      outbox.stop();
      await outbox.drain(opts.drainMs ?? 5000);
      archiveTimer.stop();
      bindingTimer.stop();
      await Promise.allSettled([...background]);
      await store.close();
    },
  };
  return self;
}
