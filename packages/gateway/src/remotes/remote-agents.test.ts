import type { AgentsListResult, SessionsSendResult, SessionsSpawnResult } from "@sessions/core";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { announceDeliveryId } from "../a2a/receipt.js";
import { createGateway } from "../create-gateway.js";
import type { Gateway, GatewayEvent } from "../gateway.js";
import { createScriptedRunner } from "../runner/scripted.js";
import type { GatewayServer } from "../server/listen.js";
import { cleanupDirs, eventually, openStore } from "../test-kit.js";
import { type SdkAgent, startSdkAgent } from "./sdk-agent.fixture.js";

afterAll(cleanupDirs);

const MAIN = "agent:main:main";
const WEATHER = "agent:weather:a2a:main";
const TRACE = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

let remote: SdkAgent | undefined;
let gateway: Gateway | undefined;
const others: { close(): Promise<void> }[] = [];
afterEach(async () => {
  await gateway?.close({ drainMs: 100 });
  for (const other of others.splice(0).reverse()) await other.close();
  await remote?.close();
  gateway = undefined;
  remote = undefined;
});

/**
 * The main agent makes the `sessions_send` (or other tool) call its message gives as JSON, `{ tool, params }`,
 * and replies with the result; it ends reply-back turns at once.
 */
const runner = createScriptedRunner({
  agents: {
    main: async (turn) => {
      if (turn.kind === "ping_pong")
        return turn.text.includes("talk back") && !turn.text.includes("message 2")
          ? "and one more thing"
          : "REPLY_SKIP";
      if (!turn.text.startsWith("{") && !turn.text.startsWith("[")) return "ok";
      // One call, or several in a row (an array): the results in the same shape.
      const calls = JSON.parse(turn.text) as
        | { tool: string; params: unknown }
        | { tool: string; params: unknown }[];
      if (!Array.isArray(calls)) return JSON.stringify(await turn.callTool(calls.tool, calls.params));
      const results: unknown[] = [];
      for (const call of calls) results.push(await turn.callTool(call.tool, call.params));
      return JSON.stringify(results);
    },
  },
});

/** A gateway whose `weather` agent is `agent` (an `@a2a-js/sdk` server), with agent-to-agent sends allowed. */
function start(
  agent: SdkAgent,
  config: Record<string, unknown> = {},
  auth?: Record<string, unknown>,
): Gateway {
  const { store } = openStore("sqlite");
  gateway = createGateway({
    store,
    runner,
    config: {
      tools: { sessions: { visibility: "all" }, agentToAgent: { enabled: true, allow: ["main", "weather"] } },
      agents: {
        remotes: [
          {
            id: "weather",
            url: agent.cardUrl,
            description: "Forecasts",
            ...(auth === undefined ? {} : { auth }),
          },
        ],
      },
      ...config,
    },
  });
  return gateway;
}

/** Main's run calling `tool` with `params` (its trace context `TRACE`); the tool's result and the run's id. */
async function call<T>(
  g: Gateway,
  tool: string,
  params: unknown,
  extra: { message?: string; budget?: { runs: number } } = {},
): Promise<{ result: T; runId: string }> {
  const { runId } = await g.agent({
    sessionKey: MAIN,
    message: extra.message ?? JSON.stringify({ tool, params }),
    idempotencyKey: `call-${Math.random()}`,
    traceparent: TRACE,
    ...(extra.budget === undefined ? {} : { budget: extra.budget }),
  });
  const waited = await g.agentWait({ runId, timeoutMs: 60_000 });
  expect(waited.status).toBe("ok");
  return { result: JSON.parse(waited.reply as string) as T, runId };
}

const send = (g: Gateway, params: Record<string, unknown>) =>
  call<SessionsSendResult>(g, "sessions_send", { timeoutSeconds: 30, ...params });

describe("remote A2A agents as targets of sessions_send (an @a2a-js/sdk server)", () => {
  it("lists the remote agents with the session to send to; sessions_spawn refuses them", async () => {
    remote = await startSdkAgent();
    const g = start(remote);
    const listed = (await g.callTool(MAIN, "agents_list", {})) as AgentsListResult;
    expect(listed.agents).toContainEqual({
      id: "weather",
      configured: true,
      remote: true,
      description: "Forecasts",
      sessionKey: WEATHER,
    });
    const spawned = (await g.callTool(MAIN, "sessions_spawn", {
      task: "go",
      agentId: "weather",
    })) as SessionsSpawnResult;
    expect(spawned).toMatchObject({ status: "forbidden", code: "spawn_agent_not_allowed" });
    expect(remote.received).toEqual([]);
  });

  it("sends over A2A with auth, trace context and hops; the reply streams back; one context per session", async () => {
    remote = await startSdkAgent({ token: "weather-token" });
    const g = start(remote, {}, { tokenEnv: "WEATHER_A2A_TOKEN" });
    process.env.WEATHER_A2A_TOKEN = "weather-token";
    const deltas: string[] = [];
    const unsubscribe = g.subscribe((event: GatewayEvent) => {
      if (event.type === "chat" && event.sessionKey === WEATHER && event.state === "delta")
        deltas.push(event.deltaText ?? "");
    });
    const first = await send(g, { sessionKey: WEATHER, message: "hello" });
    unsubscribe();
    expect(first.result).toMatchObject({
      status: "ok",
      sessionKey: WEATHER,
      reply: "remote heard: hello (message 1 of this context)",
    });
    expect(deltas.join("")).toBe("remote heard: hello (message 1 of this context)");
    expect(deltas.length).toBe(2);
    const [heard] = remote.received;
    expect(heard).toMatchObject({ text: "hello", authorization: "Bearer weather-token" });
    expect(heard?.traceparent?.split("-")[1]).toBe(TRACE.split("-")[1]);
    expect(heard?.metadata).toEqual({ "sessions.sourceSessionKey": MAIN, "sessions.hops": 1 });
    expect(heard?.messageId).toBe(first.result.runId);
    // The session remembers its context: the next message continues it.
    expect((await g.store.getEntry(WEATHER))?.a2a).toEqual({ contextId: heard?.contextId });
    const second = await send(g, { sessionKey: WEATHER, message: "again" });
    expect(second.result.reply).toBe("remote heard: again (message 2 of this context)");
    expect(remote.received[1]?.contextId).toBe(heard?.contextId);
    // Another name is another conversation.
    const other = await send(g, { sessionKey: "agent:weather:a2a:trip", message: "new" });
    expect(other.result.reply).toBe("remote heard: new (message 1 of this context)");
    // An ordinary session of kind a2a: its transcript, its place in the tree, the receipt of its (absent) announce.
    const listed = await g.sessions.list({ kinds: ["a2a"] });
    expect(listed.sessions.map((s) => s.key).sort()).toEqual([WEATHER, "agent:weather:a2a:trip"]);
    const history = await g.store.readMessages(WEATHER, { limit: 10 });
    expect(history.map((m) => [m.role, m.provenance?.sourceSessionKey])).toEqual([
      ["user", MAIN],
      ["assistant", undefined],
      ["user", MAIN],
      ["assistant", undefined],
    ]);
    const tree = await g.runs.tree({ runId: first.runId });
    expect(tree.runs.map((r) => [r.sessionKey, r.kind, r.status])).toContainEqual([
      WEATHER,
      "inter_session",
      "ok",
    ]);
    await eventually(async () => {
      const announce = await g.store.getDelivery(announceDeliveryId(first.result.runId as string));
      expect(announce).toMatchObject({
        status: "suppressed",
        lastError: "the target is a remote agent (A2A)",
      });
    });
  });

  it("brings the reply into the reply-back loop: the requester's answer is the next A2A message of the context", async () => {
    remote = await startSdkAgent();
    const g = start(remote);
    const sent = await send(g, { sessionKey: WEATHER, message: "talk back" });
    expect(sent.result.reply).toBe("remote heard: talk back (message 1 of this context)");
    // Main answered the reply (turn 1); the answer went to the remote (turn 2); main ended it (turn 3).
    await eventually(async () => {
      const tree = await g.runs.tree({ runId: sent.runId });
      expect(tree.runs.filter((r) => r.kind === "ping_pong").map((r) => [r.sessionKey, r.status])).toEqual([
        [MAIN, "ok"],
        [WEATHER, "ok"],
        [MAIN, "ok"],
      ]);
    });
    expect(remote.received.map((r) => [r.text, r.contextId])).toEqual([
      ["talk back", remote.received[0]?.contextId],
      ["and one more thing", remote.received[0]?.contextId],
    ]);
    expect(remote.received[1]?.metadata).toEqual({ "sessions.sourceSessionKey": MAIN, "sessions.hops": 1 });
  });

  it("draws on the tree's budget like a local send: a spent budget refuses the next send", async () => {
    remote = await startSdkAgent();
    const g = start(remote);
    const twice = [1, 2].map((n) => ({
      tool: "sessions_send",
      params: { sessionKey: WEATHER, message: `budgeted ${n}`, timeoutSeconds: 30 },
    }));
    const { result } = await call<SessionsSendResult[]>(g, "", undefined, {
      message: JSON.stringify(twice),
      budget: { runs: 2 },
    });
    expect(result[0]).toMatchObject({
      status: "ok",
      reply: "remote heard: budgeted 1 (message 1 of this context)",
    });
    expect(result[1]).toMatchObject({ status: "forbidden", code: "budget_exceeded" });
    expect(remote.received.map((r) => r.text)).toEqual(["budgeted 1"]);
  });

  it("holds remotes to the agent-to-agent policy, and remote sessions to their shape", async () => {
    remote = await startSdkAgent();
    const g = start(remote, { tools: { sessions: { visibility: "all" }, agentToAgent: { enabled: false } } });
    const refused = await send(g, { sessionKey: WEATHER, message: "hello" });
    expect(refused.result).toMatchObject({ status: "forbidden", code: "agent_to_agent_disabled" });
    const shape = await send(g, { sessionKey: "agent:weather:main", message: "hello" });
    expect(shape.result).toMatchObject({ status: "error", code: "invalid_key" });
    expect(shape.result.error).toContain(WEATHER);
    expect(remote.received).toEqual([]);
    expect(await g.store.getEntry(WEATHER)).toBeUndefined();
  });

  it("fails the run, saying so, when the remote's token variable is not set or its card cannot be read", async () => {
    remote = await startSdkAgent();
    const g = start(remote, {}, { tokenEnv: "UNSET_A2A_TOKEN_FOR_TEST" });
    const failed = await send(g, { sessionKey: WEATHER, message: "hello" });
    expect(failed.result).toMatchObject({ status: "error" });
    expect(failed.result.error).toContain("UNSET_A2A_TOKEN_FOR_TEST");
    await g.close({ drainMs: 100 });
    const missing = remote.cardUrl.replace("agent-card.json", "nothing.json");
    const g2 = start({ ...remote, cardUrl: missing });
    const unread = await send(g2, { sessionKey: WEATHER, message: "hello" });
    expect(unread.result.error).toMatch(/^remote agent weather: its card could not be read: .*404/);
    expect(remote.received).toEqual([]);
  });

  it("ends the run with the remote task's failure, and answers a question back in the same task", async () => {
    remote = await startSdkAgent();
    const g = start(remote);
    const failed = await send(g, { sessionKey: WEATHER, message: "fail please" });
    expect(failed.result).toMatchObject({ status: "error" });
    expect(failed.result.error).toBe("remote agent weather: the task ended failed: no can do");
    const asked = await send(g, { sessionKey: WEATHER, message: "ask me" });
    expect(asked.result).toMatchObject({ status: "ok", reply: "which city?" });
    const waiting = remote.received.at(-1)?.taskId;
    expect((await g.store.getEntry(WEATHER))?.a2a?.taskId).toBe(waiting);
    const answered = await send(g, { sessionKey: WEATHER, message: "Paris" });
    expect(answered.result).toMatchObject({ status: "ok", reply: "weather in Paris" });
    expect(remote.received.at(-1)?.taskId).toBe(waiting);
    expect((await g.store.getEntry(WEATHER))?.a2a?.taskId).toBeUndefined();
  });

  it("cancels the remote task when its run is aborted", async () => {
    remote = await startSdkAgent();
    const g = start(remote);
    const accepted = await send(g, { sessionKey: WEATHER, message: "hold on", timeoutSeconds: 0 });
    expect(accepted.result.status).toBe("accepted");
    const runId = accepted.result.runId as string;
    await eventually(() => expect(remote?.received.length).toBe(1));
    await g.chat.abort({ sessionKey: WEATHER, runId });
    const ended = await g.agentWait({ runId, timeoutMs: 30_000 });
    expect((await g.store.getRun(runId))?.status).toBe("aborted");
    expect(ended.status).not.toBe("ok");
    await eventually(() => expect(remote?.canceled).toEqual([remote?.received[0]?.taskId]));
  });

  it("talks v0.3 to an older peer that does not stream (read from its card)", async () => {
    remote = await startSdkAgent({ legacy: true, streaming: false });
    const g = start(remote);
    const sent = await send(g, { sessionKey: WEATHER, message: "old friend" });
    expect(sent.result).toMatchObject({
      status: "ok",
      reply: "remote heard: old friend (message 1 of this context)",
    });
    const again = await send(g, { sessionKey: WEATHER, message: "still there?" });
    expect(again.result.reply).toBe("remote heard: still there? (message 2 of this context)");
  });
});

describe("one gateway's agent talking to another gateway's over A2A", () => {
  it("carries the message, its trace and its hops into the other gateway's session", async () => {
    const served = createGateway({
      store: openStore("sqlite").store,
      runner: createScriptedRunner({ agents: { main: (turn) => `far side got: ${turn.text}` } }),
    });
    const server: GatewayServer = await served.listen({
      a2a: true,
      auth: { tokens: [{ token: "peer-token", label: "near-gateway" }] },
    });
    others.push({ close: () => served.close({ drainMs: 100 }) }, server);
    const base = server.url.replace(/^ws/, "http");
    const { store } = openStore("sqlite");
    gateway = createGateway({
      store,
      runner,
      config: {
        tools: { sessions: { visibility: "all" }, agentToAgent: { enabled: true, allow: ["*"] } },
        agents: { remotes: [{ id: "far", url: `${base}/a2a/main/`, auth: { token: "peer-token" } }] },
      },
    });
    const sent = await send(gateway, { sessionKey: "agent:far:a2a:main", message: "hello far side" });
    expect(sent.result).toMatchObject({ status: "ok", reply: "far side got: hello far side" });
    const contextId = (await gateway.store.getEntry("agent:far:a2a:main"))?.a2a?.contextId as string;
    const farKey = `agent:main:a2a:direct:${contextId.toLowerCase()}`;
    const [message] = await served.store.readMessages(farKey, { limit: 10 });
    expect(message?.role).toBe("user");
    expect(message?.provenance).toMatchObject({ sourceSessionKey: "a2a:near-gateway", hops: 1 });
    const farRun = await served.store.getRun(message?.runId as string);
    expect(farRun?.hops).toBe(1);
    expect(farRun?.traceparent?.split("-")[1]).toBe(TRACE.split("-")[1]);
    const listed = await served.sessions.list({ kinds: ["a2a"] });
    expect(listed.sessions.map((s) => s.key)).toEqual([farKey]);
  });
});
