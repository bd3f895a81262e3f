import {
  createGateway,
  createMemoryStore,
  createScriptedRunner,
  type Gateway,
  type GatewayServer,
  type ListenOptions,
} from "@sessions/gateway";
import { eventually } from "@sessions/testing/eventually";
import { afterEach, describe, expect, it } from "vitest";
import { WebSocket, WebSocketServer } from "ws";
import { createGatewayClient, type GatewayClient, type GatewayClientOptions } from "./index.js";

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn();
});

async function start(
  listen: ListenOptions = { auth: { token: "t" } },
): Promise<{ gateway: Gateway; server: GatewayServer }> {
  const gateway = createGateway({
    store: createMemoryStore(),
    runner: createScriptedRunner({
      agents: {
        main: async (turn) => {
          if (turn.text === "slow") await turn.sleep(5000);
          return `echo: ${turn.text}`;
        },
      },
    }),
    config: { tools: { sessions: { visibility: "agent" } } },
  });
  const server = await gateway.listen(listen);
  cleanups.push(() => gateway.close({ drainMs: 0 }));
  return { gateway, server };
}

function client(url: string, extra: Partial<GatewayClientOptions> = {}): GatewayClient {
  const c = createGatewayClient({
    url,
    token: "t",
    reconnect: { initialDelayMs: 20, maxDelayMs: 100 },
    ...extra,
  });
  cleanups.push(() => c.close());
  return c;
}

/** A raw socket that connects with chosen scopes and collects frames. */
async function raw(url: string, options: { origin?: string } = {}) {
  const ws = new WebSocket(url, options.origin ? { origin: options.origin } : {});
  const frames: Record<string, unknown>[] = [];
  let closed: number | undefined;
  ws.on("message", (d) => frames.push(JSON.parse(String(d))));
  ws.on("close", (code) => {
    closed = code;
  });
  cleanups.push(() => ws.terminate());
  const opened = await new Promise<boolean>((resolve) => {
    ws.once("open", () => resolve(true));
    ws.once("error", () => resolve(false));
  });
  const wait = (predicate: () => boolean, what: string) =>
    eventually(predicate, () => `${what} (frames ${JSON.stringify(frames)}, close code ${closed})`);
  return {
    ws,
    opened,
    frames,
    closed: () => closed,
    wait,
    send: (v: unknown) => ws.send(typeof v === "string" ? v : JSON.stringify(v)),
    async response(id: string) {
      await wait(() => frames.some((f) => f.id === id), `a response to ${id}`);
      return frames.find((f) => f.id === id);
    },
    async connect(scopes: string[], token = "t") {
      await wait(() => frames.length > 0, "the connect challenge");
      ws.send(
        JSON.stringify({
          type: "req",
          id: "c",
          method: "connect",
          params: {
            minProtocol: 4,
            maxProtocol: 4,
            client: { id: "x", version: "1", platform: "node", mode: "backend" },
            scopes,
            auth: { token },
          },
        }),
      );
      await wait(() => frames.some((f) => f.id === "c"), "the connect response");
      return frames.find((f) => f.id === "c");
    },
  };
}

describe("server hardening", () => {
  it("enforces scopes: read-only connections cannot write", async () => {
    const { server } = await start();
    const r = await raw(server.url);
    expect(await r.connect(["operator.read"])).toMatchObject({ ok: true });
    r.send({ type: "req", id: "l", method: "sessions.list", params: {} });
    expect(await r.response("l")).toMatchObject({ ok: true });
    r.send({
      type: "req",
      id: "s",
      method: "chat.send",
      params: { sessionKey: "main", message: "x", idempotencyKey: "k" },
    });
    expect(await r.response("s")).toMatchObject({
      ok: false,
      error: { code: "FORBIDDEN", details: { code: "MISSING_SCOPE", missingScope: "operator.write" } },
    });
    r.send({ type: "req", id: "d", method: "sessions.delete", params: { key: "main" } });
    expect(await r.response("d")).toMatchObject({
      ok: false,
      error: { details: { missingScope: "operator.admin" } },
    });
    r.send({ type: "req", id: "u", method: "sessions.subscribe", params: { junk: 1 } });
    expect(await r.response("u")).toMatchObject({
      ok: false,
      error: { details: { code: "INVALID_PARAMS" } },
    });
  });

  it("answers an oversized frame on its request id, so the client is not left waiting", async () => {
    const { server } = await start({ auth: { token: "t" }, maxPayload: 2048 });
    const r = await raw(server.url);
    await r.connect(["operator.write"]);
    r.send({
      type: "req",
      id: "big-1",
      method: "chat.send",
      params: { sessionKey: "main", message: "x".repeat(5000), idempotencyKey: "k" },
    });
    expect(await r.response("big-1")).toMatchObject({
      ok: false,
      error: { details: { code: "PAYLOAD_TOO_LARGE" } },
    });
    const c = client(server.url);
    await c.ready();
    await expect(
      c.chat.send({ sessionKey: "main", message: "y".repeat(5000), idempotencyKey: "k2" }),
    ).rejects.toMatchObject({
      code: "payload_too_large",
      requestSent: false,
    });
  });

  it("refuses a response too large to send and asks for a smaller page", async () => {
    const { gateway, server } = await start({ auth: { token: "t" }, maxResponseBytes: 4000 });
    for (let i = 0; i < 5; i++) {
      const { runId } = await gateway.agent({ message: "y".repeat(900), idempotencyKey: `big-${i}` });
      await gateway.agentWait({ runId });
    }
    const c = client(server.url);
    await c.ready();
    await expect(c.chat.history({ sessionKey: "main", limit: 10 })).rejects.toMatchObject({
      code: "payload_too_large",
      message: expect.stringContaining("smaller page"),
    });
    expect((await c.chat.history({ sessionKey: "main", limit: 1 })).messages).toHaveLength(1);
  });

  it("closes sockets that never connect or only send garbage, and refuses browser origins without a token", async () => {
    const { server } = await start({ auth: "none", connectTimeoutMs: 100 });
    const idle = await raw(server.url);
    await idle.wait(() => idle.closed() !== undefined, "the idle socket closed");
    expect(idle.closed()).toBe(1008);
    const noisy = await raw(server.url);
    for (let i = 0; i < 3; i++) noisy.send("{not json");
    await noisy.wait(() => noisy.closed() !== undefined, "the noisy socket closed");
    expect(noisy.closed()).toBe(1008);
    const page = await raw(server.url, { origin: "https://evil.example" });
    expect(page.opened).toBe(false);
  });

  it("forces sandboxing for a bound token that says so, and tells it only its methods", async () => {
    const { gateway, server } = await start({
      auth: { token: "t", tokens: [{ token: "bot", requesterKey: "main", sandboxed: true }] },
    });
    const own = await gateway.agent({ message: "seed", idempotencyKey: "a" });
    const ops = await gateway.agent({
      message: "seed",
      idempotencyKey: "b",
      sessionKey: "agent:main:chat:group:ops",
    });
    const bot = client(server.url, { token: "bot" });
    const hello = await bot.ready();
    expect(hello.features.methods).toEqual(["sessions.tools.call", "runs.tree"]);
    // The trees of runs it may see, as its requester: another session's run looks like none.
    const tree = await bot.runs.tree({ runId: own.runId, requesterKey: "main" });
    expect(tree.runs.map((run) => run.runId)).toEqual([own.runId]);
    await expect(bot.runs.tree({ runId: ops.runId, requesterKey: "main" })).rejects.toMatchObject({
      code: "not_found",
    });
    await expect(bot.runs.tree({ runId: own.runId })).rejects.toMatchObject({ detailsCode: "MISSING_SCOPE" });
    const seen = (await bot.callTool({
      requesterKey: "main",
      name: "sessions_list",
      params: {},
      sandboxed: false,
    })) as { sessions: { key: string }[] };
    expect(seen.sessions.map((s) => s.key)).toEqual(["main"]);
  });

  it("reports a concurrent retry of chat.send as in_flight and caps requests in flight", async () => {
    const { server } = await start({ auth: { token: "t" }, maxInFlight: 2 });
    const c = client(server.url);
    await c.ready();
    const [a, b] = await Promise.all([
      c.chat.send({ sessionKey: "main", message: "slow", idempotencyKey: "same" }),
      c.chat.send({ sessionKey: "main", message: "slow", idempotencyKey: "same" }),
    ]);
    expect(a.runId).toBe(b.runId);
    expect([a.status, b.status].sort()).toEqual(["in_flight", "started"]);
    const waits = [
      c.agentWait({ runId: a.runId, timeoutMs: 2000 }),
      c.agentWait({ runId: a.runId, timeoutMs: 2000 }),
    ];
    await expect(c.agentWait({ runId: a.runId, timeoutMs: 2000 })).rejects.toMatchObject({
      detailsCode: "TOO_MANY_REQUESTS",
      retryable: true,
    });
    await Promise.all(waits);
  });
});

describe("client hardening", () => {
  it("gives up a handshake that never completes", async () => {
    const wss = new WebSocketServer({ port: 0, host: "127.0.0.1" });
    await new Promise((r) => wss.once("listening", r));
    cleanups.push(() => new Promise((r) => wss.close(r)));
    const c = client(`ws://127.0.0.1:${(wss.address() as { port: number }).port}`, {
      connectTimeoutMs: 100,
      reconnect: false,
    });
    await expect(c.ready()).rejects.toMatchObject({ code: "unavailable" });
  });

  it("keeps waitRun to its own deadline and signal while the gateway is down", async () => {
    const c = client("ws://127.0.0.1:9", { reconnect: { initialDelayMs: 50, maxDelayMs: 50 } });
    const started = Date.now();
    expect(await c.waitRun("r1", { timeoutMs: 200 })).toEqual({ runId: "r1", status: "timeout" });
    // A bound against waiting for a gateway that never comes back, not a budget (a busy machine may stall seconds).
    expect(Date.now() - started).toBeLessThan(60_000);
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 50);
    await expect(c.waitRun("r1", { signal: controller.signal })).rejects.toMatchObject({ code: "aborted" });
  });

  it("ends streamRun for finished and unknown runs, and on close()", async () => {
    const { gateway, server } = await start();
    const c = client(server.url);
    await c.ready();
    // The stream starts after the run is over (and the client, which neither started nor follows it, heard
    // nothing): the server kept the run's events, so the stream is the run's, to its final event.
    const { runId } = await gateway.agent({ message: "hi", idempotencyKey: "done" });
    await gateway.agentWait({ runId });
    const finished = [];
    for await (const item of c.streamRun(runId)) finished.push(item);
    expect(finished.map((item) => item.type)).toEqual(["agent", "agent", "chat"]);
    expect(finished.at(-1)).toMatchObject({ type: "chat", payload: { state: "final" } });
    // A server that never saw the run (it ended before this one listened) has no events of it: the outcome ends it.
    const later = await gateway.listen({ auth: { token: "t" } });
    const d = client(later.url);
    const outcome = [];
    for await (const item of d.streamRun(runId)) outcome.push(item);
    expect(outcome).toEqual([
      { type: "done", result: expect.objectContaining({ status: "ok", reply: "echo: hi" }) },
    ]);
    await later.close();
    const unknown = [];
    for await (const item of c.streamRun("no-such-run")) unknown.push(item.type);
    expect(unknown).toEqual(["error"]);
    const slow = await gateway.agent({ message: "slow", idempotencyKey: "slow" });
    const stream = c.streamRun(slow.runId);
    setTimeout(() => void c.close(), 50);
    const items = [];
    for await (const item of stream) items.push(item.type);
    expect(items.at(-1)).toBe("disconnected");
  });

  it("rejects a malformed url synchronously with a typed error", () => {
    expect(() => createGatewayClient({ url: "ws://exa mple:1" })).toThrowError(
      expect.objectContaining({ code: "invalid_params" }),
    );
  });
});
