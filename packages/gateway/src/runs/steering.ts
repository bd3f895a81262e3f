import type { TranscriptMessage } from "@sessions/core";
import type { GatewayContext } from "../context.js";
import type { RunRecord } from "../store/types.js";
import { inputOf, mergeQueuedRun, queuedUserRuns } from "./absorb.js";
import { sessionQueueMode } from "./queue-modes.js";

/**
 * `takeSteering` of a run that answers a user's message, with the session's queue mode read at each boundary (a
 * mode set while the run runs applies): under `steer` and `steer-backlog`, the queued users' messages of its
 * session, oldest first, each handed over once; under any other mode, none. `steer` ends their runs merged into
 * this one (fenced: a run that started meanwhile is left to run); `steer-backlog` leaves them queued, so they also
 * run afterwards.
 */
export function steeringFor(
  ctx: Pick<GatewayContext, "store" | "clock" | "config">,
  run: RunRecord,
  /** The runs `steer` took, oldest first (their replies are this run's). */
  taken: RunRecord[] = [],
): () => Promise<TranscriptMessage[]> {
  const handed = new Set<string>();
  return async () => {
    const mode = sessionQueueMode(ctx, run.sessionKey, await ctx.store.getEntry(run.sessionKey));
    if (mode !== "steer" && mode !== "steer-backlog") return [];
    const messages: TranscriptMessage[] = [];
    for (const queued of await queuedUserRuns(ctx.store, run.sessionKey, run.runId)) {
      if (handed.has(queued.runId)) continue;
      const merged = mode === "steer" ? await mergeQueuedRun(ctx, queued, run.runId) : queued;
      if (merged === undefined) continue;
      handed.add(queued.runId);
      if (mode === "steer") taken.push(merged);
      const input = await inputOf(ctx.store, merged);
      if (input !== undefined) messages.push(input);
    }
    return messages;
  };
}
