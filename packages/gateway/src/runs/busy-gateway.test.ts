import { randomUUID } from "node:crypto";
import { afterAll, describe, expect, it } from "vitest";
import { createGateway } from "../create-gateway.js";
import { createScriptedRunner } from "../runner/scripted.js";
import { cleanupDirs, openStore, STORE_KINDS } from "../test-kit.js";

afterAll(cleanupDirs);

/** More instant runs than any machine finishes before a one-second timeout: the burst ends when that run does. */
const BURST_LIMIT = 200_000;

describe.each(STORE_KINDS)("a gateway kept busy on the %s store", (kind) => {
  it("still times a run out while a burst of instant runs never lets up", async () => {
    const gateway = createGateway({
      runner: createScriptedRunner({
        agents: {
          // Answers only when aborted: its run ends by its timeout or not at all.
          slow: (turn) =>
            new Promise<string>((resolve) => turn.signal.addEventListener("abort", () => resolve(""))),
        },
        fallback: () => "ok",
      }),
      store: openStore(kind).store,
    });
    await gateway.ready;
    try {
      const slow = await gateway.agent({
        sessionKey: "agent:slow:main",
        message: "take your time",
        idempotencyKey: randomUUID(),
        timeout: 1,
      });
      let burstRuns = 0;
      let endedDuringBurst: boolean | undefined;
      const slowEnd = gateway.agentWait({ runId: slow.runId, timeoutMs: 120_000 }).then((result) => {
        endedDuringBurst = burstRuns < BURST_LIMIT;
        return result;
      });
      // Instant runs on 64 sessions, each waited for, back to back: the only pauses are the store's own.
      await Promise.all(
        Array.from({ length: 64 }, async (_, s) => {
          while (endedDuringBurst === undefined && burstRuns < BURST_LIMIT) {
            burstRuns++;
            const { runId } = await gateway.agent({
              sessionKey: `burst-${s}`,
              message: "hi",
              idempotencyKey: randomUUID(),
            });
            await gateway.agentWait({ runId, timeoutMs: 120_000 });
          }
        }),
      );
      expect(await slowEnd).toMatchObject({ status: "timeout" });
      expect(endedDuringBurst).toBe(true);
    } finally {
      await gateway.close({ drainMs: 0 });
    }
  });
});
