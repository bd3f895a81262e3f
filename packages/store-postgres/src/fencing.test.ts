import type { ChildProcess } from "node:child_process";
import { createGateway, type Gateway, messageText } from "@sessions/gateway";
import { createGatewayClient } from "@sessions/gateway-client";
import { afterAll, describe, expect, inject, it, onTestFailed } from "vitest";
import { createPostgresStore } from "./store.js";
import { startFakePlatform } from "./testing/fake-platform.js";
import { eventually, freshSchema } from "./testing/helpers.js";
import { startGatewayProcess } from "./testing/spawn-gateway.js";

const url = inject("postgresUrl");
/**
 * How long the frozen gateway's runner sleeps: the time the test has to see the run under way and stop the
 * process before it ends. Its timer runs on while the process is stopped, so the test lasts this long.
 */
const SLOW_MS = 10_000;
const children = new Set<ChildProcess>();
const cleanup: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const child of children) child.kill("SIGKILL");
  for (const step of cleanup.reverse()) await step().catch(() => undefined);
});

describe("a gateway frozen past its lease", () => {
  it("wakes to find its run run again and ended by another gateway, and discards its own end (no reply, no delivery)", async () => {
    const schema = freshSchema("fencing");
    const platform = await startFakePlatform();
    cleanup.push(platform.close);
    // Its leases lapsing while it is stopped is what the test is about: short ones.
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
    // The other gateway, in this process: it takes the frozen one's run over once its leases lapse, and runs it.
    const repeats: boolean[] = [];
    const store = await createPostgresStore({ connectionString: url, schema });
    const other: Gateway = createGateway({
      store,
      runner: {
        run: async (request) => {
          repeats.push(request.repeat === true);
          return { reply: "other" };
        },
      },
      // Its own leases lapsing is no part of the test: they outlast a stall of a busy machine.
      cluster: { leaseTtlMs: 15_000, recoveryIntervalMs: 250 },
    });
    cleanup.push(() => other.close({ drainMs: 100 }));
    await other.ready;

    const client = createGatewayClient({ url: frozen.url, reconnect: false });
    await client.ready();
    cleanup.push(() => client.close());
    const { runId } = (await client.request("agent", {
      message: `slow:${SLOW_MS} hello`,
      idempotencyKey: "k-fenced",
      sessionKey: "main",
      deliver: true,
      channel: "chat",
      to: "room:1",
    })) as { runId: string };
    // Stopped while its runner sleeps: seen running, and younger than its sleep (its end not written yet).
    await eventually(async () => {
      const run = await store.getRun(runId);
      return run?.status === "running" && Date.now() - (run.startedAt ?? 0) < SLOW_MS - 1000;
    }, "the run under way on the frozen gateway");
    frozen.child.kill("SIGSTOP");
    // Its leases lapse (its pid is alive, so only the lease time tells): the other gateway runs it again, told
    // that it may be a repeat (it had started on the frozen one).
    await eventually(
      async () => (await store.getRun(runId))?.status === "ok",
      "the other gateway ran the frozen one's run again",
    );
    expect(repeats).toEqual([true]);
    frozen.child.kill("SIGCONT");
    // Awake, it either stops the run first (its lane's deadline passed while it was stopped: it writes nothing) or
    // its runner answers first and the end it writes is refused (fenced): whichever timer fires first.
    await eventually(() =>
      /discarded the end of a run|lost the session's lane mid-run/.test(frozen.log.join("")),
    );

    const run = await store.getRun(runId);
    expect(run).toMatchObject({ status: "ok", reply: "other", repeats: 1 });
    // Only the other gateway's reply landed: the frozen one's end, transcript line and delivery were refused.
    const transcript = await store.readMessages("agent:main:main", { limit: 10 });
    expect(transcript.map((m) => [m.role, messageText(m)])).toEqual([
      ["user", `slow:${SLOW_MS} hello`],
      ["assistant", "other"],
    ]);
    expect((await store.listDeliveries({ runId })).map((d) => d.text)).toEqual(["other"]);
    // And the frozen gateway, awake again, reports the recorded end, not its own; it ran nothing again itself.
    expect(await client.agentWait({ runId, timeoutMs: 60_000 })).toMatchObject({ status: "ok" });
    expect(platform.posts.filter((post) => JSON.stringify(post).includes("frozen:"))).toEqual([]);
    expect(repeats).toEqual([true]);
  });
});
