import type { ChatEventPayload, DeliveryRecordPayload, EventFrame } from "@sessions/core";
import {
  type ChannelAdapterV1,
  createGateway,
  createMemoryStore,
  createScriptedRunner,
  type Gateway,
  type GatewayServer,
  type ListenOptions,
  type ScriptedAgent,
} from "@sessions/gateway";
import { eventually } from "@sessions/testing/eventually";
import { afterEach, describe, expect, it } from "vitest";
import {
  createGatewayClient,
  type GatewayClient,
  type GatewayClientOptions,
  type GatewayGap,
} from "./index.js";

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn();
});

/** A chat platform that accepts everything (the outside world). */
const chatChannel: ChannelAdapterV1 = {
  specVersion: 1,
  channel: "chat",
  capabilities: {},
  deliver: async () => ({ messageIds: ["m1"] }),
};

async function startGateway(
  agents: Record<string, ScriptedAgent> = {
    main: (turn) => {
      turn.say("thinking ");
      return `echo: ${turn.text}`;
    },
  },
  listen: ListenOptions = { auth: { token: "secret" } },
): Promise<{ gateway: Gateway; server: GatewayServer }> {
  const gateway = createGateway({
    store: createMemoryStore(),
    runner: createScriptedRunner({ agents }),
    adapters: [chatChannel],
  });
  const server = await gateway.listen(listen);
  cleanups.push(() => gateway.close({ drainMs: 0 }));
  return { gateway, server };
}

/** A connected client and every event it receives, in order. */
async function connect(url: string, extra: Partial<GatewayClientOptions> = {}) {
  const client: GatewayClient = createGatewayClient({
    url,
    token: "secret",
    reconnect: { initialDelayMs: 20, maxDelayMs: 100 },
    ...extra,
  });
  cleanups.push(() => client.close());
  const frames: EventFrame[] = [];
  client.on("*", (_payload, frame) => {
    if (frame.event !== "tick") frames.push(frame);
  });
  await client.ready();
  const of = (event: string) => frames.filter((f) => f.event === event).map((f) => f.payload);
  return {
    client,
    chat: (runId?: string) =>
      (of("chat") as ChatEventPayload[]).filter((c) => runId === undefined || c.runId === runId),
    agent: (runId?: string) =>
      (of("agent") as { runId: string; stream: string; data: { phase?: string } }[]).filter(
        (a) => runId === undefined || a.runId === runId,
      ),
    deliveries: () => of("delivery") as DeliveryRecordPayload[],
    changed: () => of("sessions.changed") as { key: string }[],
    finalOf: (runId: string) =>
      (of("chat") as ChatEventPayload[]).some((c) => c.runId === runId && c.state !== "delta"),
    /** A round trip: every event the server meant for this connection before now has arrived. */
    settle: () => client.agents.list(),
  };
}

describe("run events go to the connections that asked", () => {
  it("sends a run's events to its starter and to no one else", async () => {
    const { server } = await startGateway();
    const a = await connect(server.url);
    const b = await connect(server.url);
    const { runId } = await a.client.chat.send({ sessionKey: "main", message: "one", idempotencyKey: "a-1" });
    await eventually(() => a.finalOf(runId), "the starter's final event");
    expect(a.chat(runId).map((c) => c.state)).toEqual(["delta", "final"]);
    expect(a.agent(runId).map((e) => e.stream)).toEqual(["lifecycle", "assistant", "lifecycle"]);
    await b.settle();
    expect([...b.chat(), ...b.agent(), ...b.changed()]).toEqual([]);
  });

  it("sends a subscribed session's runs and changes, and only that session's", async () => {
    const { server } = await startGateway();
    const a = await connect(server.url);
    const b = await connect(server.url);
    expect(await b.client.sessions.subscribe({ keys: ["main"] })).toMatchObject({
      subscribed: true,
      keys: ["agent:main:main"],
    });
    const there = await a.client.chat.send({ sessionKey: "main", message: "x", idempotencyKey: "m-1" });
    const elsewhere = await a.client.agent({ sessionKey: "other", message: "y", idempotencyKey: "o-1" });
    await eventually(() => a.finalOf(there.runId) && a.finalOf(elsewhere.runId), "both runs");
    await eventually(() => b.finalOf(there.runId), "the subscriber's final event");
    await b.settle();
    expect(b.agent(there.runId).length).toBe(3);
    expect([...b.chat(elsewhere.runId), ...b.agent(elsewhere.runId)]).toEqual([]);
    expect(new Set(b.changed().map((c) => c.key))).toEqual(new Set(["agent:main:main"]));

    await b.client.sessions.unsubscribe({ keys: ["main"] });
    const after = await a.client.chat.send({ sessionKey: "main", message: "z", idempotencyKey: "m-2" });
    await eventually(() => a.finalOf(after.runId), "the third run");
    await b.settle();
    expect(b.chat(after.runId)).toEqual([]);
  });

  it("sends everything to `all` and to a bare (legacy) subscription, runs started in process too", async () => {
    const { gateway, server } = await startGateway();
    const all = await connect(server.url);
    const legacy = await connect(server.url);
    await all.client.sessions.subscribe({ all: true });
    await legacy.client.sessions.subscribe();
    const a = await connect(server.url);
    const one = await a.client.chat.send({ sessionKey: "s1", message: "x", idempotencyKey: "x-1" });
    const two = await gateway.agent({ sessionKey: "s2", message: "y", idempotencyKey: "y-1" });
    for (const c of [all, legacy]) {
      await eventually(() => c.finalOf(one.runId) && c.finalOf(two.runId), "both runs");
      expect(c.agent(two.runId)[0]).toMatchObject({ stream: "lifecycle", data: { phase: "start" } });
      expect(new Set(c.changed().map((e) => e.key))).toEqual(new Set(["agent:main:s1", "agent:main:s2"]));
    }
  });

  it("sends no run events to a token bound to one requester", async () => {
    const { server } = await startGateway(undefined, {
      auth: { token: "secret", tokens: [{ token: "bot", requesterKey: "main" }] },
    });
    const bot = await connect(server.url, { token: "bot" });
    await expect(bot.client.sessions.subscribe()).rejects.toMatchObject({ detailsCode: "MISSING_SCOPE" });
    const a = await connect(server.url);
    const { runId } = await a.client.chat.send({ sessionKey: "main", message: "x", idempotencyKey: "b-1" });
    await eventually(() => a.finalOf(runId), "the run");
    await bot.client.callTool({ requesterKey: "main", name: "agents_list", params: {} });
    expect([...bot.chat(), ...bot.agent(), ...bot.changed(), ...bot.deliveries()]).toEqual([]);
  });

  it("reaches the starter of a run that ends before the response is sent (50 times)", async () => {
    const { server } = await startGateway({ main: () => "instant" });
    const a = await connect(server.url);
    for (let i = 0; i < 50; i++) {
      const started =
        i % 2 === 0
          ? await a.client.chat.send({ sessionKey: `s${i % 5}`, message: "go", idempotencyKey: `i-${i}` })
          : await a.client.agent({ sessionKey: `s${i % 5}`, message: "go", idempotencyKey: `i-${i}` });
      await eventually(() => a.finalOf(started.runId), `run ${i}'s final event`);
      expect(a.agent(started.runId)[0]).toMatchObject({ stream: "lifecycle", data: { phase: "start" } });
    }
  });

  it("lets a caller that repeats a key of a run under way hear the rest of it", async () => {
    let release: (() => void) | undefined;
    const { server } = await startGateway({
      main: async () => {
        await new Promise<void>((resolve) => {
          release = resolve;
        });
        return "late";
      },
    });
    const a = await connect(server.url);
    const b = await connect(server.url);
    const first = await a.client.chat.send({ sessionKey: "main", message: "x", idempotencyKey: "same" });
    await eventually(() => release !== undefined, "the run to start");
    const again = await b.client.chat.send({ sessionKey: "main", message: "x", idempotencyKey: "same" });
    expect(again).toEqual({ runId: first.runId, status: "in_flight" });
    release?.();
    await eventually(() => b.finalOf(first.runId), "the final event on the repeating connection");
    expect(b.chat(first.runId).at(-1)).toMatchObject({
      state: "final",
      message: { role: "assistant", content: [{ type: "text", text: "late" }] },
    });
  });

  it("sends a delivery to the run's starter and the session's subscribers", async () => {
    const { server } = await startGateway();
    const a = await connect(server.url);
    const watcher = await connect(server.url);
    const other = await connect(server.url);
    await watcher.client.sessions.subscribe({ keys: ["main"] });
    await other.client.sessions.subscribe({ keys: ["elsewhere"] });
    const { runId } = await a.client.agent({
      sessionKey: "main",
      message: "hi",
      idempotencyKey: "d-1",
      deliver: true,
      channel: "chat",
      to: "room",
    });
    for (const c of [a, watcher]) {
      await eventually(() => c.deliveries().length > 0, "the delivery event");
      expect(c.deliveries()).toEqual([expect.objectContaining({ runId, status: "delivered" })]);
    }
    await other.settle();
    expect(other.deliveries()).toEqual([]);
  });

  it("streams a run this client neither started nor subscribed to", async () => {
    let release: (() => void) | undefined;
    const { gateway, server } = await startGateway({
      main: async (turn) => {
        await new Promise<void>((resolve) => {
          release = resolve;
        });
        turn.say("streamed ");
        return "done";
      },
    });
    const watcher = await connect(server.url);
    const { runId } = await gateway.agent({ message: "x", idempotencyKey: "st-1" });
    await eventually(() => release !== undefined, "the run to start");
    const stream = watcher.client.streamRun(runId);
    const items: string[] = [];
    const read = (async () => {
      for await (const item of stream)
        items.push(item.type === "chat" ? `chat:${item.payload.state}` : item.type);
    })();
    // The stream's subscription is in place once a later request has been answered.
    await watcher.settle();
    release?.();
    await read;
    // From the run's first event (its start, sent before the stream subscribed), each once.
    expect(items).toEqual(["agent", "chat:delta", "agent", "agent", "chat:final"]);
  });
});

describe("gaps", () => {
  it("tells a listening client of the gap once after the gateway comes back, and restores its subscription", async () => {
    const { gateway, server } = await startGateway();
    const gaps: GatewayGap[] = [];
    const quietGaps: GatewayGap[] = [];
    const listening = await connect(server.url, { onGap: (gap) => gaps.push(gap) });
    await listening.client.sessions.subscribe();
    const quiet = createGatewayClient({
      url: server.url,
      token: "secret",
      reconnect: { initialDelayMs: 20, maxDelayMs: 100 },
      onGap: (gap) => quietGaps.push(gap),
    });
    cleanups.push(() => quiet.close());
    await quiet.ready();
    const firstConn = listening.client.hello?.server.connId;

    await server.close({ reason: "restart" });
    await eventually(() => listening.client.state !== "connected", "the drop");
    const again = await gateway.listen({ port: server.port, auth: { token: "secret" } });
    expect(again.port).toBe(server.port);
    await listening.client.ready();
    await quiet.ready();
    expect(listening.client.hello?.server.connId).not.toBe(firstConn);
    expect(gaps).toEqual([{ reason: "reconnect", downMs: expect.any(Number) }]);
    expect(quietGaps).toEqual([]);

    const { runId } = await gateway.agent({ message: "after", idempotencyKey: "after-1" });
    await eventually(() => listening.finalOf(runId), "events after the reconnect");
    expect(gaps).toHaveLength(1);
  });
});
