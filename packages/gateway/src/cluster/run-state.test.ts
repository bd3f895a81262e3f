import { afterEach, describe, expect, it } from "vitest";
import { createGateway } from "../create-gateway.js";
import type { Gateway, WaitResult } from "../gateway.js";
import { createScriptedRunner } from "../runner/scripted.js";
import { createMemoryStore } from "../store/memory.js";
import type { RunRecord, SessionStore } from "../store/types.js";

// Three gateways in one process on one memory store: one session's runs accepted by all three at once, executing
// one at a time across them. What the store says of each run must be what happened to it.
// Lanes pass from run to run by release and wake-up, never by a lease lapsing: leases far longer than a stall.
const cluster = { leaseTtlMs: 15_000, recoveryIntervalMs: 200 };
const open: Gateway[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((gateway) => gateway.close({ drainMs: 50 })));
});

describe("run state across gateways", () => {
  it("a run waiting for its lane on another gateway is queued, and starts when it begins executing", async () => {
    const shared: SessionStore = createMemoryStore();
    /** What the store said of the session's runs while each run executed (seen from inside the runner). */
    const seenRunning = new Map<string, string[]>();
    const executed = new Map<string, { from: number; to: number }>();
    const runner = createScriptedRunner({
      agents: {
        main: async (turn) => {
          const from = Date.now();
          const running = await shared.listRunsByStatus(["running"]);
          seenRunning.set(
            turn.runId,
            running.filter((run) => run.sessionKey === turn.sessionKey).map((run) => run.runId),
          );
          await turn.sleep(3);
          executed.set(turn.runId, { from, to: Date.now() });
          return `echo: ${turn.text}`;
        },
      },
    });
    const gateways = [0, 1, 2].map(() =>
      createGateway({ store: { ...shared, close: async () => {} }, runner, cluster }),
    );
    open.push(...gateways);
    await Promise.all(gateways.map((gateway) => gateway.ready));

    const count = 30;
    const sent = await Promise.all(
      Array.from({ length: count }, (_, i) =>
        (gateways[i % 3] as Gateway).chat.send({
          sessionKey: "main",
          message: `m${i}`,
          idempotencyKey: `k${i}`,
        }),
      ),
    );
    const waited: WaitResult[] = [];
    for (const { runId } of sent) {
      for (;;) {
        const result = await (gateways[0] as Gateway).agentWait({ runId, timeoutMs: 30_000 });
        if (result.endedAt === undefined) continue;
        waited.push(result);
        break;
      }
    }
    expect(waited.map((w) => w.status)).toEqual(Array(count).fill("ok"));

    // While each run executed, the store said it alone was running: the others were queued, not `running`.
    const overlapping = [...seenRunning].filter(([runId, running]) => running.join() !== runId);
    expect(overlapping, "runs recorded running while another one executed").toEqual([]);

    // `startedAt`..`endedAt` of the runs never overlap (one session, one run at a time), and each starts no
    // earlier than the runner was handed it minus the time of the lane's own writes.
    const byStart = [...waited].sort((a, b) => (a.startedAt as number) - (b.startedAt as number));
    for (let i = 1; i < byStart.length; i++) {
      const previous = byStart[i - 1] as WaitResult;
      const current = byStart[i] as WaitResult;
      expect(
        current.startedAt,
        `${current.runId} started before ${previous.runId} ended`,
      ).toBeGreaterThanOrEqual(previous.endedAt as number);
    }
    for (const result of waited) {
      const ran = executed.get(result.runId) as { from: number; to: number };
      expect(result.startedAt as number).toBeLessThanOrEqual(ran.from);
      expect(result.endedAt as number).toBeGreaterThanOrEqual(ran.to);
    }
    // Most runs waited behind another: they were accepted before the previous one ended, so queued first.
    const stored = (await Promise.all(sent.map(({ runId }) => shared.getRun(runId)))) as RunRecord[];
    const waitedBehind = stored.filter((run) => (run.startedAt as number) > run.createdAt);
    expect(waitedBehind.length).toBeGreaterThan(count / 2);
  });
});
