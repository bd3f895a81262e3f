import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  BudgetSchema,
  budgetLeft,
  budgetLimits,
  budgetReached,
  budgetSpent,
  budgetSpentNotice,
  resolveBudget,
} from "./budget.js";
import { parseSessionsConfig } from "./config.js";
import { parseMethodParams } from "./protocol.js";

const limitsArb = fc.record(
  {
    tokens: fc.integer({ min: 1, max: 10_000 }),
    costUsd: fc.double({ min: 0.001, max: 100, noNaN: true }),
    runs: fc.integer({ min: 1, max: 50 }),
    deadlineAt: fc.integer({ min: 0, max: 1_000_000 }),
  },
  { requiredKeys: [] },
);
const spentArb = fc.record({
  runs: fc.integer({ min: 0, max: 60 }),
  tokens: fc.integer({ min: 0, max: 20_000 }),
  costUsd: fc.double({ min: 0, max: 200, noNaN: true }),
});

describe("budgets", () => {
  it("validates a budget and names the field", () => {
    expect(BudgetSchema.parse({ runs: 3, seconds: 10 })).toEqual({ runs: 3, seconds: 10 });
    expect(() => BudgetSchema.parse({})).toThrow(/at least one of/);
    expect(() =>
      parseMethodParams("chat.send", {
        sessionKey: "main",
        message: "hi",
        idempotencyKey: "k",
        budget: { runs: 0 },
      }),
    ).toThrow(expect.objectContaining({ code: "invalid_params", field: "budget.runs" }));
    expect(() =>
      parseMethodParams("agent", { message: "hi", idempotencyKey: "k", budget: { costUsd: -1 } }),
    ).toThrow(expect.objectContaining({ field: "budget.costUsd" }));
    expect(() => parseMethodParams("sessions.patch", { key: "main", budget: { tokens: 1.5 } })).toThrow(
      expect.objectContaining({ field: "budget.tokens" }),
    );
    expect(parseMethodParams("sessions.patch", { key: "main", budget: null }).budget).toBeNull();
    expect(() => parseSessionsConfig({ agents: { defaults: { budget: { runs: 2, extra: 1 } } } })).toThrow(
      expect.objectContaining({ code: "invalid_config" }),
    );
    expect(
      parseSessionsConfig({ agents: { list: [{ id: "a", budget: { seconds: 5 } }] } }).agents.list[0]?.budget,
    ).toEqual({
      seconds: 5,
    });
  });

  it("takes the request's budget, else the session's, else the agent's, else the defaults'", () => {
    const budget = fc.option(fc.record({ runs: fc.integer({ min: 1, max: 9 }) }), { nil: undefined });
    fc.assert(
      fc.property(budget, budget, budget, budget, (request, session, agent, defaults) => {
        const resolved = resolveBudget({ request, session, agent, defaults });
        expect(resolved).toBe(request ?? session ?? agent ?? defaults);
      }),
    );
  });

  it("turns seconds into a deadline from the tree's start", () => {
    expect(budgetLimits({ runs: 2, seconds: 30 }, 1_000)).toEqual({ runs: 2, deadlineAt: 31_000 });
  });

  it("refuses a run exactly when a limit is reached, and then nothing is left of it", () => {
    fc.assert(
      fc.property(limitsArb, spentArb, fc.integer({ min: 0, max: 1_000_000 }), (limits, spent, now) => {
        const reached = budgetReached(limits, spent, now);
        const left = budgetLeft(limits, spent, now);
        const over =
          (limits.runs !== undefined && spent.runs >= limits.runs) ||
          (limits.tokens !== undefined && spent.tokens >= limits.tokens) ||
          (limits.costUsd !== undefined && spent.costUsd >= limits.costUsd) ||
          (limits.deadlineAt !== undefined && now >= limits.deadlineAt);
        expect(reached !== undefined).toBe(over);
        if (reached === "runs") expect(left.runs).toBe(0);
        if (reached === "tokens") expect(left.tokens).toBe(0);
        if (reached === "deadline") expect(left.seconds).toBe(0);
        for (const value of Object.values(left)) expect(value).toBeGreaterThanOrEqual(0);
      }),
    );
  });

  it("counts runs, their tokens (total, else input + output) and cost", () => {
    const spent = budgetSpent([
      { usage: { totalTokens: 10, costUsd: 0.5 } },
      { usage: { inputTokens: 3, outputTokens: 4 } },
      {},
    ]);
    expect(spent).toEqual({ runs: 3, tokens: 17, costUsd: 0.5 });
    expect(budgetSpentNotice("runs", { runs: 3 }, spent)).toBe(
      "Stopped: this request's budget is spent (runs 3 of 3).",
    );
  });
});
