import type { ChildProcess } from "node:child_process";
import { createGatewayClient, type GatewayClient } from "@sessions/gateway-client";
import { afterEach, describe, expect, inject, it, onTestFailed } from "vitest";
import { createPostgresStore } from "./store.js";
import { startFakePlatform } from "./testing/fake-platform.js";
import { startFaultProxy } from "./testing/faults/fault-proxy.js";
import { eventually, freshSchema } from "./testing/helpers.js";
import { startGatewayProcess } from "./testing/spawn-gateway.js";

/**
 * A partition that heals mid-delivery: gateway a has posted a run's reply to the platform and the platform has not
 * answered yet when a loses Postgres (every byte held); the platform answers while a is cut off. The platform is
 * the witness: what its users see is one message per delivery, whoever sent it and however often.
 */
const postgresUrl = inject("postgresUrl");
const children = new Set<ChildProcess>();
const cleanup: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const child of children) child.kill("SIGKILL");
  children.clear();
  for (const step of cleanup.splice(0).reverse()) await step().catch(() => undefined);
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function healMidDelivery(name: string, options: { leaseTtlMs: number; cutMs: number }) {
  const schema = freshSchema(name);
  const platform = await startFakePlatform();
  cleanup.push(platform.close);
  const proxy = await startFaultProxy({
    target: { host: "127.0.0.1", port: Number(new URL(postgresUrl).port) },
  });
  cleanup.push(() => proxy.close());
  const a = await startGatewayProcess(children, {
    url: proxy.url(postgresUrl),
    schema,
    name: "a",
    platformUrl: platform.url,
    leaseTtlMs: options.leaseTtlMs,
  });
  const b = await startGatewayProcess(children, {
    url: postgresUrl,
    schema,
    name: "b",
    platformUrl: platform.url,
    leaseTtlMs: options.leaseTtlMs,
  });
  onTestFailed(() => {
    for (const g of [a, b]) process.stderr.write(`--- ${g.name}\n${g.log.join("")}\n`);
  });
  const store = await createPostgresStore({ connectionString: postgresUrl, schema });
  cleanup.push(() => store.close());
  const client: GatewayClient = createGatewayClient({ url: b.url, reconnect: false });
  await client.ready();
  cleanup.push(() => client.close());
  const aClient = createGatewayClient({ url: a.url, reconnect: false });
  await aClient.ready();
  cleanup.push(() => aClient.close());

  platform.holdSendsFrom("a");
  const { runId } = (await aClient.request("agent", {
    message: "hello",
    idempotencyKey: `${name}-1`,
    sessionKey: "main",
    deliver: true,
    channel: "chat",
    to: "room:1",
  })) as { runId: string };
  await eventually(() => platform.heldCount() === 1, "a's reply at the platform, unanswered");
  proxy.hold();
  const cutAt = Date.now();
  await sleep(200);
  // The platform takes the message while a cannot write that it did.
  platform.release();
  await sleep(options.cutMs);
  proxy.heal();
  await eventually(async () => {
    const deliveries = await store.listDeliveries({ runId });
    return deliveries.length === 1 && deliveries[0]?.status !== "queued";
  }, "the delivery's outcome recorded");
  // a's late outcome (when b sent it meanwhile) is refused: what was recorded first stands. Give it time to try.
  await sleep(1000);
  const deliveries = await store.listDeliveries({ runId });
  expect(deliveries).toHaveLength(1);
  expect(deliveries[0]).toMatchObject({ status: "delivered", receipt: ["msg-1"] });
  // What the platform's users see: the reply once.
  expect([...platform.messages.values()].map((m) => [m.to, m.text])).toEqual([["room:1", "a: hello"]]);
  expect(await client.agentWait({ runId, timeoutMs: 30_000 })).toMatchObject({ status: "ok" });
  process.stderr.write(
    `faults: ${name}: posted by ${platform.posts.map((p) => p.gateway).join(", ")}; its "delivered" dated ${(((deliveries[0]?.updatedAt ?? 0) - cutAt) / 1000).toFixed(1)} s after the cut (a partition of ${options.cutMs / 1000 + 0.2} s)\n`,
  );
  return { posts: platform.posts.map((p) => p.gateway), logOfA: () => a.log.join("") };
}

describe("a partition healing mid-delivery", () => {
  it("shorter than the lease: the gateway that posted records the delivery when it heals, and nobody posts again", async () => {
    const { posts } = await healMidDelivery("delivery_short", { leaseTtlMs: 15_000, cutMs: 3000 });
    expect(posts).toEqual(["a"]);
  });

  it("longer than the lease: another gateway sends it again with its key, the platform shows it once, and the late outcome is refused", async () => {
    const { posts, logOfA } = await healMidDelivery("delivery_long", { leaseTtlMs: 3000, cutMs: 8000 });
    // b took the claim over once a's lease lapsed and sent it again (the platform deduplicates by the key).
    expect(posts).toEqual(["a", "b"]);
    await eventually(() => logOfA().includes("discarded a delivery outcome"), "a's late outcome refused");
  });
});
