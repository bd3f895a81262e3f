import { findAgentConfig, type QueueMode, resolveQueueMode, SessionsError } from "@sessions/core";
import { laneLeaseName } from "../cluster/lanes.js";
import type { GatewayContext } from "../context.js";
import { holderGone } from "../store/lease-liveness.js";
import type { RunRecord, StoredEntry } from "../store/types.js";
import { agentIdOfKey } from "./key-agent.js";

/** How long a refused sender is told to wait before trying again (a turn is seconds, not milliseconds). */
export const BUSY_RETRY_AFTER_MS = 2_000;

/** A session's queue mode: its own (`sessions.patch`, `/queue`), else its agent's, else `agents.defaults`'. */
export function sessionQueueMode(
  ctx: Pick<GatewayContext, "config">,
  sessionKey: string,
  entry: Pick<StoredEntry, "queueMode"> | undefined,
): QueueMode {
  const agent = findAgentConfig(ctx.config, agentIdOfKey(sessionKey) ?? "main");
  return resolveQueueMode({
    session: entry?.queueMode,
    agent: agent?.queueMode,
    defaults: ctx.config.agents?.defaults?.queueMode,
  });
}

/**
 * Whether a run of the session is queued or running: here (one is registered and has not reached its end) or, in a cluster, on another
 * live gateway (it holds the session's lane lease).
 */
export async function sessionBusy(ctx: GatewayContext, sessionKey: string): Promise<boolean> {
  if (ctx.runs.hasActive(sessionKey)) return true;
  if (ctx.cluster === undefined) return false;
  const lease = await ctx.store.getLease(laneLeaseName(sessionKey));
  return lease !== undefined && lease.owner !== ctx.owner && !holderGone(lease, ctx.clock.now());
}

/**
 * Queue mode `reject`: a user's message to a busy session is refused before anything is recorded. A repeat of a
 * message already accepted (its idempotency key has a run) is not refused: that run is returned.
 * @throws SessionsError `busy` (field `sessionKey`) with `retryAfterMs`.
 */
export async function refuseWhenBusy(
  ctx: GatewayContext,
  sessionKey: string,
  entry: StoredEntry | undefined,
  idempotencyKey: string | undefined,
): Promise<RunRecord | undefined> {
  if (sessionQueueMode(ctx, sessionKey, entry) !== "reject") return undefined;
  if (!(await sessionBusy(ctx, sessionKey))) return undefined;
  if (idempotencyKey !== undefined) {
    const existing = await ctx.store.findRunByIdempotencyKey(idempotencyKey);
    if (existing !== undefined) return existing;
  }
  throw new SessionsError("busy", `Session ${sessionKey} is busy with another run; try again later`, {
    field: "sessionKey",
    retryAfterMs: BUSY_RETRY_AFTER_MS,
    details: { queueMode: "reject" },
  });
}
