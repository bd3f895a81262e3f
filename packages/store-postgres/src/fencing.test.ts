import type { ChildProcess } from "node:child_process";
import { createGateway, type Gateway, messageText } from "@sessions/gateway";
import { createGatewayClient } from "@sessions/gateway-client";
import { afterAll, describe, expect, inject, it, onTestFailed } from "vitest";
import { createPostgresStore } from "./store.js";
import { startFakePlatform } from "./testing/fake-platform.js";
import { eventually, freshSchema } from "./testing/helpers.js";
import { startGatewayProcess } from "./testing/spawn-gateway.js";

const url = inject("postgresUrl");
const children = new Set<ChildProcess>();
const cleanup: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const child of children) child.kill("SIGKILL");
  for (const step of cleanup.reverse()) await step().catch(() => undefined);
});

describe("a gateway frozen past its lease", () => {
  it("wakes to find its run ended by another gateway, and discards its own end (no reply, no delivery)", async () => {
    const schema = freshSchema("fencing");
    const platform = await startFakePlatform();
    cleanup.push(platform.close);
    const frozen = await startGatewayProcess(children, {
      url,
      schema,
      name: "frozen",
      platformUrl: platform.url,
      leaseTtlMs: 1000,
    });
    onTestFailed(() => {
      process.stderr.write(`--- frozen\n${frozen.log.join("")}\n`);
    });
    // The other gateway, in this process: it recovers the frozen one's run once its leases lapse.
    const store = await createPostgresStore({ connectionString: url, schema });
    const other: Gateway = createGateway({
      store,
      runner: { run: async () => ({ reply: "other" }) },
      cluster: { leaseTtlMs: 1000, recoveryIntervalMs: 250 },
    });
    cleanup.push(() => other.close({ drainMs: 100 }));
    await other.ready;

    const client = createGatewayClient({ url: frozen.url, reconnect: false });
    await client.ready();
    cleanup.push(() => client.close());
    const { runId } = (await client.request("agent", {
      message: "slow:2500 hello",
      idempotencyKey: "k-fenced",
      sessionKey: "main",
      deliver: true,
      channel: "chat",
      to: "room:1",
    })) as { runId: string };
    await eventually(async () => (await store.getRun(runId))?.status === "running");
    frozen.child.kill("SIGSTOP");
    // Its leases lapse (its pid is alive, so only the lease time tells): the other gateway ends the run.
    await eventually(async () => (await store.getRun(runId))?.status === "error");
    frozen.child.kill("SIGCONT");
    await eventually(() => frozen.log.join("").includes("discarded the end of a run"));

    const run = await store.getRun(runId);
    expect(run).toMatchObject({ status: "error", error: "gateway restarted while the run was in progress" });
    expect(run?.reply).toBeUndefined();
    const transcript = await store.readMessages("agent:main:main", { limit: 10 });
    expect(transcript.map((m) => [m.role, messageText(m)])).toEqual([["user", "slow:2500 hello"]]);
    expect(await store.listDeliveries({ runId })).toEqual([]);
    // And the frozen gateway, awake again, reports the recorded end, not its own.
    expect(await client.agentWait({ runId, timeoutMs: 5000 })).toMatchObject({ status: "error" });
    expect(platform.posts).toEqual([]);
  });
});
