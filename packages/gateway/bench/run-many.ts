// The load of the runs benches: `agent` + `agent.wait` over many sessions at once.
import { randomUUID } from "node:crypto";
import type { Gateway } from "../src/index.js";
import { type Rate, rate, start } from "./rate.js";

/** Runs `runs` scripted runs over `sessions` sessions (one at a time per session), and how fast they went. */
export async function runMany(gateway: Gateway, runs: number, sessions: number): Promise<Rate> {
  let next = 0;
  const started = start();
  await Promise.all(
    Array.from({ length: sessions }, async (_, s) => {
      for (;;) {
        const i = next++;
        if (i >= runs) return;
        const { runId } = await gateway.agent({
          sessionKey: `bench-${s}`,
          message: `m${i}`,
          idempotencyKey: randomUUID(),
        });
        const waited = await gateway.agentWait({ runId, timeoutMs: 60_000 });
        if (waited.status !== "ok") throw new Error(`run ${runId} ended ${waited.status}: ${waited.error}`);
      }
    }),
  );
  return rate(runs, started);
}
