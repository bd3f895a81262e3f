import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { formatDuration, formatSubagentAnnounce, formatTokenCount, formatUsd } from "./announce.js";

describe("formatDuration", () => {
  it.each([
    // Zero is what a run that was never timed reports: the stats line says n/a, not a misleading 0s.
    [0, "n/a"],
    [-0, "n/a"],
    [400, "0s"],
    [1500, "2s"],
    [59_000, "59s"],
    [65_000, "1m5s"],
    [3_599_000, "59m59s"],
    [3_600_000, "1h0m"],
    [3_725_000, "1h2m"],
    [90_000_000, "25h0m"],
    [-1, "n/a"],
    [Number.NaN, "n/a"],
    [undefined, "n/a"],
  ])("%j → %j", (ms, expected) => {
    expect(formatDuration(ms)).toBe(expected);
  });

  it("says n/a exactly for zero, negative and non-finite values", () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.double({ min: -1e12, max: 1e12 }),
          fc.integer(),
          fc.constantFrom(0, -0, Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY),
        ),
        (ms) => {
          const text = formatDuration(ms);
          const measured = Number.isFinite(ms) && ms > 0;
          expect(text === "n/a").toBe(!measured);
          if (measured) expect(text).toMatch(/^(\d+s|\d+m\d+s|\d+h\d+m)$/);
        },
      ),
    );
  });

  it("the announce stats line shows n/a for a zero or unknown runtime", () => {
    for (const runtimeMs of [0, undefined, Number.NaN]) {
      const text = formatSubagentAnnounce({ outcome: { status: "ok" }, reply: "done", stats: { runtimeMs } });
      expect(text.split("\n").at(-1)).toBe("Stats: runtime n/a • tokens n/a");
    }
  });
});

describe("formatTokenCount", () => {
  it.each([
    [0, "0"],
    [999, "999"],
    [1000, "1k"],
    [1234, "1.2k"],
    [12_345, "12.3k"],
    [999_949, "999.9k"],
    [999_999, "1m"],
    [3_400_000, "3.4m"],
    [-5, "n/a"],
    ["12", "n/a"],
  ])("%j → %j", (n, expected) => {
    expect(formatTokenCount(n)).toBe(expected);
  });
});

describe("formatUsd", () => {
  it.each([
    [0.0123, "$0.0123"],
    [0.00012, "$0.0001"],
    [0.5, "$0.50"],
    [1.234, "$1.23"],
    [12, "$12.00"],
    [0, "$0.00"],
    [-1, "n/a"],
    [Number.POSITIVE_INFINITY, "n/a"],
  ])("%j → %j", (amount, expected) => {
    expect(formatUsd(amount)).toBe(expected);
  });
});

describe("formatSubagentAnnounce (SPEC 6)", () => {
  it("normalises a reply with sections and a stats line", () => {
    const text = formatSubagentAnnounce({
      outcome: { status: "ok" },
      reply:
        "Status: error (model says)\n- **Result:** Found 3 papers.\nSee list below.\n\n**Notes:**\n- used cache",
      stats: {
        runtimeMs: 65_000,
        inputTokens: 800,
        outputTokens: 434,
        totalTokens: 1234,
        costUsd: 0.0123,
        sessionKey: "agent:research:subagent:abc",
        sessionId: "5b0c3f7e-2a51-4a43-8b8b-6b2c1f9c9d11",
        transcriptPath: "sessions/5b0c3f7e.jsonl",
      },
    });
    expect(text).toBe(
      [
        "Status: success",
        "",
        "Result:",
        "Found 3 papers.",
        "See list below.",
        "",
        "Notes:",
        "- used cache",
        "",
        "Stats: runtime 1m5s • tokens 1.2k (in 800 / out 434) • est $0.0123 • sessionKey agent:research:subagent:abc • sessionId 5b0c3f7e-2a51-4a43-8b8b-6b2c1f9c9d11 • transcript sessions/5b0c3f7e.jsonl",
      ].join("\n"),
    );
  });

  it("uses the whole reply when there is no Result section and adds the error note on failure", () => {
    const text = formatSubagentAnnounce({
      outcome: { status: "timeout", error: "run timed out after 30s" },
      reply: "Partial: 2 of 5 done",
    });
    expect(text).toBe(
      [
        "Status: timeout",
        "",
        "Result:",
        "Partial: 2 of 5 done",
        "",
        "Notes:",
        "- Error: run timed out after 30s",
      ].join("\n"),
    );
  });

  it("falls back to the latest tool result, then to (not available)", () => {
    expect(
      formatSubagentAnnounce({ outcome: { status: "ok" }, reply: "  ", fallbackResult: '{"rows":3}' }),
    ).toContain('Result:\n{"rows":3}\n');
    const empty = formatSubagentAnnounce({ outcome: { status: "error", error: "boom" }, reply: "" });
    expect(empty).toBe(
      ["Status: error", "", "Result:", "(not available)", "", "Notes:", "- Error: boom"].join("\n"),
    );
  });

  it.each([
    ["RESULT: done", "done"],
    ["## Result:\ndone", "done"],
    ["1. Result: done", "done"],
    ["* __Result:__ done", "done"],
    ["**Result**: done", "done"],
  ])("recognises header %j without leaking markup", (reply, result) => {
    const text = formatSubagentAnnounce({ outcome: { status: "ok" }, reply });
    expect(text).toContain(`Result:\n${result}\n`);
    expect(text).not.toContain("*");
    expect(text).not.toContain("#");
  });

  it("takes the status from the runtime, never from model text", () => {
    fc.assert(
      fc.property(
        fc.constantFrom("ok", "error", "timeout", "unknown") as fc.Arbitrary<"ok">,
        fc.string(),
        (status, reply) => {
          const text = formatSubagentAnnounce({ outcome: { status }, reply });
          const word = { ok: "success", error: "error", timeout: "timeout", unknown: "unknown" }[status];
          expect(text.startsWith(`Status: ${word}\n\nResult:\n`)).toBe(true);
          expect(text).toContain("\n\nNotes:\n");
        },
      ),
    );
  });

  it("omits the stats line without stats and tolerates bad input", () => {
    expect(formatSubagentAnnounce({ outcome: { status: "ok" }, reply: "x" })).not.toContain("Stats:");
    expect(formatSubagentAnnounce({ outcome: { status: "ok" }, reply: "x", stats: {} })).toContain(
      "Stats: runtime n/a • tokens n/a",
    );
    expect(formatSubagentAnnounce({} as never)).toContain("Status: unknown");
  });
});

describe("review findings", () => {
  it("drops a model Status line before the result but keeps the text after it", () => {
    const text = formatSubagentAnnounce({
      outcome: { status: "ok" },
      reply: "Status: done\nI wrote the report to out.md",
    });
    expect(text).toContain("Result:\nI wrote the report to out.md\n");
    expect(text).not.toContain("done");
  });

  it("keeps Status:/Stats: lines that are part of the Result body", () => {
    const text = formatSubagentAnnounce({
      outcome: { status: "ok" },
      reply: "Result:\nHTTP check\nStatus: 200 OK\nStats: 3 files",
    });
    expect(text).toContain("Result:\nHTTP check\nStatus: 200 OK\nStats: 3 files\n");
  });

  it("handles a huge whitespace line without catastrophic backtracking", () => {
    const text = formatSubagentAnnounce({ outcome: { status: "ok" }, reply: `${" ".repeat(200_000)}x` });
    expect(text).toContain("Result:\n");
  });

  it("maps unknown outcome statuses to unknown and survives missing input", () => {
    expect(formatSubagentAnnounce({ outcome: { status: "toString" } } as never)).toContain("Status: unknown");
    expect(formatSubagentAnnounce(undefined as never)).toContain(
      "Status: unknown\n\nResult:\n(not available)",
    );
    expect(
      formatSubagentAnnounce({ outcome: { status: "ok" }, stats: { sessionKey: Symbol("x") } } as never),
    ).toContain("Stats:");
  });
});
