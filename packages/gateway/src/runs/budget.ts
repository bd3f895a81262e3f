import {
  type Budget,
  type BudgetLimitName,
  type BudgetLimits,
  type BudgetSpent,
  type BudgetStatus,
  budgetLimits,
  budgetReached,
  budgetSpent,
  budgetSpentNotice,
  budgetStatus,
  describeBudgetLimit,
  findAgentConfig,
  resolveBudget,
  SessionsError,
} from "@sessions/core";
import type { GatewayContext } from "../context.js";
import type { RunRecord, StoredEntry } from "../store/types.js";
import { agentIdOfKey } from "./key-agent.js";

/** Runs of one tree read to add up what it spent (a budgeted tree that large has long been stopped). */
const TREE_READ_LIMIT = 10_000;

/** The lease a budgeted tree's run starts hold across a cluster. */
export const budgetLeaseName = (rootRunId: string) => `budget:${rootRunId}`;

/**
 * A run of a tree whose budget is spent was not started. Tools turn it into a `budget_exceeded` result; follow-up
 * work (reply-back turns, announces) stops and tells the user instead.
 */
export class BudgetExceeded extends SessionsError {
  constructor(
    readonly reached: BudgetLimitName,
    readonly status: BudgetStatus,
  ) {
    super(
      "forbidden",
      `this request's budget is spent (${describeBudgetLimit(reached, status.limits, status.spent)})`,
      { details: { code: "budget_exceeded", budget: status } },
    );
  }

  /** What users are told instead of a reply or announce the budget stopped. */
  get notice(): string {
    return budgetSpentNotice(this.reached, this.status.limits, this.status.spent);
  }
}

/** The budget of a tree a root request starts at `now`: the request's, else its session's, agent's, the defaults'. */
export function rootBudget(
  ctx: Pick<GatewayContext, "config">,
  sessionKey: string,
  entry: Pick<StoredEntry, "budget"> | undefined,
  request: Budget | undefined,
  now: number,
): BudgetLimits | undefined {
  const agent = findAgentConfig(ctx.config, agentIdOfKey(sessionKey) ?? "main");
  const budget = resolveBudget({
    request,
    session: entry?.budget,
    agent: agent?.budget,
    defaults: ctx.config.agents.defaults.budget,
  });
  return budget === undefined ? undefined : budgetLimits(budget, now);
}

/** A root run's spec fields for its budget (none for an unlimited tree). */
export const budgetOf = (limits: BudgetLimits | undefined): { budget?: BudgetLimits } =>
  limits === undefined ? {} : { budget: limits };

/** What the runs of a tree have spent. */
export async function treeSpent(ctx: Pick<GatewayContext, "store">, rootRunId: string): Promise<BudgetSpent> {
  return budgetSpent(await ctx.store.listRunTree(rootRunId, TREE_READ_LIMIT));
}

/** A budgeted run's tree status (limits, spent, left) as `agent.wait` reports it; undefined for unlimited trees. */
export async function runBudgetStatus(
  ctx: Pick<GatewayContext, "store" | "clock">,
  run: Pick<RunRecord, "runId" | "rootRunId" | "budget">,
): Promise<BudgetStatus | undefined> {
  if (run.budget === undefined) return undefined;
  const spent = await treeSpent(ctx, run.rootRunId ?? run.runId);
  return budgetStatus(run.budget, spent, ctx.clock.now());
}

/**
 * Whether a run of `run`'s tree would be refused now (a read, not a draw: `drawBudget` decides). Lets a tool refuse
 * before it writes anything for a run that could not start.
 */
export async function budgetSpentFor(
  ctx: Pick<GatewayContext, "store" | "clock">,
  run: Pick<RunRecord, "runId" | "rootRunId" | "budget">,
): Promise<BudgetExceeded | undefined> {
  if (run.budget === undefined) return undefined;
  const spent = await treeSpent(ctx, run.rootRunId ?? run.runId);
  const now = ctx.clock.now();
  const reached = budgetReached(run.budget, spent, now);
  return reached === undefined
    ? undefined
    : new BudgetExceeded(reached, budgetStatus(run.budget, spent, now));
}

/**
 * Runs `task` as the only start of a run in the tree `rootRunId` under way: here under a lock, and in a cluster under
 * the lease `budget:<rootRunId>` too. What a start checks of its tree (its budget, the hop limit and loop guard) and
 * the run it records then come as one step, so two starts of one tree (parallel tool calls, two gateways) never
 * both pass a check that only one of them may.
 */
export function oneStartOfTree<T>(
  ctx: GatewayContext,
  rootRunId: string,
  task: () => Promise<T>,
): Promise<T> {
  const cluster = ctx.cluster;
  return ctx.locks.budgets.run(rootRunId, () =>
    cluster === undefined ? task() : cluster.exclusive(budgetLeaseName(rootRunId), task),
  );
}

/**
 * Throws `BudgetExceeded` when the tree's budget is spent. Called by a start holding its tree (`oneStartOfTree`):
 * runs are never overspent, tokens and cost only by runs already under way.
 */
export async function drawBudget(
  ctx: GatewayContext,
  rootRunId: string,
  limits: BudgetLimits,
): Promise<void> {
  const spent = await treeSpent(ctx, rootRunId);
  const now = ctx.clock.now();
  const reached = budgetReached(limits, spent, now);
  if (reached !== undefined) throw new BudgetExceeded(reached, budgetStatus(limits, spent, now));
}

/** Whether `error` says a tree's budget is spent (see `BudgetExceeded`). */
export const isBudgetExceeded = (error: unknown): error is BudgetExceeded => error instanceof BudgetExceeded;

/** Whether `run` was stopped at its tree's budget deadline (it ended `timeout` at or after it). */
export function stoppedAtDeadline(run: Pick<RunRecord, "status" | "endedAt" | "budget">): boolean {
  const deadlineAt = run.budget?.deadlineAt;
  return (
    run.status === "timeout" &&
    deadlineAt !== undefined &&
    run.endedAt !== undefined &&
    run.endedAt >= deadlineAt
  );
}

/** What users are told when a run of `run`'s tree was stopped at its budget deadline. */
export const deadlineNotice = (run: Pick<RunRecord, "budget">): string =>
  budgetSpentNotice("deadline", run.budget ?? {}, { runs: 0, tokens: 0, costUsd: 0 });
