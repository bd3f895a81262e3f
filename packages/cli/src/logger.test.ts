import { describe, expect, it } from "vitest";
import { LOG_LEVELS, lineLogger, parseLogLevel } from "./logger.js";

const at = new Date("2026-11-27T12:00:00.000Z");

function capture(level: Parameters<typeof lineLogger>[0]) {
  const lines: string[] = [];
  const logger = lineLogger(level, { write: (line) => lines.push(line), now: () => at });
  return { logger, lines };
}

describe("lineLogger", () => {
  it("writes one line per entry at its level and above, naming the part that logged", () => {
    const { logger, lines } = capture("info");
    logger.debug("not shown");
    logger.info("listening", { port: 1 });
    logger.child("gateway").warn("store unavailable", { runId: "r1" });
    logger.child("gateway").child("outbox").error("failed");
    expect(lines).toEqual([
      '2026-11-27T12:00:00.000Z info serve: listening {"port":1}\n',
      '2026-11-27T12:00:00.000Z warn gateway: store unavailable {"runId":"r1"}\n',
      "2026-11-27T12:00:00.000Z error gateway/outbox: failed\n",
    ]);
  });

  it("drops everything below the level, and everything at silent", () => {
    for (const level of LOG_LEVELS) {
      const { logger, lines } = capture(level);
      logger.debug("d");
      logger.info("i");
      logger.warn("w");
      logger.error("e");
      const shown = lines.map((line) => line.split(" ")[1]);
      expect(shown).toEqual(["debug", "info", "warn", "error"].slice(LOG_LEVELS.indexOf(level)));
    }
  });

  it("keeps a line whose fields JSON cannot hold (errors, BigInts, cycles)", () => {
    const { logger, lines } = capture("debug");
    const cyclic: Record<string, unknown> = { name: "loop" };
    cyclic.self = cyclic;
    logger.info("odd fields", { error: new Error("boom"), big: 2n });
    logger.info("cycle", { cyclic, n: 1 });
    expect(lines[0]).toBe('2026-11-27T12:00:00.000Z info serve: odd fields {"error":"boom","big":"2"}\n');
    expect(lines[1]).toBe(
      '2026-11-27T12:00:00.000Z info serve: cycle {"cyclic":"[object Object]","n":"1"}\n',
    );
    expect(lines.every((line) => line.endsWith("\n") && line.split("\n").length === 2)).toBe(true);
  });
});

describe("parseLogLevel", () => {
  it("takes the level names in any case, trimmed, and nothing else", () => {
    expect(parseLogLevel(" DEBUG ")).toBe("debug");
    expect(parseLogLevel("Silent")).toBe("silent");
    expect(parseLogLevel("verbose")).toBeUndefined();
    expect(parseLogLevel("")).toBeUndefined();
  });
});
