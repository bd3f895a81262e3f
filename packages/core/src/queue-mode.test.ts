import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parseSessionsConfig } from "./config.js";
import { SessionsError } from "./errors.js";
import {
  normalizeQueueMode,
  parseQueueCommand,
  QUEUE_COMMAND_USAGE,
  QUEUE_MODES,
  resolveQueueMode,
} from "./queue-mode.js";

describe("parseQueueCommand", () => {
  it("reads each mode, reset and default, with a bot suffix and any case", () => {
    for (const mode of QUEUE_MODES) {
      expect(parseQueueCommand(`/queue ${mode}`)).toEqual({ mode });
      expect(parseQueueCommand(`  /QUEUE@my_bot   ${mode.toUpperCase()} `)).toEqual({ mode });
    }
    expect(parseQueueCommand("/queue reset")).toEqual({ mode: "reset" });
    expect(parseQueueCommand("/queue default")).toEqual({ mode: "reset" });
    expect(parseQueueCommand("/queue steer_backlog")).toEqual({ mode: "steer-backlog" });
  });

  it("answers usage for a missing or unknown mode, and null for anything that is not the command", () => {
    expect(parseQueueCommand("/queue")).toEqual({ mode: null });
    expect(parseQueueCommand("/queue later")).toEqual({ mode: null });
    expect(parseQueueCommand("/queue collect now")).toEqual({ mode: null });
    expect(parseQueueCommand("/queued collect")).toBeNull();
    expect(parseQueueCommand("please /queue collect")).toBeNull();
    expect(parseQueueCommand(42)).toBeNull();
    expect(QUEUE_COMMAND_USAGE).toContain("steer-backlog");
  });

  it("never throws, and a command's mode is always a mode, reset or null", () => {
    fc.assert(
      fc.property(fc.anything(), (value) => {
        const parsed = parseQueueCommand(value);
        if (parsed === null) return;
        expect(parsed.mode === null || parsed.mode === "reset" || QUEUE_MODES.includes(parsed.mode)).toBe(
          true,
        );
      }),
    );
  });

  it("is a command exactly when the text starts with /queue as a word, and reads any mode padded any way", () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...QUEUE_MODES),
        fc.stringMatching(/^[ \t\n]{0,3}$/),
        fc.stringMatching(/^[ \t\n]{1,3}$/),
        fc.boolean(),
        (mode, pad, gap, upper) => {
          const text = `${pad}/queue${gap}${upper ? mode.toUpperCase() : mode}${pad}`;
          expect(parseQueueCommand(text)).toEqual({ mode });
        },
      ),
    );
    fc.assert(
      fc.property(fc.string(), (text) => {
        fc.pre(!/^\s*\/queue(@[\w.-]+)?(\s|$)/i.test(text));
        expect(parseQueueCommand(text)).toBeNull();
      }),
    );
  });
});

describe("resolveQueueMode", () => {
  it("takes the session's, else the agent's, else the default's, else followup; invalid values are skipped", () => {
    expect(resolveQueueMode({})).toBe("followup");
    expect(resolveQueueMode({ defaults: "collect" })).toBe("collect");
    expect(resolveQueueMode({ agent: "steer", defaults: "collect" })).toBe("steer");
    expect(resolveQueueMode({ session: "reject", agent: "steer", defaults: "collect" })).toBe("reject");
    expect(resolveQueueMode({ session: "nonsense", agent: "interrupt" })).toBe("interrupt");
  });

  it("normalises idempotently", () => {
    fc.assert(
      fc.property(fc.string(), (text) => {
        const once = normalizeQueueMode(text);
        expect(normalizeQueueMode(once)).toBe(once);
      }),
    );
  });
});

describe("queueMode in config", () => {
  it("is read per agent and as the agents' default, trimmed and case-insensitive", () => {
    const config = parseSessionsConfig({
      agents: { defaults: { queueMode: " Collect " }, list: [{ id: "ops", queueMode: "reject" }] },
    });
    expect(config.agents.defaults.queueMode).toBe("collect");
    expect(config.agents.list[0]?.queueMode).toBe("reject");
  });

  it("is a config error naming the field when it is not a mode", () => {
    let error: unknown;
    try {
      parseSessionsConfig({ agents: { list: [{ id: "ops", queueMode: "later" }] } });
    } catch (e) {
      error = e;
    }
    expect(SessionsError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({ code: "invalid_config", field: "agents.list[0].queueMode" });
  });
});
