import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  type AccessDecision,
  checkSessionAccess,
  createAgentToAgentPolicy,
  resolveVisibility,
  type SessionAction,
  VISIBILITIES,
  type Visibility,
} from "./access.js";
import { compileGlob } from "./glob.js";
import { normalizeAgentId } from "./keys.js";

const RANK = { self: 0, tree: 1, agent: 2, all: 3 } as const;

describe("resolveVisibility (SPEC 7)", () => {
  it.each([
    [{}, "tree"],
    [{ visibility: "all" }, "all"],
    [{ visibility: "bogus" }, "tree"],
    [{ visibility: "all", sandboxed: true }, "tree"],
    [{ visibility: "agent", sandboxed: true, sandboxVisibility: "spawned" }, "tree"],
    // The reference widened `self` to `tree` under the clamp: the spec fixes that.
    [{ visibility: "self", sandboxed: true }, "self"],
    [{ visibility: "all", sandboxed: true, sandboxVisibility: "all" }, "all"],
    [{ visibility: "self", sandboxed: true, sandboxVisibility: "all" }, "self"],
    [{ visibility: "all", sandboxed: false }, "all"],
    // Config values are trimmed and case-insensitive, as in the reference.
    [{ visibility: "ALL" }, "all"],
    [{ visibility: "  Agent " }, "agent"],
    [{ visibility: "Self" }, "self"],
    [{ visibility: "ALL", sandboxed: true, sandboxVisibility: " ALL " }, "all"],
    [{ visibility: "ALL", sandboxed: true, sandboxVisibility: "Spawned" }, "tree"],
    [{ visibility: "" }, "tree"],
  ] as const)("%j → %s", (input, expected) => {
    expect(resolveVisibility(input)).toBe(expected);
  });

  it("the sandbox clamp never widens visibility", () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...VISIBILITIES, undefined),
        fc.constantFrom("spawned", "all", undefined, "x"),
        (visibility, sandboxVisibility) => {
          const unsandboxed = resolveVisibility({ visibility });
          const sandboxed = resolveVisibility({ visibility, sandboxed: true, sandboxVisibility });
          expect(RANK[sandboxed]).toBeLessThanOrEqual(RANK[unsandboxed]);
          expect(RANK[sandboxed]).toBeLessThanOrEqual(sandboxVisibility === "all" ? 3 : 1);
        },
      ),
    );
  });
});

describe("glob matching", () => {
  it.each([
    ["*", "anything", true],
    ["ops*", "OPS-team", true],
    ["*-bot", "build-bot", true],
    ["a*b*c", "aXXbYYc", true],
    ["a*b*c", "acb", false],
    ["a*a", "a", false],
    ["main", "Main", true],
    ["main", "mainx", false],
    ["*a*a*a*a*b", `${"a".repeat(5000)}`, false],
  ])("%j vs %j → %j", (pattern, value, expected) => {
    expect(compileGlob(pattern).test(value)).toBe(expected);
  });

  it("agrees with a regular-expression oracle", () => {
    const text = fc.stringMatching(/^[ab*]{0,8}$/);
    fc.assert(
      fc.property(text, fc.stringMatching(/^[ab]{0,10}$/), (pattern, value) => {
        const oracle = new RegExp(`^${pattern.replace(/\*/g, ".*")}$`, "i");
        // A blank pattern matches nothing (not even the empty string): allow lists fail closed.
        expect(compileGlob(pattern).test(value)).toBe(pattern !== "" && oracle.test(value));
      }),
      { numRuns: 3000 },
    );
  });
});

const blank = fc.stringMatching(/^[ \t\n\r\u00a0\u2003\ufeff]{0,6}$/);

describe("blank patterns (fail closed)", () => {
  it("a blank or whitespace-only glob never matches anything", () => {
    fc.assert(
      fc.property(blank, fc.oneof(fc.string(), blank), (pattern, value) => {
        expect(compileGlob(pattern).test(value)).toBe(false);
      }),
    );
  });

  it("an allow list of blank patterns allows no cross-agent pair", () => {
    const agent = fc.stringMatching(/^[a-z][a-z0-9-]{0,8}$/);
    fc.assert(
      fc.property(fc.array(blank, { minLength: 1, maxLength: 4 }), agent, agent, (allow, a, b) => {
        // Ids are normalised ("y-" and "y" are one agent), so compare them as the policy does.
        fc.pre(normalizeAgentId(a) !== normalizeAgentId(b));
        const policy = createAgentToAgentPolicy({ enabled: true, allow });
        expect(policy.isAllowed(a, b)).toBe(false);
        // The same agent is always allowed: that is not an agent-to-agent call.
        expect(policy.isAllowed(a, a)).toBe(true);
      }),
    );
  });

  it("adding a blank pattern to an allow list never widens it", () => {
    const agent = fc.constantFrom("main", "ops", "ops-eu", "research", "x");
    const pattern = fc.constantFrom("main", "ops*", "*-eu", "research", "*");
    fc.assert(
      fc.property(fc.array(pattern, { maxLength: 3 }), blank, agent, agent, (allow, extra, a, b) => {
        const before = createAgentToAgentPolicy({ enabled: true, allow }).isAllowed(a, b);
        const after = createAgentToAgentPolicy({ enabled: true, allow: [...allow, extra] }).isAllowed(a, b);
        if (allow.length > 0) expect(after).toBe(before);
        else expect(after).toBe(a === b);
      }),
    );
  });

  it('{ enabled: true, allow: [" "] } allows nothing across agents', () => {
    const policy = createAgentToAgentPolicy({ enabled: true, allow: [" "] });
    expect(policy.isAllowed("main", "ops")).toBe(false);
    expect(createAgentToAgentPolicy({ enabled: true, allow: [""] }).isAllowed("main", "ops")).toBe(false);
    expect(
      createAgentToAgentPolicy({ enabled: true, allow: [5 as never, null as never] }).isAllowed(
        "main",
        "ops",
      ),
    ).toBe(false);
    expect(
      checkSessionAccess({
        action: "send",
        requesterKey: "agent:main:main",
        targetKey: "agent:ops:main",
        visibility: "all",
        agentToAgent: { enabled: true, allow: ["  "] },
      }),
    ).toMatchObject({ allowed: false, code: "agent_to_agent_denied" });
  });
});

describe("createAgentToAgentPolicy", () => {
  it("is disabled by default but always allows the same agent", () => {
    const policy = createAgentToAgentPolicy();
    expect(policy.enabled).toBe(false);
    expect(policy.isAllowed("main", "ops")).toBe(false);
    expect(policy.isAllowed("Main", "main")).toBe(true);
  });

  it("allows any pair with an empty list, and only matching pairs otherwise", () => {
    expect(createAgentToAgentPolicy({ enabled: true }).isAllowed("main", "ops")).toBe(true);
    const policy = createAgentToAgentPolicy({ enabled: true, allow: ["main", "ops*"] });
    expect(policy.isAllowed("main", "ops-eu")).toBe(true);
    expect(policy.isAllowed("OPS", "main")).toBe(true);
    expect(policy.isAllowed("main", "research")).toBe(false);
    expect(policy.isAllowed("research", "main")).toBe(false);
  });
});

describe("checkSessionAccess (SPEC 7)", () => {
  const main = "agent:main:main";
  const child = "agent:main:subagent:c1";
  const group = "agent:main:discord:group:dev";
  const ops = "agent:ops:main";
  const a2a = { enabled: true, allow: ["main", "ops"] };

  const denied = (d: AccessDecision) => (d.allowed ? undefined : d.code);

  it.each([
    // action, visibility, target, spawnedBy, agentToAgent, expected code (undefined = allowed)
    ["history", "self", main, undefined, undefined, undefined],
    ["history", "self", child, main, undefined, "visibility_self"],
    ["history", "tree", child, main, undefined, undefined],
    ["history", "tree", child, "agent:main:other", undefined, "visibility_tree"],
    ["history", "tree", group, undefined, undefined, "visibility_tree"],
    ["history", "agent", group, undefined, undefined, undefined],
    ["history", "agent", ops, undefined, a2a, "visibility_agent"],
    ["history", "all", ops, undefined, undefined, "agent_to_agent_disabled"],
    ["history", "all", ops, undefined, { enabled: true, allow: ["main"] }, "agent_to_agent_denied"],
    ["history", "all", ops, undefined, a2a, undefined],
    ["list", "all", "agent:ops:discord:group:x", undefined, createAgentToAgentPolicy(a2a), undefined],
    ["send", "tree", main, undefined, undefined, "send_to_self"],
    ["send", "all", "::", undefined, undefined, "invalid_key"],
    ["send", "all", "global", undefined, undefined, "reserved_key"],
    ["send", "agent", "agent::x", undefined, undefined, "invalid_key"],
    ["send", "all", group, undefined, undefined, undefined],
  ] as const)(
    "%s with %s → %j (spawnedBy %j)",
    (action, visibility, targetKey, spawnedBy, agentToAgent, expected) => {
      const requesterKey = main;
      const decision = checkSessionAccess({
        action,
        requesterKey,
        targetKey,
        visibility,
        spawnedBy,
        agentToAgent,
      });
      expect(denied(decision)).toBe(expected);
    },
  );

  it("names the setting that would allow the access", () => {
    const cases: [Visibility, string, object | undefined, string][] = [
      ["self", group, undefined, "tools.sessions.visibility"],
      ["tree", group, undefined, "tools.sessions.visibility"],
      ["agent", ops, undefined, "tools.sessions.visibility"],
      ["all", ops, undefined, "tools.agentToAgent.enabled"],
      ["all", ops, { enabled: true, allow: ["x"] }, "tools.agentToAgent.allow"],
    ];
    for (const [visibility, targetKey, agentToAgent, setting] of cases) {
      const decision = checkSessionAccess({
        action: "history",
        requesterKey: main,
        targetKey,
        visibility,
        agentToAgent,
      });
      expect(decision.allowed).toBe(false);
      if (!decision.allowed) expect(decision.message).toContain(setting);
    }
  });

  it("spawn: sub-agents cannot spawn by default, cross-agent needs allowAgents", () => {
    const spawn = (requesterKey: string, targetKey: string, extra: object = {}) =>
      denied(checkSessionAccess({ action: "spawn", requesterKey, targetKey, visibility: "self", ...extra }));
    expect(spawn(main, "agent:main:subagent:new")).toBeUndefined();
    expect(spawn(child, "agent:main:subagent:new")).toBe("spawn_depth_exceeded");
    expect(spawn(child, "agent:main:subagent:new", { maxSpawnDepth: 2, requesterDepth: 1 })).toBeUndefined();
    expect(spawn(main, "agent:main:subagent:new", { maxSpawnDepth: 0 })).toBe("spawn_depth_exceeded");
    expect(spawn(main, "agent:ops:subagent:new")).toBe("spawn_agent_not_allowed");
    expect(spawn(main, "agent:ops:subagent:new", { allowAgents: ["OPS"] })).toBeUndefined();
    expect(spawn(main, "agent:ops:subagent:new", { allowAgents: ["*"] })).toBeUndefined();
    const decision = checkSessionAccess({
      action: "spawn",
      requesterKey: main,
      targetKey: "agent:ops:subagent:x",
      allowAgents: ["research"],
    });
    expect(decision).toMatchObject({ allowed: false, code: "spawn_agent_not_allowed" });
    if (!decision.allowed) {
      expect(decision.message).toContain("main, research");
      expect(decision.message).toContain("agents.list[main].subagents.allowAgents");
    }
  });

  it("for same-agent targets, self ⊆ tree ⊆ agent ⊆ all", () => {
    const segment = fc.stringMatching(/^[a-z0-9]{1,6}$/);
    const sameAgentKey = fc.oneof(
      fc.constant(main),
      segment.map((s) => `agent:main:subagent:${s}`),
      segment.map((s) => `agent:main:discord:group:${s}`),
      segment.map((s) => `agent:main:telegram:direct:${s}`),
    );
    const action = fc.constantFrom<SessionAction>("list", "history", "send");
    const spawnedBy = fc.option(fc.oneof(fc.constant(main), sameAgentKey), { nil: undefined });
    fc.assert(
      fc.property(action, sameAgentKey, spawnedBy, (act, targetKey, parent) => {
        const allowed = VISIBILITIES.map(
          (visibility) =>
            checkSessionAccess({ action: act, requesterKey: main, targetKey, visibility, spawnedBy: parent })
              .allowed,
        );
        for (let i = 1; i < allowed.length; i++) if (allowed[i - 1]) expect(allowed[i]).toBe(true);
      }),
      { numRuns: 2000 },
    );
  });

  it("never throws on any input", () => {
    fc.assert(
      fc.property(fc.anything(), fc.anything(), fc.anything(), (requesterKey, targetKey, visibility) => {
        checkSessionAccess({ action: "history", requesterKey, targetKey, visibility } as never);
      }),
    );
  });
});

describe("review findings", () => {
  it("denies cross-agent targets below visibility all, even for the requester's own children", () => {
    const decision = checkSessionAccess({
      action: "send",
      requesterKey: "agent:main:main",
      targetKey: "agent:ops:subagent:x",
      visibility: "tree",
      spawnedBy: "agent:main:main",
    });
    expect(decision).toMatchObject({ allowed: false, code: "visibility_tree" });
    if (!decision.allowed) expect(decision.message).toContain("tools.agentToAgent");
  });

  it("scopes bare keys to the requester's agent", () => {
    expect(
      checkSessionAccess({
        action: "send",
        requesterKey: "main",
        targetKey: "agent:main:main",
        visibility: "all",
      }),
    ).toMatchObject({
      code: "send_to_self",
    });
    expect(
      checkSessionAccess({
        action: "history",
        requesterKey: "main",
        targetKey: "agent:main:main",
        visibility: "self",
      }).allowed,
    ).toBe(true);
    expect(
      checkSessionAccess({
        action: "history",
        requesterKey: "agent:ops:main",
        targetKey: "subagent:c",
        visibility: "tree",
        spawnedBy: "agent:main:main",
      }),
    ).toMatchObject({ allowed: false, code: "visibility_tree" });
    expect(
      checkSessionAccess({
        action: "history",
        requesterKey: "agent:ops:main",
        targetKey: "subagent:c",
        visibility: "tree",
        spawnedBy: "agent:ops:main",
      }).allowed,
    ).toBe(true);
  });

  it("reports unprintable keys without throwing", () => {
    expect(
      checkSessionAccess({ action: "list", requesterKey: Object.create(null), targetKey: "x" } as never),
    ).toMatchObject({
      allowed: false,
      code: "invalid_key",
    });
  });

  it("sees in-place changes to an agent-to-agent config", () => {
    const agentToAgent: { enabled: boolean; allow: string[] } = { enabled: false, allow: [] };
    const check = () =>
      checkSessionAccess({
        action: "history",
        requesterKey: "agent:main:main",
        targetKey: "agent:ops:main",
        visibility: "all",
        agentToAgent,
      });
    expect(check()).toMatchObject({ code: "agent_to_agent_disabled" });
    agentToAgent.enabled = true;
    expect(check().allowed).toBe(true);
    agentToAgent.allow.push("main");
    expect(check()).toMatchObject({ code: "agent_to_agent_denied" });
  });

  it("reads the visibility it is given trimmed and case-insensitively", () => {
    const decision = checkSessionAccess({
      action: "history",
      requesterKey: "agent:main:main",
      targetKey: "agent:main:discord:group:dev",
      visibility: " AGENT " as Visibility,
    });
    expect(decision.allowed).toBe(true);
  });

  it("globs survive non-strings", () => {
    expect(compileGlob(undefined as never).test("x")).toBe(false);
    expect(compileGlob("a*").test(5 as never)).toBe(false);
  });
});
