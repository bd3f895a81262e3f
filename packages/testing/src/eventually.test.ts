import { describe, expect, it } from "vitest";
import { ConditionTimeoutError, eventually } from "./eventually.js";

describe("eventually", () => {
  it("resolves with the first value that is not false, after as many checks as it takes", async () => {
    let checks = 0;
    const value = await eventually(() => (++checks < 4 ? false : { checks }), "fourth check");
    expect(value).toEqual({ checks: 4 });
  });

  it("retries a throwing assertion and resolves once it passes", async () => {
    let n = 0;
    await eventually(() => expect(++n).toBeGreaterThan(2));
    expect(n).toBe(3);
  });

  it("fails at its bound naming what was missing and the last assertion error", async () => {
    const failure = await eventually(
      () => expect("pending").toBe("delivered"),
      () => "delivery of m1",
      { timeoutMs: 30 },
    ).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(ConditionTimeoutError);
    expect((failure as Error).message).toMatch(/^delivery of m1 still not true after 30 ms: .*delivered/);
  });

  it("checks at least twice even when the first check outlasts the bound", async () => {
    let checks = 0;
    await eventually(
      async () => {
        checks++;
        if (checks === 1) await new Promise((resolve) => setTimeout(resolve, 20));
        return checks === 2;
      },
      "second check",
      { timeoutMs: 1 },
    );
    expect(checks).toBe(2);
  });
});
