import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SessionsError } from "@sessions/core";
import { eventually as waitFor } from "@sessions/testing/eventually";
import type { ChannelAdapterV1, DeliveryTarget, OutboundMessage } from "./adapter.js";
import { createManualClock, type ManualClock } from "./clock.js";
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
