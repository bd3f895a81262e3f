import type { GatewayContext } from "../context.js";
import type { LifecycleHooks } from "../lifecycle.js";
import type { RunRecord, StoredEntry } from "../store/types.js";
import { abortRun } from "./abort.js";
import { sessionQueueMode } from "./queue-modes.js";

/**
 * Queue mode `interrupt`: a user's message recorded behind a running run of its session aborts that run (if it
 * answers a user's message too), on whichever gateway runs it. The next run then starts over with every waiting
 * message (it collects them at its start, see `absorbQueued`).
 */
export function followInterrupts(ctx: GatewayContext): Partial<LifecycleHooks> {
  return {
    accepted(run, entry) {
      if (run.status !== "queued" || run.userMessage !== true) return;
      ctx.tasks.track(
        interrupt(ctx, run, entry).catch((error: unknown) =>
          ctx.logger.warn("could not interrupt the running run", { runId: run.runId, error: String(error) }),
        ),
      );
    },
  };
}

/**
 * Aborts the running runs of `arrived`'s session that answer an older user's message, while `arrived` still waits:
 * once a run has taken it (or it started), that run answers it and must not be aborted on its behalf.
 */
async function interrupt(ctx: GatewayContext, arrived: RunRecord, known?: StoredEntry): Promise<void> {
  // The entry the run's start read: a session patched since then to `interrupt` is seen by the next message.
  const entry = known ?? (await ctx.store.getEntry(arrived.sessionKey));
  if (sessionQueueMode(ctx, arrived.sessionKey, entry) !== "interrupt") return;
  const active = (await ctx.store.listRunsByStatus(["queued", "running"])).filter(
    (run) => run.sessionKey === arrived.sessionKey,
  );
  if (!active.some((run) => run.runId === arrived.runId && run.status === "queued")) return;
  const seq = arrived.inputSeq ?? Number.POSITIVE_INFINITY;
  for (const run of active) {
    if (run.status === "running" && run.userMessage === true && (run.inputSeq ?? 0) < seq) abortRun(ctx, run);
  }
}
