import { afterAll, afterEach, describe, expect, it } from "vitest";
import type { ScriptedAgent } from "../runner/scripted.js";
import { cleanupDirs, eventually, type Harness, harness, STORE_KINDS } from "../test-kit.js";

afterAll(cleanupDirs);

const agent: ScriptedAgent = (turn) => {
  if (turn.kind === "subagent") return "Result: done";
  if (turn.kind === "subagent_announce") return "Result: done";
  return `echo: ${turn.text}`;
};
const group = (text: string, extra: Record<string, unknown> = {}) => ({
  channel: "chat",
  chatType: "group" as const,
  peerId: "dev",
  senderId: "bob",
  to: "group:dev",
  text,
  ...extra,
});

type Delivery = { id: string; status: string };
const deliveries = async (h: Harness, status: string) =>
  ((await h.gateway.call("deliveries.list", { status })) as { deliveries: Delivery[] }).deliveries;
const bindings = async (h: Harness, params: Record<string, unknown> = {}) =>
  ((await h.gateway.call("bindings.list", params)) as { bindings: unknown[] }).bindings;

describe.each(STORE_KINDS)("operator methods on the %s store", (kind) => {
  let h: Harness;
  afterEach(async () => {
    await h?.close();
  });

  it("deliveries.retry sends a failed delivery again, once, and refuses what is not failed or suppressed", async () => {
    h = await harness(kind, { main: agent }, { outbox: { baseDelayMs: 10, maxAttempts: 2 } });
    h.channel.failNext(2);
    const { runId } = await h.gateway.receive(group("hi"));
    await h.gateway.agentWait({ runId: runId as string });
    await h.clock.advance(100);
    const [failed] = await deliveries(h, "failed");
    expect(failed).toMatchObject({ status: "failed", attempts: 2, lastError: "platform unavailable" });
    const id = (failed as { id: string }).id;

    const queued = await h.gateway.call("deliveries.retry", { id });
    expect(queued).toMatchObject({ id, status: "queued", attempts: 0 });
    expect(queued).not.toHaveProperty("lastError");
    await eventually(async () =>
      expect(await h.gateway.call("deliveries.get", { id })).toMatchObject({ status: "delivered" }),
    );
    expect(h.channel.sent.filter((s) => s.message.text === "echo: hi")).toHaveLength(1);

    await expect(h.gateway.call("deliveries.retry", { id })).rejects.toMatchObject({
      code: "invalid_params",
      field: "id",
      details: { code: "NOT_RETRYABLE", status: "delivered" },
    });
    await expect(h.gateway.call("deliveries.retry", { id: "nope" })).rejects.toMatchObject({
      code: "not_found",
      details: { code: "NOT_FOUND" },
    });
    await expect(h.gateway.call("deliveries.retry", {})).rejects.toMatchObject({
      code: "invalid_params",
      field: "id",
    });
  });

  it("deliveries.retry checks the send policy again: still denied stays suppressed, allowed goes out", async () => {
    h = await harness(kind, { main: agent });
    const { runId, sessionKey } = await h.gateway.receive(group("first"));
    await h.gateway.agentWait({ runId: runId as string });
    await eventually(() => expect(h.channel.sent).toHaveLength(1));
    await h.gateway.call("sessions.patch", { key: sessionKey as string, sendPolicy: "deny" });
    const second = await h.gateway.receive(group("second"));
    await h.gateway.agentWait({ runId: second.runId as string });
    let suppressed: { id: string } | undefined;
    await eventually(async () => {
      suppressed = (await deliveries(h, "suppressed"))[0];
      expect(suppressed).toBeDefined();
    });
    const id = (suppressed as { id: string }).id;
    await h.gateway.call("deliveries.retry", { id });
    await eventually(async () =>
      expect(await h.gateway.call("deliveries.get", { id })).toMatchObject({ status: "suppressed" }),
    );
    await h.gateway.call("sessions.patch", { key: sessionKey as string, sendPolicy: null });
    await h.gateway.call("deliveries.retry", { id });
    await eventually(async () =>
      expect(await h.gateway.call("deliveries.get", { id })).toMatchObject({ status: "delivered" }),
    );
    expect(h.channel.sent.map((s) => s.message.text)).toEqual(["echo: first", "echo: second"]);
  });

  it("runs.list and the sessions.list rows show the runs under way, started before anyone asked", async () => {
    // A run that holds its session's lane until the test lets it go; the next one of that session queues.
    let release = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    h = await harness(kind, {
      main: async (turn) => {
        if (turn.text === "hold") await held;
        return `echo: ${turn.text}`;
      },
    });
    const first = await h.gateway.chat.send({ sessionKey: "busy", message: "hold", idempotencyKey: "k1" });
    const second = await h.gateway.chat.send({ sessionKey: "busy", message: "next", idempotencyKey: "k2" });
    const other = await h.gateway.chat.send({ sessionKey: "idle", message: "quick", idempotencyKey: "k3" });
    await h.gateway.agentWait({ runId: other.runId });
    await eventually(async () =>
      expect((await h.gateway.runs.list()).runs.map((r) => [r.runId, r.status])).toEqual([
        [first.runId, "running"],
        [second.runId, "queued"],
      ]),
    );
    const [running] = (await h.gateway.runs.list({ status: "running" })).runs;
    expect(running).toMatchObject({
      runId: first.runId,
      sessionKey: "agent:main:busy",
      agentId: "main",
      status: "running",
      startedAt: expect.any(Number),
    });
    expect((await h.gateway.runs.list({ sessionKey: "idle" })).runs).toEqual([]);
    expect((await h.gateway.runs.list({ sessionKey: "busy", limit: 1 })).runs.map((r) => r.runId)).toEqual([
      first.runId,
    ]);
    const rows = (await h.gateway.sessions.list()).sessions;
    expect(rows.find((r) => r.key === "agent:main:busy")).toMatchObject({
      hasActiveRun: true,
      activeRunIds: [first.runId, second.runId],
    });
    const idle = rows.find((r) => r.key === "agent:main:idle");
    expect(idle).toMatchObject({ hasActiveRun: false });
    expect(idle).not.toHaveProperty("activeRunIds");
    await expect(h.gateway.call("runs.list", { status: "ok" })).rejects.toMatchObject({
      code: "invalid_params",
      field: "status",
    });

    release();
    await h.gateway.agentWait({ runId: second.runId });
    expect((await h.gateway.runs.list()).runs).toEqual([]);
    expect((await h.gateway.sessions.list()).sessions.every((r) => r.hasActiveRun === false)).toBe(true);
  });

  it("bindings.list shows the threads bound to sessions, for one session or all", async () => {
    h = await harness(kind, { main: agent });
    const { runId } = await h.gateway.receive(group("hi"));
    await h.gateway.agentWait({ runId: runId as string });
    expect(await bindings(h)).toEqual([]);
    const spawned = (await h.gateway.callTool("agent:main:chat:group:dev", "sessions_spawn", {
      task: "watch",
      thread: true,
      label: "watcher",
    })) as { childSessionKey: string };
    expect(await bindings(h)).toEqual([
      expect.objectContaining({
        channel: "chat",
        threadId: "t1",
        sessionKey: spawned.childSessionKey,
        to: "group:dev",
      }),
    ]);
    expect(await bindings(h, { sessionKey: "agent:main:chat:group:dev" })).toEqual([]);
    expect(await bindings(h, { sessionKey: spawned.childSessionKey })).toHaveLength(1);
    await expect(h.gateway.call("bindings.list", { sessionKey: "agent::x" })).rejects.toMatchObject({
      code: "invalid_params",
      field: "sessionKey",
    });
  });
});
