import { eventually } from "@sessions/testing/eventually";
import { afterEach, describe, expect, it } from "vitest";
import { type FakeOpenClawGateway, startFakeOpenClawGateway } from "./fake-openclaw-gateway.js";
import { chatMessageText, createGatewayClient, type GatewayClient, type RunStreamItem } from "./index.js";

/** Our client against a gateway that speaks OpenClaw's shapes (PROTOCOL.md, interop). */
const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn();
});

async function setup(): Promise<{ fake: FakeOpenClawGateway; client: GatewayClient }> {
  const fake = await startFakeOpenClawGateway();
  cleanups.push(() => fake.close());
  const client = createGatewayClient({ url: fake.url, token: fake.token, reconnect: false });
  cleanups.push(() => client.close());
  await client.ready();
  return { fake, client };
}

const event = (runId: string, seq: number, state: string, extra: Record<string, unknown> = {}) => ({
  runId,
  sessionKey: "agent:main:main",
  seq,
  state,
  ...extra,
});

describe("our client against an OpenClaw-shaped gateway", () => {
  it("keeps streaming through status and unknown states and ends only at final", async () => {
    const { fake, client } = await setup();
    const { runId } = await client.chat.send({ sessionKey: "main", message: "hi", idempotencyKey: "run-1" });
    expect(runId).toBe("run-1");
    const items: RunStreamItem[] = [];
    let ended = false;
    const reading = (async () => {
      for await (const item of client.streamRun(runId)) items.push(item);
      ended = true;
    })();
    // The stream asked whether the run had already ended; now the run's events come.
    await eventually(() => fake.requests.some((r) => r.method === "agent.wait"), "the stream to start");
    fake.chat(event(runId, 0, "status", { phase: "preparing_context" }));
    fake.chat(event(runId, 1, "status", { phase: "starting_model" }));
    fake.chat(event(runId, 2, "thinking-hard"));
    fake.chat(event(runId, 3, "delta", { deltaText: "hel" }));
    fake.chat(event("another-run", 0, "final"));
    await eventually(() => items.length === 4, "four events of this run");
    expect(ended).toBe(false);
    fake.chat(
      event(runId, 4, "final", {
        message: { role: "assistant", content: [{ type: "text", text: "hello" }] },
      }),
    );
    await reading;
    const states = items.map((i) => (i.type === "chat" ? i.payload.state : i.type));
    expect(states).toEqual(["status", "status", "thinking-hard", "delta", "final"]);
    const last = items.at(-1);
    expect(last?.type === "chat" ? chatMessageText(last.payload.message) : undefined).toBe("hello");
  });

  it("ends a stream at aborted and at error too", async () => {
    const { fake, client } = await setup();
    for (const state of ["aborted", "error"]) {
      const runId = `run-${state}`;
      const items: RunStreamItem[] = [];
      const reading = (async () => {
        for await (const item of client.streamRun(runId)) items.push(item);
      })();
      await eventually(
        () => fake.requests.some((r) => r.method === "agent.wait" && r.params.runId === runId),
        `the ${state} stream to start`,
      );
      fake.chat(event(runId, 0, "status", { phase: "starting_model" }));
      fake.chat(event(runId, 1, state, { errorMessage: "stopped" }));
      await reading;
      expect(items.map((i) => (i.type === "chat" ? i.payload.state : i.type))).toEqual(["status", state]);
    }
  });

  it("fills ts and seq of history messages from timestamp and __openclaw.seq", async () => {
    const { client } = await setup();
    const page = await client.chat.history({ sessionKey: "main" });
    expect(page.messages.map((m) => [m.role, m.ts, m.seq, chatMessageText(m)])).toEqual([
      ["user", 1_700_000_000_000, 1, "hi"],
      ["assistant", 1_700_000_001_000, 2, "hello"],
    ]);
    // What the gateway sent is kept.
    expect(page.messages[1]).toMatchObject({
      timestamp: 1_700_000_001_000,
      __openclaw: { seq: 2, runId: "r-1" },
    });
  });

  it("accepts a sessions.patch entry without a key", async () => {
    const { client } = await setup();
    const patched = await client.sessions.patch({ key: "main", label: "home" });
    expect(patched).toEqual({
      ok: true,
      key: "agent:main:main",
      entry: { sessionId: "s-1", updatedAt: 1_700_000_002_000, label: "home" },
    });
    expect(patched.entry.key).toBeUndefined();
  });

  it("does not send agent { spawnedBy } to a gateway that does not announce it", async () => {
    const { fake, client } = await setup();
    expect(client.hello?.features.capabilities).toBeUndefined();
    await expect(
      client.agent({ message: "go", idempotencyKey: "a-1", spawnedBy: "agent:main:main" }),
    ).rejects.toMatchObject({
      code: "invalid_params",
      field: "spawnedBy",
      detailsCode: "UNSUPPORTED_BY_GATEWAY",
      requestSent: false,
    });
    await expect(
      client.request("agent", { message: "go", idempotencyKey: "a-2", spawnedBy: "agent:main:main" }),
    ).rejects.toMatchObject({ field: "spawnedBy" });
    expect(fake.requests.filter((r) => r.method === "agent")).toEqual([]);
    // Without the extension the call goes through.
    expect(await client.agent({ message: "go", idempotencyKey: "a-3" })).toMatchObject({
      runId: "a-3",
      status: "accepted",
    });
  });
});
