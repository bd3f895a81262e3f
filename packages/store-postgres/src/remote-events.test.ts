import { createScriptedRunner, type Gateway, type GatewayEvent } from "@sessions/gateway";
import { createGatewayClient, type GatewayClient } from "@sessions/gateway-client";
import { afterAll, describe, expect, inject, it } from "vitest";
import { eventually, twoGateways } from "./testing/helpers.js";

const url = inject("postgresUrl");
const cleanup: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const step of cleanup.splice(0).reverse()) await step();
});

const BIG = `${"long ".repeat(4000)}ünïcødé 🎉 "quoted" \\ end`;
/** Held by the test: a run whose message is `hold` waits for it before it streams. */
let held: Promise<void> = Promise.resolve();
/** Streams 30 deltas (one of them 20 KB, more than a NOTIFY carries), a tool call, then answers. */
const runner = createScriptedRunner({
  agents: {
    main: async (turn) => {
      if (turn.text === "hold") await held;
      for (let i = 0; i < 30; i++) {
        turn.say(i === 15 ? BIG : `d${i} `);
        if (i % 5 === 0) await turn.sleep(5);
      }
      await turn.callTool("agents_list");
      return "the end";
    },
  },
});

const gateways = () =>
  twoGateways({
    url,
    prefix: "events",
    runner,
    opened: (gateway) => cleanup.push(() => gateway.close({ drainMs: 100 })),
  });

async function clientOf(gateway: Gateway): Promise<GatewayClient> {
  const server = await gateway.listen({ host: "127.0.0.1", port: 0 });
  const client = createGatewayClient({ url: server.url, reconnect: false });
  await client.ready();
  cleanup.push(() => client.close());
  return client;
}

type RunEvent = { type: string; runId: string; seq: number; state?: string; deltaText?: string };

function collect(client: GatewayClient) {
  const events: RunEvent[] = [];
  for (const type of ["chat", "agent"]) {
    client.on(type, (payload) => events.push({ type, ...(payload as Omit<RunEvent, "type">) }));
  }
  return events;
}

describe("run events across gateways on one Postgres", () => {
  it("streams a run executing on A to a client subscribed on B: every delta, in order, and the final", async () => {
    const [a, b] = await gateways();
    const onB = await clientOf(b);
    await onB.sessions.subscribe({ keys: ["main"] });
    const seenB = collect(onB);
    const raisedOnA: GatewayEvent[] = [];
    a.subscribe((event) => raisedOnA.push(event));

    const sent = await a.chat.send({ sessionKey: "main", message: "go", idempotencyKey: "k-stream" });
    await eventually(() =>
      seenB.some((e) => e.runId === sent.runId && e.type === "chat" && e.state === "final"),
    );

    const ofRun = seenB.filter((e) => e.runId === sent.runId);
    const expected = raisedOnA
      .filter((e) => (e.type === "chat" || e.type === "agent") && e.runId === sent.runId)
      .map(({ type, ...payload }) => ({ type, ...payload }));
    expect(ofRun).toHaveLength(expected.length);
    expect(ofRun).toEqual(expected);
    expect(ofRun.map((e) => e.seq)).toEqual(ofRun.map((_, i) => i + 1));
    const deltas = ofRun.filter((e) => e.type === "chat" && e.state === "delta").map((e) => e.deltaText);
    expect(deltas).toHaveLength(30);
    expect(deltas[15]).toBe(BIG);
    expect(ofRun.at(-1)).toMatchObject({ type: "chat", state: "final" });
  });

  it("lets a client on B follow a run under way on A with streamRun", async () => {
    const [a, b] = await gateways();
    const onA = await clientOf(a);
    const onB = await clientOf(b);
    // Held on A's session lane by a first run, the second run waits queued: B knows of it before it starts.
    let release = () => {};
    held = new Promise((resolve) => (release = resolve));
    const first = await onA.chat.send({ sessionKey: "main", message: "hold", idempotencyKey: "k-one" });
    const second = await onA.chat.send({ sessionKey: "main", message: "two", idempotencyKey: "k-two" });
    // B follows the run before any of it happens (the first run holds the lane until then), however slow the
    // machine: once B has heard of the run (its change feed), the subscription is B's when this request answers
    // it, and streamRun listens from the call.
    await eventually(async () => {
      const followed = await onB.request("sessions.subscribe", { runIds: [second.runId] });
      return followed.runIds?.includes(second.runId) === true;
    }, "B follows the second run");
    const stream = onB.streamRun(second.runId);
    release();
    const items: { type: string; payload?: { state?: string; seq?: number } }[] = [];
    for await (const item of stream) items.push(item as never);
    expect(items.at(-1)).toMatchObject({ type: "chat", payload: { state: "final" } });
    expect(items.filter((i) => i.type === "chat" && i.payload?.state === "delta")).toHaveLength(30);
    expect(items.map((i) => i.payload?.seq)).toEqual(items.map((_, i) => i + 1));
    await onA.waitRun(first.runId, { timeoutMs: 10_000 });
  });
});
