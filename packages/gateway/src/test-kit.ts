import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { SessionsError } from "@sessions/core";
import { eventually as waitFor } from "@sessions/testing/eventually";
import { WebSocket } from "ws";
import type { ChannelAdapterV1, DeliveryTarget, OutboundMessage } from "./adapter.js";
import { type Clock, createManualClock, type ManualClock } from "./clock.js";
import { createGateway } from "./create-gateway.js";
import type { Gateway, GatewayOptions } from "./gateway.js";
import { createScriptedRunner, type ScriptedAgent } from "./runner/scripted.js";
import { createMemoryStore } from "./store/memory.js";
import { createSqliteStore } from "./store/sqlite.js";
import type { SessionStore } from "./store/types.js";

/** A fake chat platform (the outside world): records what it is sent, can fail or rate-limit on demand. */
export interface FakeChannel extends ChannelAdapterV1 {
  sent: { target: DeliveryTarget; message: OutboundMessage; idempotencyKey: string }[];
  threads: { parent: DeliveryTarget; name: string; sessionKey: string }[];
  failNext(times: number, error?: Error): void;
  failThreads: boolean;
}

export function createFakeChannel(channel = "chat"): FakeChannel {
  let failures: { times: number; error: Error } = { times: 0, error: new Error("platform unavailable") };
  const fake: FakeChannel = {
    specVersion: 1,
    channel,
    capabilities: { threads: true },
    sent: [],
    threads: [],
    failThreads: false,
    failNext(times, error = new Error("platform unavailable")) {
      failures = { times, error };
    },
    async deliver(target, message, options) {
      if (failures.times > 0) {
        failures.times--;
        throw failures.error;
      }
      if (fake.sent.some((s) => s.idempotencyKey === options.idempotencyKey)) {
        return { messageIds: [`dup-${options.idempotencyKey}`] };
      }
      fake.sent.push({ target, message, idempotencyKey: options.idempotencyKey });
      return { messageIds: [`m${fake.sent.length}`] };
    },
    async createThread(request) {
      if (fake.failThreads) throw new Error("missing permission to create threads");
      fake.threads.push(request);
      return { threadId: `t${fake.threads.length}` };
    },
  };
  return fake;
}

/** A message of a `StreamingChannel` as the chat shows it. */
export interface ShownMessage {
  id: string;
  text: string;
  edits: number;
}

/** A fake chat platform that edits and removes messages (`ChannelAdapterV1.stream`): what its chats show now. */
export interface StreamingChannel extends FakeChannel {
  readonly stream: NonNullable<ChannelAdapterV1["stream"]>;
  /** The messages a conversation shows now (posted or delivered, edited, not removed), oldest first. */
  shown(to: string): ShownMessage[];
  /** Every request of the stream, in order (`post`, `edit`, `remove`, `draft`), with the clock's time. */
  requests: { op: string; to: string; at: number; id?: string | undefined; text?: string | undefined }[];
  /** Makes the next `times` stream requests (of those `when` picks, default all) fail with `error`. */
  failStream(
    times: number,
    error: Error,
    when?: (request: StreamingChannel["requests"][number]) => boolean,
  ): void;
}

/** A `FakeChannel` that streams (default mode `partial`, no pacing, `maxMessageLength` characters a message). */
export function createStreamingChannel(
  options: {
    channel?: string;
    maxMessageLength?: number;
    intervalMs?: number;
    drafts?: boolean;
    clock?: Clock;
  } = {},
): StreamingChannel {
  const base = createFakeChannel(options.channel ?? "chat");
  const chats = new Map<string, Map<string, ShownMessage>>();
  const chat = (to: string) => {
    let messages = chats.get(to);
    if (messages === undefined) {
      messages = new Map();
      chats.set(to, messages);
    }
    return messages;
  };
  let nextId = 1;
  let failures: { times: number; error: Error; when?: (r: StreamingChannel["requests"][number]) => boolean } =
    {
      times: 0,
      error: new Error("platform unavailable"),
    };
  const requests: StreamingChannel["requests"] = [];
  const request = (op: string, to: string, id?: string, text?: string) => {
    const at = options.clock?.now() ?? Date.now();
    const made = { op, to, at, ...(id === undefined ? {} : { id }), ...(text === undefined ? {} : { text }) };
    requests.push(made);
    if (failures.times > 0 && (failures.when?.(made) ?? true)) {
      failures.times--;
      throw failures.error;
    }
  };
  const deliver = base.deliver.bind(base);
  const fake: StreamingChannel = Object.assign(base, {
    requests,
    shown: (to: string) => [...chat(to).values()],
    failStream(times: number, error: Error, when?: (r: StreamingChannel["requests"][number]) => boolean) {
      failures = { times, error, ...(when === undefined ? {} : { when }) };
    },
    async deliver(target: DeliveryTarget, message: OutboundMessage, opts: { idempotencyKey: string }) {
      const receipt = await deliver(target, message, opts);
      for (const [i, id] of receipt.messageIds.entries())
        if (i === 0) chat(target.to).set(id, { id, text: message.text, edits: 0 });
      return receipt;
    },
    stream: {
      defaultMode: "partial" as const,
      intervalMs: options.intervalMs ?? 0,
      maxMessageLength: options.maxMessageLength ?? 2000,
      async post(target: DeliveryTarget, text: string) {
        // The id it would get, in its request: a failed post's id is never used.
        const id = `s${nextId}`;
        request("post", target.to, id, text);
        nextId++;
        chat(target.to).set(id, { id, text, edits: 0 });
        return id;
      },
      async edit(target: DeliveryTarget, id: string, text: string) {
        request("edit", target.to, id, text);
        const message = chat(target.to).get(id);
        if (message === undefined)
          throw new SessionsError("invalid_params", "message to edit not found", { field: "messageId" });
        if (message.text !== text) {
          message.text = text;
          message.edits++;
        }
      },
      async remove(target: DeliveryTarget, id: string) {
        request("remove", target.to, id);
        chat(target.to).delete(id);
      },
      ...(options.drafts === true
        ? {
            async draft(target: DeliveryTarget, _streamId: string, text: string) {
              request("draft", target.to, undefined, text);
              return true;
            },
          }
        : {}),
    },
  });
  return fake;
}

export const rateLimited = (ms: number) =>
  new SessionsError("rate_limited", "429 Too Many Requests", { retryAfterMs: ms });

export type StoreKind = "memory" | "sqlite";
export const STORE_KINDS: StoreKind[] = ["memory", "sqlite"];

export interface Harness {
  gateway: Gateway;
  clock: ManualClock;
  channel: FakeChannel;
  store: SessionStore;
  path?: string | undefined;
  /** Reopens a gateway on the same store file (sqlite) — a restart. */
  restart(overrides?: Partial<GatewayOptions>): Promise<Harness>;
  close(): Promise<void>;
}

const dirs: string[] = [];
export function cleanupDirs() {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
}

export function openStore(
  kind: StoreKind,
  path?: string,
): { store: SessionStore; path?: string | undefined } {
  if (kind === "memory") return { store: createMemoryStore() };
  let file = path;
  if (file === undefined) {
    const dir = mkdtempSync(join(tmpdir(), "sessions-gw-"));
    dirs.push(dir);
    file = join(dir, "sessions.db");
  }
  return { store: createSqliteStore({ path: file }), path: file };
}

export async function harness(
  kind: StoreKind,
  agents: Record<string, ScriptedAgent>,
  overrides: Partial<GatewayOptions> = {},
  existing?: {
    clock: ManualClock;
    channel: FakeChannel;
    path?: string | undefined;
    store?: SessionStore | undefined;
  },
): Promise<Harness> {
  const clock = existing?.clock ?? createManualClock();
  const channel = existing?.channel ?? createFakeChannel();
  const opened = existing?.store
    ? { store: existing.store, ...(existing.path ? { path: existing.path } : {}) }
    : openStore(kind, existing?.path);
  const runner = createScriptedRunner({ agents, clock, fallback: () => "ok" });
  const gateway = createGateway({ runner, store: opened.store, clock, adapters: [channel], ...overrides });
  await gateway.ready;
  const h: Harness = {
    gateway,
    clock,
    channel,
    store: opened.store,
    ...(opened.path ? { path: opened.path } : {}),
    async restart(next = {}) {
      await gateway.close({ drainMs: 0 });
      const reopened = kind === "memory" ? { store: opened.store } : openStore(kind, opened.path);
      return harness(
        kind,
        agents,
        { ...overrides, ...next },
        { clock, channel, ...(opened.path ? { path: opened.path } : {}), store: reopened.store },
      );
    },
    close: () => gateway.close({ drainMs: 100 }),
  };
  return h;
}

/**
 * Retries an assertion while background work settles: until it passes, or (far above any normal time, so that a
 * busy machine is slow, not red) fails with its last error.
 */
export async function eventually(assertion: () => void | Promise<void>, what = "assertion"): Promise<void> {
  await waitFor(assertion, what);
}

/** A message from Sam in the group `#name` of the fake `chat` channel (its session: `agent:main:chat:group:<name>`). */
export const roomMessage = (name: string, text: string) => ({
  channel: "chat",
  chatType: "group" as const,
  peerId: name,
  senderId: "sam",
  to: `group:${name}`,
  text,
});

/** The group session the run-tree scenarios send to (`receive` of `treeMessage("ops", …)`). */
export const TREE_OPS = "agent:main:chat:group:ops";

/** A message of the run-tree scenarios: in the group `#ops`, or from Alice in a DM (the main session). */
export function treeMessage(
  where: "ops" | "alice",
  text: string,
  extra: { messageId?: string; traceparent?: string } = {},
) {
  return where === "ops"
    ? {
        channel: "chat",
        chatType: "group" as const,
        peerId: "ops",
        senderId: "bob",
        to: "group:ops",
        text,
        ...extra,
      }
    : {
        channel: "chat",
        chatType: "direct" as const,
        peerId: "alice",
        senderId: "alice",
        to: "user:alice",
        text,
        ...extra,
      };
}

/** Creates `#ops` and the main DM with a message each, and waits until both runs have ended and replied. */
export async function seedTreeSessions(h: Harness): Promise<{ runIds: string[] }> {
  const runIds: string[] = [];
  for (const where of ["ops", "alice"] as const) {
    const { runId } = await h.gateway.receive(treeMessage(where, "hi"));
    await h.gateway.agentWait({ runId: runId as string, timeoutMs: 60_000 });
    runIds.push(runId as string);
  }
  await eventually(async () => {
    if ((await h.store.listQueuedDeliveries(1)).length > 0) throw new Error("replies still queued");
  }, "the replies to be delivered");
  return { runIds };
}

/**
 * Runs the fixture `file` under tsx until it is killed: `onLine` sees each JSON line it prints and may `kill()` it
 * (SIGKILL). Resolves with the signal it exited by (null: it exited on its own) and what it wrote to stderr; kills
 * it and rejects when it is still running after 60 s. For the kill -9 tests.
 */
export function runFixtureUntilKilled(
  file: string,
  args: readonly string[],
  onLine: (line: Record<string, unknown>, kill: () => void) => void,
): Promise<{ signal: NodeJS.Signals | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", file, ...args], {
      cwd: dirname(file),
      stdio: ["ignore", "pipe", "pipe"],
    });
    const kill = () => child.kill("SIGKILL");
    let buffer = "";
    let stderr = "";
    const timer = setTimeout(() => {
      kill();
      reject(new Error(`${file} never got far enough; stderr: ${stderr}`));
    }, 60_000);
    child.stderr.on("data", (chunk) => {
      stderr += String(chunk);
    });
    child.stdout.on("data", (chunk) => {
      buffer += String(chunk);
      for (let nl = buffer.indexOf("\n"); nl !== -1; nl = buffer.indexOf("\n")) {
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + 1);
        if (line.trim() !== "") onLine(JSON.parse(line) as Record<string, unknown>, kill);
      }
    });
    child.on("exit", (_code, signal) => {
      clearTimeout(timer);
      resolve({ signal, stderr });
    });
    child.on("error", reject);
  });
}

/** A response frame as a raw protocol client sees it. */
export type RawFrame = {
  type: string;
  id?: string;
  ok?: boolean;
  payload?: Record<string, unknown>;
  error?: { code: string; details?: { code?: string; missingScope?: string } };
};

/** A raw protocol session, as any WebSocket client has it: connect with `token`, then `call` methods. */
export async function connectRaw(url: string, token: string) {
  const ws = new WebSocket(url);
  const frames: RawFrame[] = [];
  const waiters: (() => void)[] = [];
  ws.on("message", (data) => {
    frames.push(JSON.parse(String(data)) as RawFrame);
    for (const w of waiters.splice(0)) w();
  });
  const next = async (id: string): Promise<RawFrame> => {
    for (;;) {
      const found = frames.find((f) => f.type === "res" && f.id === id);
      if (found) return found;
      await new Promise<void>((resolve) => waiters.push(resolve));
    }
  };
  await new Promise((resolve) => ws.once("open", resolve));
  let n = 0;
  const call = (method: string, params: unknown) => {
    const id = String(++n);
    ws.send(JSON.stringify({ type: "req", id, method, params }));
    return next(id);
  };
  const hello = await call("connect", {
    minProtocol: 4,
    maxProtocol: 4,
    client: { id: "test", version: "0", platform: "node", mode: "backend" },
    role: "operator",
    scopes: ["operator.read", "operator.write", "operator.admin"],
    auth: { token },
  });
  return { hello, call, close: () => ws.close() };
}
