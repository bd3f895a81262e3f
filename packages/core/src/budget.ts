import { z } from "zod";

/**
 * A budget shared by every run of an agent tree: at most `tokens` tokens, `costUsd` dollars and `runs` runs, and
 * no run after `seconds` from the tree's first run's start. At least one limit; a tree without one is unlimited.
 */
export const BudgetSchema = z
  .strictObject({
    /** Tokens (each run's `totalTokens`, else input + output) the tree's runs may use together. */
    tokens: z.int().min(1).optional(),
    /** Dollars (each run's reported `costUsd`) the tree's runs may cost together. */
    costUsd: z.number().positive().finite().optional(),
    /** Runs the tree may have, its first run included (sends, reply-back turns, announces, sub-agents). */
    runs: z.int().min(1).optional(),
    /** Wall-clock seconds from the first run's start after which no run of the tree starts or goes on. */
    seconds: z.int().min(1).optional(),
  })
  .refine((b) => Object.values(b).some((v) => v !== undefined), {
    message: "a budget needs at least one of tokens, costUsd, runs, seconds",
  });

/** A budget as configured or asked for (see `BudgetSchema`). */
export type Budget = z.infer<typeof BudgetSchema>;

/** A tree's budget as its runs carry it: the limits, with `seconds` made an absolute deadline (epoch ms). */
export interface BudgetLimits {
  tokens?: number | undefined;
  costUsd?: number | undefined;
  runs?: number | undefined;
  deadlineAt?: number | undefined;
}

/** What a tree's runs have used so far: how many runs it has, their tokens and cost (ended runs). */
export interface BudgetSpent {
  runs: number;
  tokens: number;
  costUsd: number;
}

/** What is left of a budget (only the limits it has; never below 0; `seconds` until the deadline). */
export interface BudgetLeft {
  tokens?: number | undefined;
  costUsd?: number | undefined;
  runs?: number | undefined;
  seconds?: number | undefined;
}

/** A budget's limits, spent and left, as `agent.wait` and `runs.tree` report them. */
export interface BudgetStatus {
  limits: BudgetLimits;
  spent: BudgetSpent;
  left: BudgetLeft;
}

/** The limit a spent budget reached. */
export type BudgetLimitName = "runs" | "tokens" | "costUsd" | "deadline";

/** The limits a tree started at `startedAt` (epoch ms) runs under. */
export function budgetLimits(budget: Budget, startedAt: number): BudgetLimits {
  const limits: BudgetLimits = {};
  if (budget.tokens !== undefined) limits.tokens = budget.tokens;
  if (budget.costUsd !== undefined) limits.costUsd = budget.costUsd;
  if (budget.runs !== undefined) limits.runs = budget.runs;
  if (budget.seconds !== undefined) limits.deadlineAt = startedAt + budget.seconds * 1000;
  return limits;
}

/** Where a root request's budget comes from: its own, else its session's, else its agent's, else the defaults. */
export interface BudgetSources {
  request?: Budget | undefined;
  session?: Budget | undefined;
  agent?: Budget | undefined;
  defaults?: Budget | undefined;
}

/** The first budget of request, session, agent and defaults; undefined: the tree is unlimited. */
export function resolveBudget(sources: BudgetSources): Budget | undefined {
  return sources.request ?? sources.session ?? sources.agent ?? sources.defaults;
}

/** Tokens a run's usage counts for: its `totalTokens`, else input + output. */
export function usageTokens(
  usage:
    | {
        inputTokens?: number | undefined;
        outputTokens?: number | undefined;
        totalTokens?: number | undefined;
      }
    | undefined,
): number {
  if (usage === undefined) return 0;
  if (usage.totalTokens !== undefined) return usage.totalTokens;
  return (usage.inputTokens ?? 0) + (usage.outputTokens ?? 0);
}

/** What a tree's runs have spent: how many runs, and the tokens and cost of those that reported usage. */
export function budgetSpent(
  runs: readonly {
    usage?:
      | {
          inputTokens?: number | undefined;
          outputTokens?: number | undefined;
          totalTokens?: number | undefined;
          costUsd?: number | undefined;
        }
      | undefined;
  }[],
): BudgetSpent {
  let tokens = 0;
  let costUsd = 0;
  for (const run of runs) {
    tokens += usageTokens(run.usage);
    costUsd += run.usage?.costUsd ?? 0;
  }
  return { runs: runs.length, tokens, costUsd };
}

/** What is left of `limits` after `spent`, at `now`. */
export function budgetLeft(limits: BudgetLimits, spent: BudgetSpent, now: number): BudgetLeft {
  const left: BudgetLeft = {};
  if (limits.tokens !== undefined) left.tokens = Math.max(0, limits.tokens - spent.tokens);
  if (limits.costUsd !== undefined) left.costUsd = Math.max(0, limits.costUsd - spent.costUsd);
  if (limits.runs !== undefined) left.runs = Math.max(0, limits.runs - spent.runs);
  if (limits.deadlineAt !== undefined)
    left.seconds = Math.max(0, Math.ceil((limits.deadlineAt - now) / 1000));
  return left;
}

/** Limits, spent and left together. */
export function budgetStatus(limits: BudgetLimits, spent: BudgetSpent, now: number): BudgetStatus {
  return { limits, spent, left: budgetLeft(limits, spent, now) };
}

/**
 * The limit that refuses one more run of a tree that has spent `spent` at `now`, else undefined: its runs would be
 * more than `runs`, its tokens or cost have reached their limit, or its deadline has passed.
 */
export function budgetReached(
  limits: BudgetLimits,
  spent: BudgetSpent,
  now: number,
): BudgetLimitName | undefined {
  if (limits.runs !== undefined && spent.runs + 1 > limits.runs) return "runs";
  if (limits.tokens !== undefined && spent.tokens >= limits.tokens) return "tokens";
  if (limits.costUsd !== undefined && spent.costUsd >= limits.costUsd) return "costUsd";
  if (limits.deadlineAt !== undefined && now >= limits.deadlineAt) return "deadline";
  return undefined;
}

const money = (usd: number) => `$${Number(usd.toFixed(4))}`;

/** A short sentence naming the limit reached, e.g. `runs 5 of 5`, `tokens 1200 of 1000`, `deadline passed`. */
export function describeBudgetLimit(
  reached: BudgetLimitName,
  limits: BudgetLimits,
  spent: BudgetSpent,
): string {
  switch (reached) {
    case "runs":
      return `runs ${spent.runs} of ${limits.runs}`;
    case "tokens":
      return `tokens ${spent.tokens} of ${limits.tokens}`;
    case "costUsd":
      return `cost ${money(spent.costUsd)} of ${money(limits.costUsd ?? 0)}`;
    case "deadline":
      return `deadline ${new Date(limits.deadlineAt ?? 0).toISOString()} passed`;
  }
}

/** The notice users get instead of a reply or announce that a spent budget stopped. */
export function budgetSpentNotice(
  reached: BudgetLimitName,
  limits: BudgetLimits,
  spent: BudgetSpent,
): string {
  return `Stopped: this request's budget is spent (${describeBudgetLimit(reached, limits, spent)}).`;
}

/** A budget's status as the wire carries it (`agent.wait`, `runs.tree`, a `budget_exceeded` tool result). */
export const BudgetStatusSchema = z.object({
  limits: z.object({
    tokens: z.number().optional(),
    costUsd: z.number().optional(),
    runs: z.number().optional(),
    deadlineAt: z.number().optional(),
  }),
  spent: z.object({ runs: z.number(), tokens: z.number(), costUsd: z.number() }),
  left: z.object({
    tokens: z.number().optional(),
    costUsd: z.number().optional(),
    runs: z.number().optional(),
    seconds: z.number().optional(),
  }),
});
