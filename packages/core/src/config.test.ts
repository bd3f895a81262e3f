import { describe, expect, it } from "vitest";
import { defaultAgentId, findAgentConfig, parseSessionsConfig, resolveThreadBindings } from "./config.js";
import { SessionsError } from "./errors.js";
import { findRemoteAgent } from "./remote-agents.js";

function configError(input: unknown): SessionsError {
  try {
    parseSessionsConfig(input);
  } catch (e) {
    if (SessionsError.isInstance(e)) return e;
    throw e;
  }
  throw new Error("expected parseSessionsConfig to throw");
}

describe("parseSessionsConfig", () => {
  it("fills every default the spec names", () => {
    const config = parseSessionsConfig();
    expect(config.session).toEqual({
      scope: "per-sender",
      mainKey: "main",
      dmScope: "main",
      identityLinks: {},
      sendPolicy: { rules: [], default: "allow" },
      agentToAgent: { maxPingPongTurns: 5, maxHops: 5 },
      threadBindings: { enabled: true, idleHours: 24, maxAgeHours: 0 },
    });
    expect(config.tools.sessions.visibility).toBe("tree");
    expect(config.tools.agentToAgent).toEqual({ enabled: false, allow: [], maxBroadcastTargets: 20 });
    expect(config.tools.subagents.tools.deny).toEqual([
      "sessions_list",
      "sessions_history",
      "sessions_send",
      "sessions_spawn",
      "agents_list",
    ]);
    expect(config.agents.defaults.subagents).toEqual({
      runTimeoutSeconds: 0,
      archiveAfterMinutes: 60,
      maxSpawnDepth: 1,
      maxChildrenPerAgent: 5,
      maxConcurrent: 8,
    });
    expect(config.agents.defaults.sandbox.sessionToolsVisibility).toBe("spawned");
    expect(config.agents.list).toEqual([]);
  });

  it("keeps given values and normalises agent ids", () => {
    const config = parseSessionsConfig({
      session: {
        sendPolicy: { rules: [{ match: { channel: "discord", chatType: "group" }, action: "deny" }] },
        agentToAgent: { maxPingPongTurns: 2.7 },
      },
      tools: { sessions: { visibility: "all" }, agentToAgent: { enabled: true, allow: ["main", "ops*"] } },
      agents: {
        list: [{ id: "Main" }, { id: "Research Team", name: "Research", subagents: { allowAgents: ["*"] } }],
      },
    });
    expect(config.session.sendPolicy.rules).toEqual([
      { match: { channel: "discord", chatType: "group" }, action: "deny" },
    ]);
    expect(config.session.agentToAgent.maxPingPongTurns).toBe(2);
    expect(config.agents.list.map((a) => a.id)).toEqual(["main", "research-team"]);
    expect(findAgentConfig(config, "RESEARCH TEAM")?.subagents.allowAgents).toEqual(["*"]);
    expect(findAgentConfig(config, "ops")).toBeUndefined();
    expect(defaultAgentId(config)).toBe("main");
  });

  it("reads every enum value trimmed and case-insensitively, as the reference does", () => {
    const config = parseSessionsConfig({
      session: {
        scope: " Global ",
        dmScope: "PER-PEER",
        sendPolicy: { rules: [{ match: { chatType: " DM " }, action: "Deny" }], default: " DENY" },
      },
      tools: { sessions: { visibility: "ALL" } },
      agents: { defaults: { sandbox: { sessionToolsVisibility: "All " } } },
    });
    expect(config.session.scope).toBe("global");
    expect(config.session.dmScope).toBe("per-peer");
    expect(config.session.sendPolicy).toEqual({
      rules: [{ match: { chatType: "dm" }, action: "deny" }],
      default: "deny",
    });
    expect(config.tools.sessions.visibility).toBe("all");
    expect(config.agents.defaults.sandbox.sessionToolsVisibility).toBe("all");
  });

  it.each([
    [{ tools: { sessions: { visibility: "everyone" } } }, "tools.sessions.visibility"],
    [{ tools: { sessions: { visibility: 3 } } }, "tools.sessions.visibility"],
    [{ tools: { agentToAgent: { enabled: true, allow: [" "] } } }, "tools.agentToAgent.allow[0]"],
    [
      { session: { sendPolicy: { rules: [{ match: {}, action: "maybe" }] } } },
      "session.sendPolicy.rules[0].action",
    ],
    [
      { agents: { defaults: { subagents: { archiveAfterMinutes: -1 } } } },
      "agents.defaults.subagents.archiveAfterMinutes",
    ],
    [
      { agents: { defaults: { subagents: { maxChildrenPerAgent: 1.5 } } } },
      "agents.defaults.subagents.maxChildrenPerAgent",
    ],
    [{ agents: { list: [{ id: "a" }, { id: "A" }] } }, "agents.list[1].id"],
    [{ session: { mainKey: "a:b" } }, "session.mainKey"],
    [{ session: { agentToAgent: { maxHops: 0 } } }, "session.agentToAgent.maxHops"],
    [{ agents: { list: [{ id: "a", maxHops: 1.5 }] } }, "agents.list[0].maxHops"],
    [{ sessoin: {} }, ""],
    ["not an object", ""],
  ])("%j fails naming %j", (input, field) => {
    const error = configError(input);
    expect(error.code).toBe("invalid_config");
    if (field !== "") {
      expect(error.field).toBe(field);
      expect(error.message).toContain(field);
    }
  });

  it("merges thread-binding overrides: session, then channel, then account", () => {
    const config = parseSessionsConfig({
      session: { threadBindings: { idleHours: 12 } },
      channels: {
        discord: {
          threadBindings: { maxAgeHours: 48 },
          accounts: { work: { threadBindings: { enabled: false } } },
        },
      },
    });
    expect(resolveThreadBindings(config)).toEqual({ enabled: true, idleHours: 12, maxAgeHours: 0 });
    expect(resolveThreadBindings(config, "Discord")).toEqual({
      enabled: true,
      idleHours: 12,
      maxAgeHours: 48,
    });
    expect(resolveThreadBindings(config, "discord", "work")).toEqual({
      enabled: false,
      idleHours: 12,
      maxAgeHours: 48,
    });
    // Keys and ids match the way ids are normalised.
    const mixed = parseSessionsConfig({
      channels: { Discord: { accounts: { "Work Bot": { threadBindings: { enabled: false } } } } },
    });
    expect(resolveThreadBindings(mixed, "discord", "work-bot").enabled).toBe(false);
    expect(resolveThreadBindings(mixed, "DISCORD", "Work Bot").enabled).toBe(false);
    expect(resolveThreadBindings(mixed, "discord", "other").enabled).toBe(true);
  });
});

describe("agents.remotes", () => {
  const remote = { id: "Weather Bot", url: "https://agents.example.com/weather/" };

  it("reads remote agents: ids normalised, found by id", () => {
    const config = parseSessionsConfig({
      agents: { remotes: [{ ...remote, auth: { tokenEnv: "WEATHER_TOKEN" } }] },
    });
    expect(findRemoteAgent(config, "weather-bot")).toEqual({
      id: "weather-bot",
      url: "https://agents.example.com/weather/",
      auth: { tokenEnv: "WEATHER_TOKEN" },
    });
    expect(findRemoteAgent(config, "main")).toBeUndefined();
    expect(parseSessionsConfig().agents.remotes).toEqual([]);
  });

  it.each([
    [{ remotes: [{ ...remote, url: "ftp://x" }] }, "agents.remotes[0].url"],
    [{ remotes: [{ ...remote, url: "agents.example.com" }] }, "agents.remotes[0].url"],
    [{ remotes: [{ ...remote, auth: {} }] }, "agents.remotes[0].auth"],
    [{ remotes: [{ ...remote, auth: { token: "a", tokenEnv: "B" } }] }, "agents.remotes[0].auth"],
    [{ remotes: [remote, { ...remote, id: "weather-bot" }] }, "agents.remotes[1].id"],
    [{ list: [{ id: "weather-bot" }], remotes: [remote] }, "agents.remotes[0].id"],
  ])("refuses %j naming %s", (agents, field) => {
    const error = configError({ agents });
    expect(error.code).toBe("invalid_config");
    expect(error.field).toBe(field);
  });
});
