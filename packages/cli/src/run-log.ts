import type { Logger } from "@sessions/core";
import type { Gateway, RunRecord } from "@sessions/gateway";

const runFields = (run: RunRecord) => ({
  runId: run.runId,
  sessionKey: run.sessionKey,
  kind: run.kind,
  ...(run.rootRunId === undefined ? {} : { rootRunId: run.rootRunId }),
});

/**
 * Logs each run's and delivery's steps at debug level (recorded, started, ended; delivered, failed): what an operator
 * reads to see where a request's work stands on this gateway. Returns the unsubscribe.
 */
export function logRuns(gateway: Pick<Gateway, "lifecycle">, logger: Logger): () => void {
  return gateway.lifecycle.subscribe({
    accepted: (run) => logger.debug("run recorded", { ...runFields(run), status: run.status }),
    started: (run) => logger.debug("run started", runFields(run)),
    ended: (run, followUps) =>
      logger.debug("run ended", {
        ...runFields(run),
        status: run.status,
        ...(run.error === undefined ? {} : { error: run.error }),
        ...(followUps ? {} : { followUpsElsewhere: true }),
      }),
    deliveryAttempted: (delivery, attempt) =>
      logger.debug("delivery attempted", {
        deliveryId: delivery.id,
        kind: delivery.kind,
        outcome: attempt.outcome,
        ...(attempt.error === undefined ? {} : { error: attempt.error }),
      }),
  });
}
