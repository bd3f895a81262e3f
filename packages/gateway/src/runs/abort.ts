import type { GatewayContext } from "../context.js";
import type { RunRecord } from "../store/types.js";

/** What a gateway publishes to have another one abort a run it holds (`store.publish`: at most once). */
interface AbortRequest {
  type: "run.abort";
  v: 1;
  /** The gateway that holds the run (only it acts). */
  to: string;
  sessionKey: string;
  runId: string;
}

function parseAbortRequest(value: unknown): AbortRequest | undefined {
  if (value === null || typeof value !== "object") return undefined;
  const message = value as Partial<AbortRequest>;
  if (message.type !== "run.abort" || message.v !== 1) return undefined;
  if (typeof message.to !== "string" || typeof message.sessionKey !== "string") return undefined;
  return typeof message.runId === "string" ? (message as AbortRequest) : undefined;
}

/** Whether other gateways can be asked to abort their runs: a cluster on a store that publishes. */
const canReachOthers = (ctx: GatewayContext) =>
  ctx.cluster !== undefined && typeof ctx.store.publish === "function";

/** Asks the gateway holding `run` to abort it: here at once, elsewhere through `store.publish` (at most once). */
export function abortRun(
  ctx: GatewayContext,
  run: Pick<RunRecord, "runId" | "sessionKey" | "owner">,
): boolean {
  if (run.owner === undefined || run.owner === ctx.owner || !canReachOthers(ctx))
    return ctx.runs.abortSession(run.sessionKey, run.runId).length > 0;
  const request: AbortRequest = {
    type: "run.abort",
    v: 1,
    to: run.owner,
    sessionKey: run.sessionKey,
    runId: run.runId,
  };
  try {
    ctx.store.publish?.(request);
    return true;
  } catch (error) {
    ctx.logger.warn("could not ask another gateway to abort a run", {
      runId: run.runId,
      error: String(error),
    });
    return false;
  }
}

/**
 * `chat.abort`: stops a session's queued and running runs (or just `runId`) on this gateway and, in a cluster,
 * asks the gateways holding the others to stop theirs. Returns the ids aborted or asked to abort.
 */
export async function abortSessionRuns(
  ctx: GatewayContext,
  sessionKey: string,
  runId?: string,
): Promise<string[]> {
  const runIds = ctx.runs.abortSession(sessionKey, runId);
  if (!canReachOthers(ctx)) return runIds;
  for (const run of await ctx.store.listRunsByStatus(["queued", "running"])) {
    if (run.sessionKey !== sessionKey || (runId !== undefined && run.runId !== runId)) continue;
    if (run.owner === undefined || run.owner === ctx.owner || runIds.includes(run.runId)) continue;
    if (abortRun(ctx, run)) runIds.push(run.runId);
  }
  return runIds;
}

/** Aborts the runs this gateway holds that other gateways ask it to (see `abortRun`); returns the unsubscribe. */
export function listenForAborts(ctx: GatewayContext): () => void {
  if (ctx.store.subscribe === undefined) return () => {};
  return ctx.store.subscribe((value) => {
    const request = parseAbortRequest(value);
    if (request === undefined || request.to !== ctx.owner) return;
    ctx.runs.abortSession(request.sessionKey, request.runId);
  });
}
