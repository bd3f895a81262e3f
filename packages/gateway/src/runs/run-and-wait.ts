import type { GatewayContext } from "../context.js";
import type { RunRecord } from "../store/types.js";
import type { RunSpec } from "./spec.js";
import { startRun } from "./start.js";
import { waitRun } from "./wait.js";

const A2A_TURN_WAIT_MS = 10 * 60_000;

/** Starts a run and waits for its end (up to ten minutes): one turn of the reply-back loop or an announce. */
export async function runAndWait(ctx: GatewayContext, spec: RunSpec): Promise<RunRecord> {
  const { run } = await startRun(ctx, spec);
  const waited = await waitRun(ctx, run.runId, A2A_TURN_WAIT_MS);
  return (await ctx.store.getRun(waited.runId)) ?? run;
}
