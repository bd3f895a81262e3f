import type { ChildProcess } from "node:child_process";
import { messageText, type SessionStore } from "@sessions/gateway";
import { createGatewayClient, type GatewayClient } from "@sessions/gateway-client";
import { afterAll, describe, expect, inject, it, onTestFailed } from "vitest";
import { createPostgresStore } from "./store.js";
import { startFakePlatform } from "./testing/fake-platform.js";
import { eventually, freshSchema } from "./testing/helpers.js";
import { type GatewayProcess, startGatewayProcess } from "./testing/spawn-gateway.js";

const url = inject("postgresUrl");
const children = new Set<ChildProcess>();
const cleanup: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const child of children) child.kill("SIGKILL");
  for (const step of cleanup.reverse()) await step().catch(() => undefined);
});

const startGateway = (name: string, schema: string, platformUrl: string) =>
  startGatewayProcess(children, { url, schema, name, platformUrl });

const SLOW_MS = 1500;

describe("failover between gateway processes on one Postgres", () => {
  it("loses nothing acknowledged and delivers everything exactly once when a gateway is SIGKILLed mid-run", async () => {
    const schema = freshSchema("failover");
    const platform = await startFakePlatform();
    cleanup.push(platform.close);
    const gateways = await Promise.all(
      ["g1", "g2", "g3"].map((name) => startGateway(name, schema, platform.url)),
    );
    onTestFailed(() => {
      for (const g of gateways) process.stderr.write(`--- ${g.name}\n${g.log.join("")}\n`);
    });
    const clients = new Map<string, GatewayClient>();
    for (const g of gateways) {
      const client = createGatewayClient({ url: g.url, reconnect: false });
      await client.ready();
      clients.set(g.name, client);
      cleanup.push(() => client.close());
    }
    // The bot connection is held by exactly one gateway: that one is the victim (its takeover is tested too).
    await eventually(() => platform.connections.length > 0);
    const victim = gateways.find((g) => g.name === platform.connections[0]?.gateway) as GatewayProcess;
    const survivors = gateways.filter((g) => g !== victim);
    platform.holdSendsFrom(victim.name);

    // Concurrent traffic on every gateway: 60 runs over 6 sessions, a quarter of them slow.
    const keys = Array.from({ length: 60 }, (_, i) => `w${i}`);
    const text = (i: number) => (i % 4 === 0 ? `slow:${SLOW_MS} m${i}` : `m${i}`);
    const request = (client: GatewayClient, i: number) =>
      client.request("agent", {
        message: text(i),
        idempotencyKey: keys[i] as string,
        sessionKey: `s${i % 6}`,
        deliver: true,
        channel: "chat",
        to: `room:${i % 6}`,
      }) as Promise<{ runId: string }>;
    const first = await Promise.allSettled(
      keys.map((_, i) => request(clients.get((gateways[i % 3] as GatewayProcess).name) as GatewayClient, i)),
    );
    const store: SessionStore = await createPostgresStore({ connectionString: url, schema });
    cleanup.push(() => store.close());
    // The victim has finished fast runs (their replies hang at the platform), and a run of a session of its
    // own is under way on it when it dies, however long the machine takes to get there (it sleeps for good).
    await eventually(() => platform.heldCount() > 0, "a reply of the victim held at the platform");
    const underWay = () =>
      (clients.get(victim.name) as GatewayClient).request("agent", {
        message: "slow:600000 under way",
        idempotencyKey: "under-way",
        sessionKey: "under-way",
        deliver: true,
        channel: "chat",
        to: "room:under-way",
      }) as Promise<{ runId: string }>;
    const { runId: underWayId } = await underWay().catch(underWay);
    await eventually(
      async () => (await store.getRun(underWayId))?.status === "running",
      "a run under way on the victim",
    );
    victim.child.kill("SIGKILL");
    const killedAt = Date.now();

    // A client retries what was not acknowledged, with the same key, through another gateway.
    const acked = new Map<string, string>();
    for (const [i, result] of first.entries()) {
      if (result.status === "fulfilled") acked.set(keys[i] as string, result.value.runId);
    }
    for (const [i, key] of keys.entries()) {
      if (acked.has(key)) continue;
      const retried = await request(
        clients.get((survivors[i % 2] as GatewayProcess).name) as GatewayClient,
        i,
      );
      acked.set(key, retried.runId);
    }
    expect(acked.size).toBe(60);
    acked.set("under-way", underWayId);

    const runs = async () => Promise.all([...acked.values()].map((runId) => store.getRun(runId)));
    await eventually(
      async () => (await runs()).every((r) => r !== undefined && ["ok", "error"].includes(r.status)),
      "every acknowledged run ended",
    );
    const final = (await runs()).map((r) => r as NonNullable<typeof r>);
    const ok = final.filter((r) => r.status === "ok");
    await eventually(async () => {
      const delivered = await Promise.all(ok.map((r) => store.listDeliveries({ runId: r.runId })));
      return delivered.every((list) => list.length === 1 && list[0]?.status === "delivered");
    }, "every reply delivered once");
    await eventually(() => platform.connections.some((c) => c.event === "start" && c.at > killedAt));
    const takenOver = platform.connections.find((c) => c.event === "start" && c.at > killedAt);

    // Every acknowledged write exactly once: one run per key, one user message per run.
    for (const [i, key] of keys.entries()) {
      const run = await store.findRunByIdempotencyKey(key);
      expect(run?.runId).toBe(acked.get(key));
      const transcript = await store.readMessages(`agent:main:s${i % 6}`, { limit: 1000 });
      expect(transcript.filter((m) => m.role === "user" && messageText(m) === text(i))).toHaveLength(1);
    }
    // The victim's runs under way ended as the recovery rules say; everything else answered.
    const interrupted = final.filter((r) => r.status === "error");
    expect(final.find((r) => r.runId === underWayId)).toMatchObject({
      status: "error",
      error: "gateway restarted while the run was in progress",
    });
    for (const run of interrupted) {
      expect(run.owner).toBe(final.find((r) => r.runId === run.runId)?.owner);
      expect(run.error).toMatch(/gateway restarted (while the run was in progress|before the run started)/);
    }
    // Every reply delivered exactly once: one delivery record, one platform message, none extra.
    for (const run of ok) {
      const message = platform.messages.get(`reply:${run.runId}`);
      expect(message?.text).toBe(run.reply);
    }
    expect(platform.messages.size).toBe(ok.length);
    // The replies the victim had claimed and left hanging went out through a survivor.
    const rescued = [...platform.messages.values()].filter((m) => m.text.startsWith(`${victim.name}:`));
    expect(rescued.length).toBeGreaterThan(0);
    expect(rescued.every((m) => m.gateway !== victim.name)).toBe(true);
    expect(survivors.map((g) => g.name)).toContain(takenOver?.gateway);
    const rescuedAt = Math.max(...rescued.map((m) => m.at));
    console.log(
      `failover: ${interrupted.length} runs interrupted; ${rescued.length} replies the victim had claimed were ` +
        `delivered by a survivor within ${rescuedAt - killedAt} ms, and the bot connection taken over within ` +
        `${(takenOver?.at ?? 0) - killedAt} ms of the SIGKILL`,
    );
  });
});
