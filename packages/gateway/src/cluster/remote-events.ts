import type { GatewayContext } from "../context.js";
import { emitFinal, emitStart } from "../runs/run-events.js";
import { isFinal } from "../runs/wait.js";
import type { RunRecord } from "../store/types.js";

/**
 * Run events for runs that execute on other gateways: their start and end (with the reply) as `agent`/`chat`
 * events here, from the change feed, so a client subscribed to a session hears of its runs wherever they run.
 * Streamed deltas stay on the gateway that runs the run (they are not stored). `local` holds this gateway's own
 * runs under way (it emits their events itself); each leaves it when its end is seen.
 */
export function forwardRemoteRunEvents(ctx: GatewayContext, local: Set<string>): () => void {
  return ctx.store.watch((change) => {
    if (change.type !== "run") return;
    if (local.has(change.runId)) {
      if (isFinal(change.status)) local.delete(change.runId);
      return;
    }
    if (change.status === "running") {
      const started: Pick<RunRecord, "runId" | "sessionKey"> = change;
      emitStart(ctx, started as RunRecord);
      return;
    }
    if (!isFinal(change.status)) return;
    ctx.store.getRun(change.runId).then(
      (run) => {
        if (run !== undefined && isFinal(run.status)) emitFinal(ctx, run);
      },
      (error) =>
        ctx.logger.warn("could not read a remote run's end", { runId: change.runId, error: String(error) }),
    );
  });
}
