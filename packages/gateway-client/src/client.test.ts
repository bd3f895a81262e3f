import { SessionsError } from "@sessions/core";
import {
  type AgentRunner,
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
import { WebSocket, WebSocketServer } from "ws";
import {
  createGatewayClient,
  type GatewayClient,
  GatewayClientError,
  type GatewayClientOptions,
  type RunStreamItem,
} from "./index.js";
import { startProxy, type TestProxy } from "./test-proxy.js";

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn();
});

/** Releases scripted runs on demand, so tests decide when a run ends. */
function gate() {
  const waiting = new Map<string, () => void>();
  return {
    wait: (key: string) => new Promise<void>((resolve) => waiting.set(key, resolve)),
    open(key: string) {
      waiting.get(key)?.();
      waiting.delete(key);
    },
    openAll() {
      for (const resolve of waiting.values()) resolve();
      waiting.clear();
    },
    get size() {
      return waiting.size;
    },
  };
}

async function startGateway(
  agents: Record<string, ScriptedAgent> = { main: (t) => `echo: ${t.text}` },
  listen: ListenOptions = { auth: { token: "secret" } },
  runner?: AgentRunner,
): Promise<{ gateway: Gateway; server: GatewayServer }> {
  const gateway = createGateway({
    store: createMemoryStore(),
    runner: runner ?? createScriptedRunner({ agents, fallback: () => "ok" }),
    config: { tools: { sessions: { visibility: "agent" } } },
  });
  const server = await gateway.listen(listen);
  cleanups.push(() => gateway.close({ drainMs: 0 }));
  return { gateway, server };
}

function connect(url: string, extra: Partial<GatewayClientOptions> = {}): GatewayClient {
  const client = createGatewayClient({
    url,
    token: "secret",
    reconnect: { initialDelayMs: 20, maxDelayMs: 200 },
    ...extra,
  });
  cleanups.push(() => client.close());
  return client;
}

async function proxyTo(server: GatewayServer): Promise<TestProxy> {
  const proxy = await startProxy(server.port);
  cleanups.push(() => proxy.close());
  return proxy;
}

/** A raw socket speaking frames by hand (for malformed input). */
async function rawSocket(url: string) {
  const ws = new WebSocket(url);
  const frames: Record<string, unknown>[] = [];
  let closed: { code: number; reason: string } | undefined;
  ws.on("message", (data) => frames.push(JSON.parse(String(data))));
  ws.on("close", (code, reason) => {
    closed = { code, reason: String(reason) };
  });
  await new Promise((resolve, reject) => {
    ws.once("open", resolve);
    ws.once("error", reject);
  });
  cleanups.push(() => ws.terminate());
  const next = (predicate: (f: Record<string, unknown>) => boolean) =>
    eventually(
      () => frames.find(predicate) ?? false,
      () => `a matching frame (got ${JSON.stringify(frames)})`,
    );
  return {
    ws,
    frames,
    closed: () => closed,
    next,
    send: (value: unknown) => ws.send(typeof value === "string" ? value : JSON.stringify(value)),
    response: (id: string) => next((f) => f.type === "res" && f.id === id),
    async connect(token = "secret") {
      await next((f) => f.event === "connect.challenge");
      ws.send(
        JSON.stringify({
          type: "req",
          id: "c1",
          method: "connect",
          params: {
            minProtocol: 4,
            maxProtocol: 4,
            client: { id: "gateway-client", version: "1", platform: "node", mode: "backend" },
            role: "operator",
            scopes: ["operator.read", "operator.write", "operator.admin"],
            caps: [],
            auth: { token },
          },
        }),
      );
      return next((f) => f.type === "res" && f.id === "c1");
    },
  };
}

describe("handshake and auth", () => {
  it("answers the challenge with hello-ok: methods, events, limits and session defaults", async () => {
    const { server } = await startGateway();
    const client = connect(server.url);
    const hello = await client.ready();
    expect(hello).toMatchObject({
      type: "hello-ok",
      protocol: 4,
      server: { connId: expect.any(String) },
      snapshot: {
        sessionDefaults: {
          defaultAgentId: "main",
          mainKey: "main",
          mainSessionKey: "agent:main:main",
          scope: "per-sender",
        },
      },
      policy: { maxPayload: 1024 * 1024, maxBufferedBytes: 8 * 1024 * 1024, tickIntervalMs: 30_000 },
    });
    expect(hello.features.methods).toEqual(
      expect.arrayContaining(["sessions.list", "agent.wait", "sessions.tools.call", "deliveries.list"]),
    );
    expect(hello.features.events).toEqual(
      expect.arrayContaining(["tick", "chat", "agent", "sessions.changed", "shutdown"]),
    );
  });

  it("rejects a wrong token with AUTH_TOKEN_MISMATCH and closes 1008; the client does not retry", async () => {
    const { server } = await startGateway();
    const raw = await rawSocket(server.url);
    const res = await raw.connect("wrong");
    expect(res).toMatchObject({
      ok: false,
      error: { code: "INVALID_REQUEST", details: { code: "AUTH_TOKEN_MISMATCH" } },
    });
    await eventually(() => raw.closed() !== undefined, "close");
    expect(raw.closed()?.code).toBe(1008);

    const client = connect(server.url, { token: "nope" });
    const error = await client.ready().catch((e) => e);
    expect(error).toBeInstanceOf(GatewayClientError);
    expect(error).toMatchObject({
      code: "forbidden",
      wireCode: "INVALID_REQUEST",
      detailsCode: "AUTH_TOKEN_MISMATCH",
    });
    expect(SessionsError.isInstance(error)).toBe(true);
    await eventually(() => client.state === "closed", "client to give up");
  });

  it("refuses an unsupported protocol range and requests before connect", async () => {
    const { server } = await startGateway();
    const raw = await rawSocket(server.url);
    await raw.next((f) => f.event === "connect.challenge");
    raw.send({
      type: "req",
      id: "c",
      method: "connect",
      params: { minProtocol: 5, maxProtocol: 6, client: { id: "x", version: "1", platform: "p", mode: "m" } },
    });
    expect(await raw.response("c")).toMatchObject({
      ok: false,
      error: { details: { code: "PROTOCOL_UNSUPPORTED" } },
    });
    const other = await rawSocket(server.url);
    other.send({ type: "req", id: "early", method: "sessions.list", params: {} });
    expect(await other.response("early")).toMatchObject({
      ok: false,
      error: { details: { code: "NOT_CONNECTED" } },
    });
  });

  it("binds a token to one requester: only sessions.tools.call as that session", async () => {
    const { server } = await startGateway(undefined, {
      auth: { token: "secret", tokens: [{ token: "bot", requesterKey: "main" }] },
    });
    const bot = connect(server.url, { token: "bot" });
    expect(await bot.callTool({ requesterKey: "main", name: "sessions_list", params: {} })).toMatchObject({
      count: expect.any(Number),
    });
    await expect(
      bot.callTool({ requesterKey: "agent:ops:main", name: "sessions_list", params: {} }),
    ).rejects.toMatchObject({
      code: "forbidden",
      detailsCode: "MISSING_SCOPE",
    });
    await expect(bot.sessions.list()).rejects.toMatchObject({ wireCode: "FORBIDDEN" });
  });
});

describe("every method over the wire", () => {
  it("round-trips the session methods, tools, deliveries and events", async () => {
    const { gateway, server } = await startGateway();
    const client = connect(server.url);
    const changed: unknown[] = [];
    client.on("sessions.changed", (p) => changed.push(p));
    await client.sessions.subscribe();

    const started = await client.agent({ message: "hello", idempotencyKey: "a-1" });
    expect(started).toMatchObject({ sessionKey: "agent:main:main", agentId: "main", status: "accepted" });
    expect(await client.waitRun(started.runId)).toMatchObject({
      runId: started.runId,
      status: "ok",
      reply: "echo: hello",
    });
    expect(await client.agentWait({ runId: started.runId, timeoutMs: 10 })).toMatchObject({ status: "ok" });

    const list = await client.sessions.list({ limit: 10 });
    expect(list).toMatchObject({
      count: 1,
      hasMore: false,
      sessions: [{ key: "agent:main:main", kind: "direct" }],
    });
    expect(await client.sessions.patch({ key: "main", label: "home", sendPolicy: "deny" })).toMatchObject({
      ok: true,
      entry: { key: "agent:main:main", kind: "direct", label: "home", sendPolicy: "deny" },
    });
    expect(await client.sessions.resolve({ label: "home" })).toEqual({
      ok: true,
      key: "agent:main:main",
      agentId: "main",
    });
    const history = await client.chat.history({ sessionKey: "main", limit: 5 });
    expect(history.messages.map((m) => m.content)).toEqual(["hello", "echo: hello"]);
    expect(history.messages.map((m) => [m.seq, m.__openclaw?.seq])).toEqual([
      [1, 1],
      [2, 2],
    ]);
    // A session that does not exist has an empty history (as on OpenClaw), not an error.
    expect(await client.chat.history({ sessionKey: "ghost" })).toMatchObject({
      messages: [],
      totalMessages: 0,
    });
    const send = await client.chat.send({ sessionKey: "main", message: "again", idempotencyKey: "c-1" });
    expect(send).toEqual({ runId: "c-1", status: "started" });
    await client.waitRun(send.runId);
    expect(await client.chat.abort({ sessionKey: "main" })).toEqual({ ok: true, aborted: false, runIds: [] });
    expect(await client.agents.list()).toMatchObject({ defaultId: "main", agents: [{ id: "main" }] });
    expect(await client.callTool({ requesterKey: "main", name: "agents_list", params: {} })).toMatchObject({
      requester: "main",
    });
    expect(await client.deliveries.list({ sessionKey: "main" })).toEqual({ deliveries: [] });
    await expect(client.deliveries.get({ id: "missing" })).rejects.toMatchObject({
      code: "not_found",
      detailsCode: "NOT_FOUND",
    });
    await expect(client.sessions.patch({ key: "agent:main:ghost", label: "x" })).rejects.toMatchObject({
      code: "not_found",
    });
    await expect(
      client.callTool({ requesterKey: "main", name: "sessions_list", params: { kinds: ["x"] } }),
    ).rejects.toMatchObject({
      code: "invalid_params",
      details: { field: "kinds[0]" },
    });
    expect(await client.sessions.delete({ key: "main" })).toEqual({
      ok: true,
      key: "agent:main:main",
      deleted: true,
      archived: [],
    });
    await eventually(() => changed.length >= 3, "sessions.changed events");
    expect(changed).toContainEqual({ key: "agent:main:main", reason: "deleted" });
    expect(await gateway.store.getEntry("agent:main:main")).toBeUndefined();
  });

  it("sends agent { spawnedBy } to our gateway, which announces the extension in hello-ok", async () => {
    const { gateway, server } = await startGateway();
    const client = connect(server.url);
    const hello = await client.ready();
    expect(hello.features.capabilities).toContain("agent.spawnedBy");
    const started = await client.agent({
      message: "child work",
      idempotencyKey: "sb-1",
      sessionKey: "agent:main:child",
      spawnedBy: "agent:main:main",
    });
    await client.waitRun(started.runId);
    expect(await gateway.store.getEntry("agent:main:child")).toMatchObject({ spawnedBy: "agent:main:main" });
  });

  it("streams a run's events and ends at the final one", async () => {
    const { server } = await startGateway({
      main: async (turn) => {
        await turn.sleep(30);
        turn.say("thinking… ");
        await turn.sleep(20);
        return "done";
      },
    });
    const client = connect(server.url);
    await client.ready();
    const { runId } = await client.agent({ message: "go", idempotencyKey: "s-1" });
    const items = [];
    for await (const item of client.streamRun(runId)) items.push(item);
    expect(
      items.some(
        (i) => i.type === "chat" && i.payload.state === "delta" && i.payload.deltaText === "thinking… ",
      ),
    ).toBe(true);
    expect(items.at(-1)).toMatchObject({
      type: "chat",
      payload: { state: "final", message: { role: "assistant", content: [{ type: "text", text: "done" }] } },
    });
    expect(items.some((i) => i.type === "agent" && i.payload.stream === "lifecycle")).toBe(true);
  });

  /** A run that streams "thinking… ", then waits for the gate, then streams "more" and ends with "done". */
  async function heldRun() {
    const hold = gate();
    const { server } = await startGateway({
      main: async (turn) => {
        turn.say("thinking… ");
        await hold.wait("run");
        turn.say("more");
        return "done";
      },
    });
    return { server, hold };
  }

  /** What a stream told: text deltas joined, the events' `seq` in order, and how it ended. */
  async function readStream(stream: AsyncIterableIterator<RunStreamItem>) {
    const items: RunStreamItem[] = [];
    for await (const item of stream) items.push(item);
    const events = items.flatMap((i) => (i.type === "chat" || i.type === "agent" ? [i] : []));
    return {
      items,
      seqs: events.map((i) => i.payload.seq),
      text: events
        .map((i) => (i.type === "chat" && i.payload.state === "delta" ? i.payload.deltaText : ""))
        .join(""),
      assistant: events
        .map((i) =>
          i.type === "agent" && i.payload.stream === "assistant"
            ? (i.payload.data as { text: string }).text
            : "",
        )
        .join(""),
      lifecycle: events.flatMap((i) =>
        i.type === "agent" && i.payload.stream === "lifecycle"
          ? [(i.payload.data as { phase: string }).phase]
          : [],
      ),
    };
  }

  it("streams every event of a run when called after the run has emitted some, on the starter and on another connection", async () => {
    const { server, hold } = await heldRun();
    const client = connect(server.url);
    const watcher = connect(server.url);
    await Promise.all([client.ready(), watcher.ready()]);
    const heard: unknown[] = [];
    client.on("chat", (payload) => heard.push(payload));
    const { runId } = await client.agent({ message: "go", idempotencyKey: "late-1" });
    // The delta reached this connection before anyone streamed the run.
    await eventually(() => expect(heard).toHaveLength(1));
    await eventually(() => expect(hold.size).toBe(1));
    const streams = [readStream(client.streamRun(runId)), readStream(watcher.streamRun(runId))];
    // Opened at once: the rest may come before or after each subscription's answer; either way each event once.
    hold.open("run");
    for (const read of await Promise.all(streams)) {
      expect(read.text).toBe("thinking… more");
      expect(read.assistant).toBe("thinking… more");
      expect(read.lifecycle).toEqual(["start", "end"]);
      expect(read.seqs).toEqual([...new Set(read.seqs)].sort((a, b) => a - b));
      expect(read.items.at(-1)).toMatchObject({
        type: "chat",
        payload: { state: "final", message: { content: [{ type: "text", text: "done" }] } },
      });
    }
  });

  it("streams every event of a run that has already ended, ending at its final event", async () => {
    const { server, hold } = await heldRun();
    const client = connect(server.url);
    await client.ready();
    const { runId } = await client.agent({ message: "go", idempotencyKey: "late-2" });
    await eventually(() => expect(hold.size).toBe(1));
    hold.open("run");
    expect(await client.waitRun(runId, { timeoutMs: 60_000 })).toMatchObject({ status: "ok" });
    const read = await readStream(client.streamRun(runId));
    expect(read.text).toBe("thinking… more");
    expect(read.lifecycle).toEqual(["start", "end"]);
    expect(read.items.at(-1)).toMatchObject({ type: "chat", payload: { state: "final" } });
  });
});

describe("bad frames", () => {
  it("answers malformed, invalid, unknown and oversized frames with typed errors and keeps every connection working", async () => {
    const { server } = await startGateway(undefined, { auth: { token: "secret" }, maxPayload: 2048 });
    const raw = await rawSocket(server.url);
    expect(await raw.connect()).toMatchObject({ ok: true });
    const bystander = connect(server.url);
    await bystander.ready();

    raw.send("{not json");
    expect(
      await raw.next(
        (f) =>
          f.type === "res" &&
          (f.error as { details?: { code?: string } })?.details?.code === "MALFORMED_FRAME",
      ),
    ).toBeDefined();
    raw.send({ type: "req", id: "x1", method: "sessions.list", params: {}, extra: 1 });
    expect(await raw.response("x1")).toMatchObject({
      ok: false,
      error: { code: "INVALID_REQUEST", details: { code: "INVALID_FRAME" } },
    });
    raw.send({ type: "req", id: "x2", method: "sessions.explode", params: {} });
    expect(await raw.response("x2")).toMatchObject({
      ok: false,
      error: { details: { code: "UNKNOWN_METHOD" } },
    });
    raw.send({ type: "req", id: "x3", method: "sessions.patch", params: { key: "main", nope: true } });
    expect(await raw.response("x3")).toMatchObject({
      ok: false,
      error: { code: "INVALID_REQUEST", details: { code: "INVALID_PARAMS" } },
    });
    raw.send({
      type: "req",
      id: "x4",
      method: "chat.send",
      params: { sessionKey: "main", message: "x".repeat(4096), idempotencyKey: "k" },
    });
    expect(
      await raw.next(
        (f) => (f.error as { details?: { code?: string } })?.details?.code === "PAYLOAD_TOO_LARGE",
      ),
    ).toBeDefined();
    raw.ws.send(Buffer.from([1, 2, 3]), { binary: true });
    expect(
      await raw.next((f) => (f.error as { message?: string })?.message === "binary frames are not supported"),
    ).toBeDefined();

    raw.send({ type: "req", id: "ok", method: "agents.list", params: {} });
    expect(await raw.response("ok")).toMatchObject({ ok: true, payload: { defaultId: "main" } });
    expect(raw.closed()).toBeUndefined();
    expect(await bystander.agents.list()).toMatchObject({ defaultId: "main" });
  });

  it("caps pre-connect frames at 64 KiB and closes", async () => {
    const { server } = await startGateway();
    const raw = await rawSocket(server.url);
    raw.send({ type: "req", id: "big", method: "connect", params: { pad: "x".repeat(70 * 1024) } });
    await eventually(() => raw.closed() !== undefined, "close");
    expect(raw.closed()?.code).toBe(1009);
    expect(
      raw.frames.some(
        (f) => (f.error as { details?: { code?: string } })?.details?.code === "PAYLOAD_TOO_LARGE",
      ),
    ).toBe(true);
  });
});

describe("resilience", () => {
  it("keeps a waitRun across a killed socket and resolves after the reconnect", async () => {
    const release = gate();
    const { server } = await startGateway({
      main: async () => {
        await release.wait("run");
        return "finished";
      },
    });
    const proxy = await proxyTo(server);
    const client = connect(proxy.url);
    await client.ready();
    const { runId } = await client.agent({ message: "work", idempotencyKey: "w-1" });
    const waiting = client.waitRun(runId);
    await eventually(() => release.size === 1, "run to start");
    proxy.cut();
    await eventually(() => client.state !== "connected", "disconnect");
    release.open("run");
    await expect(waiting).resolves.toMatchObject({ runId, status: "ok", reply: "finished" });
    expect(client.state).toBe("connected");
  });

  it("fails in-flight requests with requestSent and runs an idempotent chat.send once after a retry", async () => {
    const release = gate();
    const { gateway, server } = await startGateway({
      main: async () => {
        await release.wait("r");
        return "ok";
      },
    });
    const proxy = await proxyTo(server);
    const client = connect(proxy.url);
    await client.ready();
    proxy.freeze(true);
    const first = client.chat.send({ sessionKey: "main", message: "once", idempotencyKey: "idem-1" });
    await eventually(
      async () => (await gateway.store.readMessages("agent:main:main", { limit: 5 })).length === 1,
      "the send to arrive",
    );
    proxy.cut();
    proxy.freeze(false);
    const error = await first.catch((e) => e);
    expect(error).toMatchObject({ code: "unavailable", requestSent: true, retryable: true });
    const retried = await client.chat.send({ sessionKey: "main", message: "once", idempotencyKey: "idem-1" });
    expect(retried.status).toBe("in_flight");
    release.openAll();
    await client.waitRun(retried.runId);
    const users = (await gateway.store.readMessages("agent:main:main", { limit: 10 })).filter(
      (m) => m.role === "user",
    );
    expect(users).toHaveLength(1);
  });

  it("reconnects when ticks stop (close 4000) and restores the sessions.changed subscription", async () => {
    const { gateway, server } = await startGateway(undefined, {
      auth: { token: "secret" },
      tickIntervalMs: 50,
    });
    const proxy = await proxyTo(server);
    const client = connect(proxy.url);
    await client.sessions.subscribe();
    const first = client.hello?.server.connId;
    const disconnects: unknown[] = [];
    client.on("disconnected", (p) => disconnects.push(p));
    proxy.freeze(true);
    await eventually(() => disconnects.length > 0, "the watchdog");
    expect(disconnects[0]).toMatchObject({ code: 4000 });
    proxy.freeze(false);
    await client.ready();
    expect(client.hello?.server.connId).not.toBe(first);
    const changed: unknown[] = [];
    client.on("sessions.changed", (p) => changed.push(p));
    await gateway.agent({ message: "hi", idempotencyKey: "after" });
    await eventually(() => changed.length > 0, "sessions.changed after reconnect");
  });

  it("holds 1,000 concurrent waits on one connection with bounded memory", async () => {
    const release = gate();
    const { server } = await startGateway({
      main: async (turn) => {
        await release.wait(turn.sessionKey);
        return `done ${turn.text}`;
      },
    });
    const client = connect(server.url);
    await client.ready();
    const runs = await Promise.all(
      Array.from({ length: 1000 }, (_, i) =>
        client.agent({ message: String(i), sessionKey: `agent:main:s${i}`, idempotencyKey: `m-${i}` }),
      ),
    );
    globalThis.gc?.();
    const before = process.memoryUsage().heapUsed;
    const waits = runs.map((r) => client.waitRun(r.runId));
    await eventually(() => release.size === 1000, "all runs to start");
    const during = process.memoryUsage().heapUsed;
    release.openAll();
    const results = await Promise.all(waits);
    expect(results.every((r, i) => r.status === "ok" && r.reply === `done ${i}`)).toBe(true);
    expect(during - before).toBeLessThan(64 * 1024 * 1024);
  });

  it("drops a slow consumer instead of buffering without bound", async () => {
    const { gateway, server } = await startGateway(undefined, {
      auth: { token: "secret" },
      maxBufferedBytes: 16 * 1024,
    });
    const raw = await rawSocket(server.url);
    await raw.connect();
    raw.send({ type: "req", id: "sub", method: "sessions.subscribe", params: {} });
    expect(await raw.response("sub")).toMatchObject({ ok: true, payload: { subscribed: true, all: true } });
    const healthy = connect(server.url);
    await healthy.ready();
    (raw.ws as unknown as { _socket: { pause(): void } })._socket.pause();
    for (let i = 0; i < 2000 && server.connections() > 1; i++) {
      await gateway.agent({
        message: "x".repeat(8000),
        idempotencyKey: `flood-${i}`,
        sessionKey: `agent:main:f${i % 20}`,
      });
    }
    await eventually(() => server.connections() === 1, "the slow consumer to be dropped");
    expect(await healthy.agents.list()).toMatchObject({ defaultId: "main" });
  });

  it("sends shutdown on a graceful stop and reconnects after restartExpectedMs", async () => {
    const { server } = await startGateway();
    const client = connect(server.url);
    await client.ready();
    const shutdowns: unknown[] = [];
    client.on("shutdown", (p) => shutdowns.push(p));
    await server.close({ reason: "upgrade", restartExpectedMs: 50 });
    expect(shutdowns).toEqual([{ reason: "upgrade", restartExpectedMs: 50 }]);
    await eventually(() => client.state === "reconnecting", "reconnecting");
  });
});

describe("client against a scripted fake server", () => {
  async function fakeServer(onConnection: (ws: WebSocket) => void) {
    const wss = new WebSocketServer({ port: 0, host: "127.0.0.1" });
    await new Promise((r) => wss.once("listening", r));
    wss.on("connection", onConnection);
    cleanups.push(() => new Promise((r) => wss.close(r)));
    return `ws://127.0.0.1:${(wss.address() as { port: number }).port}`;
  }

  const helloFrame = (id: string) => ({
    type: "res",
    id,
    ok: true,
    payload: {
      type: "hello-ok",
      protocol: 4,
      server: { version: "x", connId: "c" },
      features: { methods: [], events: [] },
      snapshot: { sessionDefaults: {} },
      auth: { role: "operator", scopes: [] },
      policy: { maxPayload: 1_000_000, maxBufferedBytes: 1_000_000, tickIntervalMs: 60_000 },
    },
  });

  it("reports seq gaps through onGap", async () => {
    const url = await fakeServer((ws) => {
      ws.send(
        JSON.stringify({ type: "event", event: "connect.challenge", payload: { nonce: "n", ts: 1 }, seq: 1 }),
      );
      ws.on("message", (data) => {
        const frame = JSON.parse(String(data));
        ws.send(JSON.stringify(helloFrame(frame.id)));
        ws.send(JSON.stringify({ type: "event", event: "tick", payload: { ts: 1 }, seq: 2 }));
        ws.send(JSON.stringify({ type: "event", event: "tick", payload: { ts: 2 }, seq: 5 }));
      });
    });
    const gaps: unknown[] = [];
    const client = connect(url, { onGap: (gap) => gaps.push(gap) });
    await client.ready();
    await eventually(() => gaps.length === 1, "the gap");
    expect(gaps).toEqual([{ reason: "seq", expected: 3, received: 5 }]);
  });

  it("times out a request locally, saying whether it was sent", async () => {
    const url = await fakeServer((ws) => {
      ws.send(JSON.stringify({ type: "event", event: "connect.challenge", payload: {}, seq: 1 }));
      ws.on("message", (data) => {
        const frame = JSON.parse(String(data));
        if (frame.method === "connect") ws.send(JSON.stringify(helloFrame(frame.id)));
      });
    });
    const client = connect(url);
    await client.ready();
    await expect(client.sessions.list({}, { timeoutMs: 50 })).rejects.toMatchObject({
      code: "timeout",
      requestSent: true,
      retryable: true,
    });
  });

  it("honours retryAfterMs when the gateway is unavailable at connect", async () => {
    let attempts = 0;
    const times: number[] = [];
    const url = await fakeServer((ws) => {
      attempts++;
      times.push(Date.now());
      ws.send(JSON.stringify({ type: "event", event: "connect.challenge", payload: {}, seq: 1 }));
      ws.on("message", (data) => {
        const frame = JSON.parse(String(data));
        if (attempts === 1) {
          ws.send(
            JSON.stringify({
              type: "res",
              id: frame.id,
              ok: false,
              error: { code: "UNAVAILABLE", message: "starting", retryable: true, retryAfterMs: 300 },
            }),
          );
          ws.close(1013);
        } else ws.send(JSON.stringify(helloFrame(frame.id)));
      });
    });
    const client = connect(url);
    await client.ready().catch(() => undefined);
    await client.ready();
    expect(attempts).toBe(2);
    expect((times[1] as number) - (times[0] as number)).toBeGreaterThanOrEqual(280);
  });

  it("ends streamRun with an explicit disconnected item instead of hanging", async () => {
    let socket: WebSocket | undefined;
    const url = await fakeServer((ws) => {
      socket = ws;
      ws.send(JSON.stringify({ type: "event", event: "connect.challenge", payload: {}, seq: 1 }));
      ws.on("message", (data) => {
        const frame = JSON.parse(String(data));
        if (frame.method === "connect") ws.send(JSON.stringify(helloFrame(frame.id)));
        else
          ws.send(
            JSON.stringify({
              type: "res",
              id: frame.id,
              ok: true,
              payload: { runId: "r1", status: "timeout" },
            }),
          );
      });
    });
    const client = connect(url, { reconnect: false });
    await client.ready();
    const stream = client.streamRun("r1");
    socket?.send(
      JSON.stringify({
        type: "event",
        event: "chat",
        payload: { runId: "r1", sessionKey: "s", seq: 1, state: "delta", deltaText: "a" },
        seq: 2,
      }),
    );
    setTimeout(() => socket?.terminate(), 30);
    const items = [];
    for await (const item of stream) items.push(item);
    expect(items.map((i) => i.type)).toEqual(["chat", "disconnected"]);
  });
});

it("rejects a bad url with a typed error", () => {
  expect(() => createGatewayClient({ url: "http://x" })).toThrowError(
    expect.objectContaining({ code: "invalid_params" }),
  );
});
