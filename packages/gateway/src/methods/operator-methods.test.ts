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
