import { SessionsError } from "@sessions/core";
import type { GatewayContext } from "../context.js";
import type { WaitResult } from "../gateway.js";
import type { RunRecord, RunStatus } from "../store/types.js";

const FINAL_STATUSES: ReadonlySet<RunStatus> = new Set(["ok", "error", "timeout", "aborted"]);

export const isFinal = (status: RunStatus): boolean => FINAL_STATUSES.has(status);

export function toWaitResult(run: RunRecord): WaitResult {
  const result: WaitResult = {
    runId: run.runId,
    status: run.status === "ok" ? "ok" : run.status === "timeout" ? "timeout" : "error",
  };
  if (run.startedAt !== undefined) result.startedAt = run.startedAt;
  if (run.endedAt !== undefined) result.endedAt = run.endedAt;
  if (run.error !== undefined) result.error = run.error;
  if (run.reply) result.reply = run.reply;
  if (run.mergedInto !== undefined) result.mergedInto = run.mergedInto;
  return result;
}

/** Waits for a run to end, up to `timeoutMs`; never cancels it. */
export async function waitRun(
  ctx: Pick<GatewayContext, "store" | "runs" | "clock" | "logger">,
  runId: string,
  timeoutMs: number,
  /** Told the newest record of the run the wait saw (for what the result does not carry, e.g. its budget). */
  seen?: (run: RunRecord) => void,
): Promise<WaitResult> {
  const { store, clock } = ctx;
  // A run this process will end itself needs no read: its end wakes the waiter registered below. Nor one it saw
  // end lately (a wait that comes after a short run's end).
  const local = ctx.runs.localRun(runId) ?? ctx.runs.endedRun(runId);
  const stored = local ?? (await store.getRun(runId));
  if (stored === undefined)
    throw new SessionsError("not_found", `Run not found: ${runId}`, { field: "runId" });
  seen?.(stored);
  if (isFinal(stored.status)) return toWaitResult(stored);
  return new Promise<WaitResult>((resolve) => {
    let settled = false;
    const finish = (result: WaitResult) => {
      if (settled) return;
      settled = true;
      clock.clearTimeout(timer);
      remove();
      resolve(result);
    };
    const remove = ctx.runs.addWaiter(runId, (run) => {
      seen?.(run);
      finish(toWaitResult(run));
    });
    const timer = clock.setTimeout(
      () =>
        finish({
          runId,
          status: "timeout",
          ...(stored.startedAt === undefined ? {} : { startedAt: stored.startedAt }),
          error: `Run still in progress after ${Math.round(timeoutMs / 1000)}s; it continues`,
        }),
      timeoutMs,
    );
    if (local !== undefined) return;
    // The run may have ended between the read above and registering.
    store.getRun(runId).then(
      (latest) => {
        if (latest !== undefined && isFinal(latest.status)) {
          seen?.(latest);
          finish(toWaitResult(latest));
        }
      },
      (error) => ctx.logger.warn("run re-check failed", { runId, error: String(error) }),
    );
  });
}
