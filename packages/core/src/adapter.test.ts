import { describe, expect, it } from "vitest";
import { keepTypingWhileRunning } from "./adapter.js";

describe("keepTypingWhileRunning", () => {
  it("sends typing until the gateway says the run ended, and survives failures", async () => {
    const answers = [
      { status: "timeout" as const },
      { status: "timeout" as const },
      { status: "ok" as const, endedAt: 5 },
    ];
    const waits: number[] = [];
    let sends = 0;
    await keepTypingWhileRunning(
      {
        agentWait: async ({ timeoutMs }) => {
          waits.push(timeoutMs ?? 0);
          return answers.shift() ?? { status: "ok" };
        },
      },
      "run-1",
      async () => {
        sends++;
        if (sends === 2) throw new Error("platform hiccup");
      },
      4500,
    );
    expect(sends).toBe(3);
    expect(waits).toEqual([4500, 4500, 4500]);
  });

  it("stops when the gateway cannot answer", async () => {
    let sends = 0;
    await keepTypingWhileRunning(
      { agentWait: async () => Promise.reject(new Error("gone")) },
      "r",
      async () => void sends++,
      10,
    );
    expect(sends).toBe(1);
  });
});
