import { type AgentRunner, type Gateway, messageText } from "@sessions/gateway";
import { afterAll, describe, expect, inject, it } from "vitest";
import { eventually, twoGateways } from "./testing/helpers.js";

const url = inject("postgresUrl");
const open: Gateway[] = [];
afterAll(async () => {
  await Promise.all(open.splice(0).map((gateway) => gateway.close({ drainMs: 100 })));
});

/** A runner that holds its turn on "first" until released (or aborted), noting what each turn saw. */
function heldRunner() {
  const turns: { text: string; users: string[] }[] = [];
  let release: () => void = () => {};
  const held = new Promise<void>((resolve) => {
    release = resolve;
  });
  const runner: AgentRunner = {
    async run(request) {
      const text = messageText(request.input);
      turns.push({ text, users: request.messages.filter((m) => m.role === "user").map(messageText) });
      if (text === "first") await held;
      return { reply: `reply to ${text}` };
    },
  };
  return { runner, turns, release: () => release() };
}

const cluster = (runner: AgentRunner) =>
  twoGateways({ url, prefix: "queue", runner, opened: (gateway) => open.push(gateway) });

describe("queue modes across two gateways on one Postgres", () => {
  it("collect: messages sent through the other gateway are answered by one run", async () => {
    const held = heldRunner();
    const [a, b] = await cluster(held.runner);
    const send = (gw: Gateway, message: string) =>
      gw.chat.send({ sessionKey: "main", message, idempotencyKey: `c-${message}` });
    const first = await send(a, "first");
    await eventually(() => held.turns.length === 1);
    await b.sessions.patch({ key: "agent:main:main", queueMode: "collect" });
    const queued = [await send(b, "x"), await send(a, "y"), await send(b, "z")];
    held.release();
    expect((await b.agentWait({ runId: first.runId, timeoutMs: 60_000 })).status).toBe("ok");
    const results = await Promise.all(queued.map((q) => a.agentWait({ runId: q.runId, timeoutMs: 60_000 })));
    const answered = results.filter((r) => r.mergedInto === undefined);
    expect(answered).toHaveLength(1);
    expect(answered[0]).toMatchObject({ status: "ok", reply: "reply to z" });
    for (const r of results)
      if (r !== answered[0]) expect(r).toMatchObject({ mergedInto: answered[0]?.runId });
    expect(held.turns.map((t) => t.text)).toEqual(["first", "z"]);
    expect(held.turns[1]?.users).toEqual(["first", "x", "y", "z"]);
  });

  it("interrupt: a message through one gateway aborts the run on the other, and chat.abort reaches it too", async () => {
    const held = heldRunner();
    const [a, b] = await cluster(held.runner);
    const send = (gw: Gateway, message: string) =>
      gw.chat.send({ sessionKey: "main", message, idempotencyKey: `i-${message}` });
    const first = await send(a, "first");
    await eventually(() => held.turns.length === 1);
    await b.sessions.patch({ key: "agent:main:main", queueMode: "interrupt" });
    const next = await send(b, "next");
    const ended = await b.agentWait({ runId: first.runId, timeoutMs: 60_000 });
    expect(ended).toMatchObject({ status: "error", error: "run aborted" });
    expect(await a.agentWait({ runId: next.runId, timeoutMs: 60_000 })).toMatchObject({
      status: "ok",
      reply: "reply to next",
    });
    // chat.abort through b stops a run a holds.
    await b.sessions.patch({ key: "agent:main:main", queueMode: null });
    const again = await a.chat.send({
      sessionKey: "main",
      message: "first",
      idempotencyKey: "i-first-again",
    });
    await eventually(() => held.turns.filter((t) => t.text === "first").length === 2);
    const aborted = await b.chat.abort({ sessionKey: "agent:main:main" });
    expect(aborted.runIds).toContain(again.runId);
    expect(await a.agentWait({ runId: again.runId, timeoutMs: 60_000 })).toMatchObject({ status: "error" });
    held.release();
  });
});
