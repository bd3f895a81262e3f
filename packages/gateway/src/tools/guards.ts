import { type BudgetStatus, findAgentConfig } from "@sessions/core";
import type { GatewayContext } from "../context.js";
import type { BudgetExceeded } from "../runs/budget.js";
import { parentRunId, type ToolCall } from "../runs/cause.js";
import { emitGuard } from "../runs/run-events.js";
import type { RunRecord } from "../store/types.js";
import type { ToolContext } from "./tool-context.js";

/** A call the tree's guards refused: the tool result the calling agent gets. */
export interface GuardRefusal {
  status: "forbidden";
  code: "max_hops" | "loop" | "budget_exceeded";
  error: string;
  limit: number;
  chain: string[];
  /** `budget_exceeded`: the tree's budget, what it spent and what is left. */
  budget?: BudgetStatus;
}

/**
 * Records a refusal where people and tools look: an `agent` event of the calling run (`stream: "guard"`), and the
 * run's record at its end (`guards`, in `runs.tree` and the console). The tool result itself is in its transcript.
 */
export function noteGuard(
  ctx: Pick<GatewayContext, "runs" | "clock" | "emit" | "listening">,
  runId: string,
  tool: string,
  refusal: GuardRefusal,
): void {
  ctx.runs.noteGuard(runId, { code: refusal.code, tool, limit: refusal.limit, chain: refusal.chain });
  emitGuard(ctx, runId, refusal);
}

/** A start the tree's guards refused (thrown from `RunSpec.guard`): the refusal the calling agent gets. */
export class GuardRefused extends Error {
  constructor(readonly refusal: GuardRefusal) {
    super(refusal.error);
  }
}

/** Runs a tree may hold that the loop guard reads (a tree that large is refused by its hop limit long before). */
const TREE_READ_LIMIT = 1000;

/** The sessions a request went through to reach `run`, first first (a session once per stretch it held it). */
async function chainTo(ctx: Pick<GatewayContext, "store">, runId: string, limit: number): Promise<string[]> {
  const chain: string[] = [];
  let next: string | undefined = runId;
  for (let steps = 0; next !== undefined && steps <= limit * 4; steps++) {
    const run: RunRecord | undefined = await ctx.store.getRun(next);
    if (run === undefined) break;
    if (chain[0] !== run.sessionKey) chain.unshift(run.sessionKey);
    next = parentRunId(run);
  }
  return chain;
}

/**
 * The refusal of a `sessions_send` or `sessions_spawn` whose run the tree's spent budget did not start: the limit
 * reached (runs, tokens, cost, or the deadline's epoch ms), the chain it stopped and the budget's status.
 */
export async function budgetRefusal(
  ctx: Pick<GatewayContext, "store">,
  call: ToolCall | undefined,
  targetKey: string,
  name: "sessions_send" | "sessions_spawn",
  spent: BudgetExceeded,
): Promise<GuardRefusal> {
  const { limits } = spent.status;
  const limit =
    spent.reached === "deadline"
      ? limits.deadlineAt
      : spent.reached === "runs"
        ? limits.runs
        : limits[spent.reached];
  const chain = call === undefined ? [targetKey] : [...(await chainTo(ctx, call.run.runId, 100)), targetKey];
  return {
    status: "forbidden",
    code: "budget_exceeded",
    error: `${name} refused: ${spent.message}. Finish with what you have.`,
    limit: limit ?? 0,
    chain,
    budget: spent.status,
  };
}

/**
 * The guards of a tree of agents, checked before a `sessions_send` or `sessions_spawn` starts a run: the run would be
 * one hop further from the tree's first message than the calling agent's `maxHops` allows (`max_hops`); or, for a
 * send, the two sessions have already exchanged more messages in this tree than a send and its reply-back loop allow
 * (`loop`: the same pair of sessions sending to each other again and again). Undefined when the call may go ahead.
 * The hop limit depends on the calling run alone; the loop guard counts the tree's runs, so a send checks it with
 * its start as one step of its tree (`RunSpec.guard`), or two parallel sends could both pass.
 */
export async function guardTree(
  ctx: Pick<GatewayContext, "config" | "store">,
  tool: ToolContext,
  call: ToolCall | undefined,
  targetKey: string,
  name: "sessions_send" | "sessions_spawn",
): Promise<GuardRefusal | undefined> {
  if (call === undefined) return undefined;
  const { config } = ctx;
  const limit = findAgentConfig(config, tool.agentId)?.maxHops ?? config.session.agentToAgent.maxHops;
  const hops = (call.run.hops ?? 0) + 1;
  if (hops > limit) {
    const chain = [...(await chainTo(ctx, call.run.runId, limit)), targetKey];
    return {
      status: "forbidden",
      code: "max_hops",
      error: `${name} refused: it would be message ${hops} of a chain limited to ${limit} (maxHops): ${chain.join(" → ")}`,
      limit,
      chain,
    };
  }
  if (name !== "sessions_send" || targetKey === tool.requesterKey) return undefined;
  // A send and its reply-back loop exchange up to maxPingPongTurns + 1 messages between two sessions.
  const allowed = config.session.agentToAgent.maxPingPongTurns + 1;
  const runs = await ctx.store.listRunTree(call.run.rootRunId ?? call.run.runId, TREE_READ_LIMIT);
  const byId = new Map(runs.map((run) => [run.runId, run]));
  const pair = new Set([tool.requesterKey, targetKey]);
  const exchanged = runs.filter((run) => {
    if (run.kind !== "inter_session" || run.cause?.kind !== "tool") return false;
    const sender = byId.get(run.cause.runId)?.sessionKey;
    return sender !== undefined && sender !== run.sessionKey && pair.has(sender) && pair.has(run.sessionKey);
  }).length;
  if (exchanged < allowed) return undefined;
  const chain = [...(await chainTo(ctx, call.run.runId, limit)), targetKey];
  return {
    status: "forbidden",
    code: "loop",
    error: `sessions_send refused: ${tool.requesterKey} and ${targetKey} have already sent each other ${exchanged} messages in this tree (at most ${allowed}: a send and its reply-back turns): ${chain.join(" → ")}`,
    limit: allowed,
    chain,
  };
}
