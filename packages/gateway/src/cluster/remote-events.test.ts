import { eventually } from "@sessions/testing/eventually";
import { afterEach, describe, expect, it } from "vitest";
import { createGateway } from "../create-gateway.js";
import type { Gateway, GatewayEvent } from "../gateway.js";
import { createScriptedRunner } from "../runner/scripted.js";
import { createMemoryStore } from "../store/memory.js";
import type { SessionStore } from "../store/types.js";
import { clusterSettings } from "./options.js";

// Two gateways in one process on one memory store (which publishes in-process): the cluster paths without a
// database. The Postgres suite runs the same over NOTIFY, across processes.
const runner = createScriptedRunner({
  agents: {
    main: async (turn) => {
      for (let i = 0; i < 5; i++) {
        turn.say(`w${i} `);
        await turn.sleep(2);
      }
      return "done";
    },
  },
});
// Leases far longer than a stall of a busy machine (none of these tests is about one lapsing). A run's end heard on
// the change feed waits a heartbeat (a third of the lease) for its events before it is raised from the store.
const cluster = { leaseTtlMs: 10_000, recoveryIntervalMs: 100 };
const graceMs = clusterSettings(cluster, createMemoryStore())?.heartbeatMs as number;
const open: Gateway[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((gateway) => gateway.close({ drainMs: 50 })));
});

function pair(storeFor: (shared: SessionStore, i: number) => SessionStore) {
  const shared = createMemoryStore();
  const [a, b] = [0, 1].map((i) =>
    createGateway({ store: { ...storeFor(shared, i), close: async () => {} }, runner, cluster }),
  ) as [Gateway, Gateway];
  open.push(a, b);
  const seen = (gateway: Gateway) => {
    const events: GatewayEvent[] = [];
    gateway.subscribe((event) => events.push(event));
    return events;
  };
  return { a, b, seenA: seen(a), seenB: seen(b) };
}

const ofRun = (events: GatewayEvent[], runId: string) =>
  events.filter((e) => (e.type === "agent" || e.type === "chat") && e.runId === runId);

describe("events of runs on another gateway", () => {
  it("reach the other gateway's subscribers as the executing one raised them: deltas, seq and end", async () => {
    const { a, seenA, seenB } = pair((shared) => shared);
    const sent = await a.chat.send({ sessionKey: "main", message: "hi", idempotencyKey: "k1" });
    await a.agentWait({ runId: sent.runId, timeoutMs: 60_000 });
    await eventually(
      () => ofRun(seenB, sent.runId).some((e) => e.type === "chat" && e.state === "final"),
      "B to hear the run's final event",
    );
    const onA = ofRun(seenA, sent.runId);
    expect(onA.filter((e) => e.type === "chat" && e.state === "delta")).toHaveLength(5);
    expect(ofRun(seenB, sent.runId)).toEqual(onA);
    expect(onA.map((e) => (e as { seq: number }).seq)).toEqual(onA.map((_, i) => i + 1));
    // Session changes made on A are heard on B.
    expect(seenB).toContainEqual({ type: "sessions.changed", key: "agent:main:main", reason: "updated" });
    await new Promise((resolve) => setTimeout(resolve, graceMs + 300));
    // Exactly once: the change feed's fallback did not raise the end a second time.
    expect(ofRun(seenB, sent.runId)).toHaveLength(onA.length);
  });

  it("raises the end from the store when the executing gateway's events never arrive", async () => {
    // A cannot publish (as if its messages were lost); B still hears its run end through the change feed.
    const { a, seenB } = pair((shared, i) => (i === 0 ? { ...shared, publish: () => {} } : shared));
    const sent = await a.chat.send({ sessionKey: "main", message: "hi", idempotencyKey: "k2" });
    await a.agentWait({ runId: sent.runId, timeoutMs: 60_000 });
    await eventually(() => ofRun(seenB, sent.runId).length === 2, "B to raise the run's end from the store");
    expect(ofRun(seenB, sent.runId)).toMatchObject([
      { type: "agent", seq: 1, stream: "lifecycle", data: { phase: "end", status: "ok" } },
      { type: "chat", seq: 2, state: "final", message: { role: "assistant", content: [{ text: "done" }] } },
    ]);
  });

  it("raises start and end from the change feed on a shared store that cannot publish", async () => {
    const { a, seenB } = pair(({ publish: _p, subscribe: _s, ...shared }) => shared);
    const sent = await a.chat.send({ sessionKey: "main", message: "hi", idempotencyKey: "k3" });
    await a.agentWait({ runId: sent.runId, timeoutMs: 60_000 });
    await eventually(() => ofRun(seenB, sent.runId).length === 3, "B to raise the run's start and end");
    expect(ofRun(seenB, sent.runId).map((e) => [e.type, (e as { seq: number }).seq])).toEqual([
      ["agent", 1],
      ["agent", 2],
      ["chat", 3],
    ]);
  });
});
