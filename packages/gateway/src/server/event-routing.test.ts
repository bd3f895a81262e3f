import { afterEach, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import { createGateway } from "../create-gateway.js";
import type { Gateway, GatewayEvent } from "../gateway.js";
import { createScriptedRunner } from "../runner/scripted.js";
import { createMemoryStore } from "../store/memory.js";
import type { DeliveryRecord } from "../store/types.js";
import { eventually } from "../test-kit.js";
import { EventRouter, newInterest, type Routed } from "./event-routing.js";
import { interestSize } from "./listen.js";

const conn = (name: string): Routed & { name: string } => ({ name, interest: newInterest() });
const names = (list: { name: string }[]) => list.map((c) => c.name).sort();

const chat = (runId: string, sessionKey: string, state: "delta" | "final" = "delta", message?: string) =>
  ({
    type: "chat",
    runId,
    sessionKey,
    seq: 1,
    state,
    ...(message ? { message } : {}),
  }) as GatewayEvent;
const agent = (runId: string) =>
  ({ type: "agent", runId, seq: 1, stream: "lifecycle", ts: 1, data: {} }) as GatewayEvent;
const delivery = (runId: string, sessionKey: string) =>
  ({ type: "delivery", record: { runId, sessionKey } as DeliveryRecord }) as GatewayEvent;

describe("EventRouter", () => {
  it("routes a run's events to its starter, its session's subscribers and everything-subscribers, once each", () => {
    const router = new EventRouter<ReturnType<typeof conn>>();
    const [starter, watcher, all, bystander] = ["starter", "watcher", "all", "bystander"].map(conn) as [
      ReturnType<typeof conn>,
      ReturnType<typeof conn>,
      ReturnType<typeof conn>,
      ReturnType<typeof conn>,
    ];
    const done = router.expectRun(starter, "k1");
    router.runCreated({ runId: "r1", sessionKey: "agent:main:a", idempotencyKey: "k1" });
    done();
    router.subscribeKey(watcher, "agent:main:a");
    router.subscribeAll(all);
    router.subscribeAll(starter);
    expect(names(router.recipients(agent("r1")))).toEqual(["all", "starter", "watcher"]);
    expect(names(router.recipients(chat("r1", "agent:main:a")))).toEqual(["all", "starter", "watcher"]);
    expect(names(router.recipients({ type: "sessions.changed", key: "agent:main:b", reason: "x" }))).toEqual([
      "all",
      "starter",
    ]);
    router.unsubscribeAll(starter);
    expect(names(router.recipients(chat("r1", "agent:main:a", "final")))).toEqual([
      "all",
      "starter",
      "watcher",
    ]);
    // The run is over: its entry is gone and later events of it reach only the subscribers.
    expect(names(router.recipients(agent("r1")))).toEqual(["all"]);
    expect(router.size()).toMatchObject({ live: 0, expected: 0, ended: 0 });
    expect(bystander.interest.stamp).toBe(0);
  });

  it("keeps an ended run's starters for its reply's delivery event, then forgets them", () => {
    const router = new EventRouter<ReturnType<typeof conn>>();
    const starter = conn("starter");
    router.expectRun(starter, "k");
    router.runCreated({
      runId: "r",
      sessionKey: "s",
      idempotencyKey: "k",
      deliverTo: { channel: "chat", to: "room" },
    });
    router.recipients(chat("r", "s", "final", "the reply"));
    expect(router.size().ended).toBe(1);
    expect(names(router.recipients(delivery("r", "s")))).toEqual(["starter"]);
    expect(router.size().ended).toBe(0);
    expect(starter.interest.ended.size).toBe(0);
  });

  it("follows a run only while it is under way, and drops everything a connection had when it closes", () => {
    const router = new EventRouter<ReturnType<typeof conn>>();
    const c = conn("c");
    expect(router.followRun(c, "unknown")).toBe(false);
    router.runCreated({ runId: "r", sessionKey: "s" });
    expect(router.followRun(c, "r")).toBe(true);
    router.subscribeKey(c, "s");
    router.subscribeAll(c);
    router.expectRun(c, "pending");
    router.drop(c);
    expect(router.size()).toEqual({ live: 1, sessions: 0, all: 0, ended: 0, expected: 0 });
    expect(router.recipients(agent("r"))).toEqual([]);
    router.recipients(chat("r", "s", "final"));
    expect(router.size().live).toBe(0);
  });
});

/** A raw protocol socket: connect, then requests by hand. */
async function rawClient(url: string, token?: string) {
  const ws = new WebSocket(url);
  const frames: Record<string, unknown>[] = [];
  ws.on("message", (data) => frames.push(JSON.parse(String(data))));
  await new Promise((resolve, reject) => {
    ws.once("open", resolve);
    ws.once("error", reject);
  });
  let next = 0;
  const request = async (method: string, params: unknown) => {
    const id = `q${++next}`;
    ws.send(JSON.stringify({ type: "req", id, method, params }));
    let found: Record<string, unknown> | undefined;
    await eventually(() => {
      found = frames.find((f) => f.type === "res" && f.id === id);
      expect(found).toBeDefined();
    });
    return found as { ok: boolean; payload?: Record<string, unknown>; error?: Record<string, unknown> };
  };
  const hello = await request("connect", {
    minProtocol: 4,
    maxProtocol: 4,
    client: { id: "gateway-client", version: "1", platform: "node", mode: "backend" },
    ...(token ? { auth: { token } } : {}),
  });
  expect(hello.ok).toBe(true);
  const events = (name: string) => frames.filter((f) => f.type === "event" && f.event === name);
  return { ws, request, events, close: () => ws.close() };
}

describe("event routing over a real server", () => {
  const cleanups: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const fn of cleanups.splice(0).reverse()) await fn();
  });

  async function start(): Promise<{ gateway: Gateway; url: string }> {
    const gateway = createGateway({
      store: createMemoryStore(),
      runner: createScriptedRunner({ agents: { main: (turn) => `echo: ${turn.text}` } }),
    });
    const server = await gateway.listen({ auth: { token: "t" } });
    cleanups.push(() => gateway.close({ drainMs: 0 }));
    return { gateway, url: server.url };
  }

  it("leaves no routing entry behind once runs end and connections close", async () => {
    const { gateway, url } = await start();
    const a = await rawClient(url, "t");
    const b = await rawClient(url, "t");
    expect(
      await b.request("sessions.subscribe", { keys: ["main", "other"], runIds: ["nope"] }),
    ).toMatchObject({
      ok: true,
      payload: { subscribed: true, all: false, keys: ["agent:main:main", "agent:main:other"], runIds: [] },
    });
    expect(await a.request("sessions.subscribe", { all: true })).toMatchObject({ payload: { all: true } });
    const runs = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        a.request("chat.send", { sessionKey: "main", message: `m${i}`, idempotencyKey: `k${i}` }),
      ),
    );
    for (const run of runs) await gateway.agentWait({ runId: String(run.payload?.runId) });
    await eventually(() =>
      expect(b.events("chat").filter((e) => (e.payload as { state: string }).state === "final")).toHaveLength(
        10,
      ),
    );
    expect(interestSize(gateway)).toEqual({ live: 0, sessions: 2, all: 1, ended: 0, expected: 0 });
    a.close();
    b.close();
    await eventually(() =>
      expect(interestSize(gateway)).toEqual({ live: 0, sessions: 0, all: 0, ended: 0, expected: 0 }),
    );
  });

  it("unsubscribes bare from everything, or just the keys named", async () => {
    const { url } = await start();
    const c = await rawClient(url, "t");
    await c.request("sessions.subscribe", { keys: ["a", "b"] });
    expect(await c.request("sessions.unsubscribe", { keys: ["a"] })).toMatchObject({
      payload: { subscribed: true, keys: ["agent:main:a"] },
    });
    await c.request("sessions.subscribe", {});
    expect(await c.request("sessions.unsubscribe", { all: true })).toMatchObject({
      payload: { subscribed: true, all: false },
    });
    expect(await c.request("sessions.unsubscribe", {})).toMatchObject({ payload: { subscribed: false } });
    expect(await c.request("sessions.subscribe", { keys: ["agent::x"] })).toMatchObject({
      ok: false,
      error: { code: "INVALID_REQUEST", details: { code: "INVALID_PARAMS", field: "keys[0]" } },
    });
  });
});
