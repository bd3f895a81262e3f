import type { GatewayContext } from "../context.js";
import type { LifecycleHooks } from "../lifecycle.js";
import type { RunRecord } from "../store/types.js";
import { abortRun } from "./abort.js";
import { sessionQueueMode } from "./queue-modes.js";

/**
 * Queue mode `interrupt`: a user's message recorded behind a running run of its session aborts that run (if it
 * answers a user's message too), on whichever gateway runs it. The next run then starts over with every waiting
 * message (it collects them at its start, see `absorbQueued`).
 */
export function followInterrupts(ctx: GatewayContext): Partial<LifecycleHooks> {
  return {
    accepted(run) {
      if (run.status !== "queued" || run.userMessage !== true) return;
      ctx.tasks.track(
        interrupt(ctx, run).catch((error: unknown) =>
          ctx.logger.warn("could not interrupt the running run", { runId: run.runId, error: String(error) }),
        ),
      );
    },
  };
}

async function interrupt(ctx: GatewayContext, arrived: RunRecord): Promise<void> {
  const entry = await ctx.store.getEntry(arrived.sessionKey);
  if (sessionQueueMode(ctx, arrived.sessionKey, entry) !== "interrupt") return;
  for (const run of await ctx.store.listRunsByStatus(["running"])) {
    if (run.sessionKey === arrived.sessionKey && run.userMessage === true) abortRun(ctx, run);
  }
}
