import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import type { GatewayMethodName } from "@sessions/core";
import { describe, expect, it } from "vitest";
import { eventViolations, payloadViolations } from "./client-schemas.js";
import { openClawSchemas } from "./openclaw-reference.js";

/**
 * What the real OpenClaw 2026.9.6 sent (recorded by apps/interop-openclaw/record-openclaw.mjs into
 * @sessions/testing's fixtures) against the schemas `@sessions/gateway-client` declares its payload types with.
 */
const answers = JSON.parse(
  readFileSync(
    join(
      dirname(createRequire(import.meta.url).resolve("@sessions/testing/package.json")),
      "fixtures/openclaw/2026.9.6/answers.json",
    ),
    "utf8",
  ),
) as {
  openclaw: string;
  results: Record<string, { ok: boolean; payload?: unknown }>;
  history: Record<string, { ok: boolean; payload?: unknown }>;
  events: { event: string }[];
};

/** The method each recorded call made (record-openclaw.mjs names them). */
function methodOf(name: string): GatewayMethodName | undefined {
  if (name.startsWith("list")) return "sessions.list";
  if (name.startsWith("patch")) return "sessions.patch";
  if (name.endsWith("Wait")) return "agent.wait";
  if (name.startsWith("send")) return "chat.send";
  if (name === "historyUnknown") return "chat.history";
  if (name === "resolve") return "sessions.resolve";
  if (name === "agentsList") return "agents.list";
  return undefined;
}

const recorded: [string, GatewayMethodName, unknown][] = [
  ...Object.entries(answers.results).flatMap(([name, r]): [string, GatewayMethodName, unknown][] => {
    const method = methodOf(name);
    return method === undefined || !r.ok ? [] : [[name, method, r.payload]];
  }),
  ...Object.entries(answers.history).map(([key, r]): [string, GatewayMethodName, unknown] => [
    `history ${key}`,
    "chat.history",
    r.payload,
  ]),
];

describe(`what OpenClaw ${answers.openclaw} sent, against our client's payload schemas`, () => {
  it("covers every method of the scenario", () => {
    expect(answers.openclaw).toBe("2026.9.6");
    expect(new Set(recorded.map(([, method]) => method))).toEqual(
      new Set([
        "sessions.list",
        "sessions.patch",
        "agent.wait",
        "chat.send",
        "chat.history",
        "sessions.resolve",
        "agents.list",
      ]),
    );
  });

  it.each(recorded)("%s (%s) parses with the client's schema", (_name, method, payload) => {
    expect(payloadViolations(method, payload)).toEqual([]);
  });

  it("sends rows whose visibility is OpenClaw's sharing mode, which the client's row type accepts", () => {
    const list = answers.results.list?.payload as { sessions: { visibility?: string }[] } | undefined;
    const rows = list?.sessions ?? [];
    expect(rows.map((r) => r.visibility)).toContain("shared");
    // The published schema agrees with what the server sent.
    const validate = openClawSchemas()("SessionRow");
    for (const row of rows) expect(validate(row), JSON.stringify(validate.errors)).toBe(true);
  });

  it("sends event frames the client's EventFrame accepts (health and presence carry stateVersion)", () => {
    expect(answers.events.length).toBeGreaterThan(0);
    for (const frame of answers.events) expect(eventViolations(frame), frame.event).toEqual([]);
  });
});
