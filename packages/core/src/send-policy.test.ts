import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  describeSendPolicyDecision,
  explainSendPolicy,
  parseSendCommand,
  resolveSendPolicy,
  type SendPolicyConfig,
  type SendPolicyRule,
} from "./send-policy.js";

const denyDiscordGroups: SendPolicyConfig = {
  rules: [{ match: { channel: "discord", chatType: "group" }, action: "deny" }],
  default: "allow",
};

describe("resolveSendPolicy (SPEC 8.2)", () => {
  it.each([
    // The reference example: deny Discord groups, allow the rest.
    [{ policy: denyDiscordGroups, key: "agent:main:discord:group:dev" }, "deny"],
    [{ policy: denyDiscordGroups, key: "agent:main:discord:channel:news" }, "allow"],
    [{ policy: denyDiscordGroups, key: "agent:main:telegram:group:-1" }, "allow"],
    [{ policy: denyDiscordGroups, key: "discord:group:dev" }, "deny"],
    [{ policy: denyDiscordGroups, key: "agent:main:discord:group:dev:thread:5" }, "deny"],
    // Channel and chat type from the call win over the key.
    [{ policy: denyDiscordGroups, key: "agent:main:main", channel: "Discord", chatType: "group" }, "deny"],
    [{ policy: denyDiscordGroups, key: "agent:main:discord:group:dev", channel: "telegram" }, "allow"],
    // …then from the entry.
    [
      {
        policy: denyDiscordGroups,
        key: "agent:main:custom",
        entry: { channel: "discord", chatType: "group" },
      },
      "deny",
    ],
    [
      {
        policy: denyDiscordGroups,
        key: "agent:main:custom",
        entry: { deliveryContext: { channel: "discord" }, chatType: "group" },
      },
      "deny",
    ],
    [
      {
        policy: denyDiscordGroups,
        key: "agent:main:custom",
        entry: { lastChannel: "discord", chatType: "group" },
      },
      "deny",
    ],
    // A per-session override wins over rules, in both directions.
    [
      { policy: denyDiscordGroups, key: "agent:main:discord:group:dev", entry: { sendPolicy: "allow" } },
      "allow",
    ],
    [{ policy: { default: "allow" }, key: "agent:main:main", entry: { sendPolicy: "deny" } }, "deny"],
    [{ policy: denyDiscordGroups, key: "agent:main:discord:group:dev", entry: { sendPolicy: null } }, "deny"],
    // Defaults.
    [{ key: "agent:main:main" }, "allow"],
    [{ policy: { default: "deny" }, key: "agent:main:main" }, "deny"],
    [
      {
        policy: { rules: [{ action: "allow", match: { chatType: "dm" } }], default: "deny" },
        key: "agent:main:dm:bob",
      },
      "allow",
    ],
  ] as const)("%j → %s", (input, expected) => {
    expect(resolveSendPolicy(input)).toBe(expected);
  });

  it("matches keyPrefix on the key and on the key without its agent prefix; rawKeyPrefix on the full key only", () => {
    const keyPrefix: SendPolicyConfig = { rules: [{ match: { keyPrefix: "cron:" }, action: "deny" }] };
    expect(resolveSendPolicy({ policy: keyPrefix, key: "agent:main:cron:nightly" })).toBe("deny");
    expect(resolveSendPolicy({ policy: keyPrefix, key: "cron:nightly" })).toBe("deny");
    const raw: SendPolicyConfig = { rules: [{ match: { rawKeyPrefix: "cron:" }, action: "deny" }] };
    expect(resolveSendPolicy({ policy: raw, key: "agent:main:cron:nightly" })).toBe("allow");
    expect(resolveSendPolicy({ policy: raw, key: "CRON:nightly" })).toBe("deny");
    const rawAgent: SendPolicyConfig = { rules: [{ match: { rawKeyPrefix: "AGENT:OPS:" }, action: "deny" }] };
    expect(resolveSendPolicy({ policy: rawAgent, key: "agent:ops:main" })).toBe("deny");
    expect(resolveSendPolicy({ policy: rawAgent, key: "agent:main:main" })).toBe("allow");
  });

  it("deny wins over allow regardless of order, and the explanation names the rule", () => {
    const policy: SendPolicyConfig = {
      rules: [
        { match: { channel: "discord" }, action: "allow" },
        { match: { chatType: "group" }, action: "deny" },
      ],
    };
    expect(explainSendPolicy({ policy, key: "agent:main:discord:group:x" })).toEqual({
      decision: "deny",
      source: "rule",
      ruleIndex: 1,
    });
    expect(explainSendPolicy({ policy, key: "agent:main:discord:direct:x" })).toEqual({
      decision: "allow",
      source: "rule",
      ruleIndex: 0,
    });
    expect(explainSendPolicy({ policy, key: "agent:main:main" })).toEqual({
      decision: "allow",
      source: "default",
    });
    expect(explainSendPolicy({ key: "x", entry: { sendPolicy: "deny" } })).toEqual({
      decision: "deny",
      source: "override",
    });
  });

  it("describes decisions naming the setting", () => {
    expect(describeSendPolicyDecision({ decision: "deny", source: "rule", ruleIndex: 2 })).toContain(
      "session.sendPolicy.rules[2]",
    );
    expect(describeSendPolicyDecision({ decision: "deny", source: "default" })).toContain(
      "session.sendPolicy.default",
    );
    expect(describeSendPolicyDecision({ decision: "deny", source: "override" })).toContain("/send");
  });

  it("ignores malformed rules instead of crashing", () => {
    const policy = {
      rules: [null, { action: "maybe" }, { match: "x", action: "deny" }],
    } as unknown as SendPolicyConfig;
    expect(explainSendPolicy({ policy, key: "agent:main:main" })).toEqual({
      decision: "deny",
      source: "rule",
      ruleIndex: 2,
    });
    expect(resolveSendPolicy({ policy: "nope" as unknown as SendPolicyConfig, key: "::" })).toBe("allow");
  });

  const channel = fc.constantFrom("discord", "telegram", "slack", "whatsapp", undefined);
  const chatType = fc.constantFrom("direct", "dm", "group", "channel", undefined);
  const rule: fc.Arbitrary<SendPolicyRule> = fc.record({
    match: fc.record(
      { channel, chatType, keyPrefix: fc.constantFrom("cron:", "agent:main:", "discord:", undefined) },
      { requiredKeys: [] },
    ),
    action: fc.constantFrom("allow", "deny"),
  }) as fc.Arbitrary<SendPolicyRule>;
  const key = fc.constantFrom(
    "agent:main:main",
    "agent:main:discord:group:dev",
    "agent:ops:telegram:direct:42",
    "cron:nightly",
    "agent:main:slack:channel:c1:thread:1",
    "agent:main:whatsapp:group:1@g.us",
  );

  it("adding a deny rule never turns a deny into an allow", () => {
    fc.assert(
      fc.property(
        fc.array(rule, { maxLength: 8 }),
        rule,
        fc.nat(8),
        fc.constantFrom("allow", "deny"),
        key,
        channel,
        (rules, extra, at, fallback, k, ch) => {
          const before = resolveSendPolicy({ policy: { rules, default: fallback }, key: k, channel: ch });
          const withDeny = [...rules];
          withDeny.splice(Math.min(at, rules.length), 0, { ...extra, action: "deny" });
          const after = resolveSendPolicy({
            policy: { rules: withDeny, default: fallback },
            key: k,
            channel: ch,
          });
          if (before === "deny") expect(after).toBe("deny");
        },
      ),
      { numRuns: 2000 },
    );
  });

  it("rule order never changes the decision", () => {
    fc.assert(
      fc.property(fc.array(rule, { maxLength: 8 }), key, (rules, k) => {
        const forward = resolveSendPolicy({ policy: { rules }, key: k });
        const backward = resolveSendPolicy({ policy: { rules: [...rules].reverse() }, key: k });
        expect(backward).toBe(forward);
      }),
    );
  });
});

describe("enum values in a policy", () => {
  it("are trimmed and case-insensitive: actions, default and the per-session override", () => {
    const key = "agent:main:discord:group:dev";
    const rules = [{ match: { channel: "discord" }, action: " DENY " as "deny" }];
    expect(explainSendPolicy({ policy: { rules }, key })).toEqual({
      decision: "deny",
      source: "rule",
      ruleIndex: 0,
    });
    expect(resolveSendPolicy({ policy: { default: "Deny" as "deny" }, key })).toBe("deny");
    expect(resolveSendPolicy({ entry: { sendPolicy: " ALLOW" as "allow" }, policy: { rules }, key })).toBe(
      "allow",
    );
    expect(resolveSendPolicy({ policy: { rules: [{ action: "perhaps" as "deny" }] }, key })).toBe("allow");
  });
});

describe("parseSendCommand", () => {
  it.each([
    ["/send on", { mode: "allow" }],
    ["/send off", { mode: "deny" }],
    ["/send inherit", { mode: "inherit" }],
    ["  /SEND   ON  ", { mode: "allow" }],
    ["/send@my_bot off", { mode: "deny" }],
    ["/send", { mode: null }],
    ["/send maybe", { mode: null }],
    ["/send on please", { mode: null }],
    ["/send constructor", { mode: null }],
    ["/sendon", null],
    ["please /send on", null],
    ["hello", null],
    ["", null],
  ] as const)("%j → %j", (text, expected) => {
    expect(parseSendCommand(text)).toEqual(expected);
  });

  it("never throws", () => {
    fc.assert(fc.property(fc.anything(), (v) => void parseSendCommand(v)));
    fc.assert(
      fc.property(fc.string(), (s) => {
        const parsed = parseSendCommand(`/send ${s}`);
        expect(parsed).not.toBeNull();
      }),
    );
  });
});

describe("review findings", () => {
  it("sees rules pushed into, and defaults changed on, a policy object in place", () => {
    const policy: { rules: SendPolicyRule[]; default?: "allow" | "deny" } = { rules: [] };
    const key = "agent:main:discord:group:dev";
    expect(resolveSendPolicy({ policy, key })).toBe("allow");
    policy.rules.push({ match: { channel: "discord" }, action: "deny" });
    expect(resolveSendPolicy({ policy, key })).toBe("deny");
    policy.rules = [];
    policy.default = "deny";
    expect(resolveSendPolicy({ policy, key })).toBe("deny");
  });

  it("matches rawKeyPrefix and keyPrefix against the key as given and as normalised", () => {
    const raw: SendPolicyConfig = { rules: [{ match: { rawKeyPrefix: "agent:main:dm:" }, action: "deny" }] };
    expect(resolveSendPolicy({ policy: raw, key: "agent:main:dm:bob" })).toBe("deny");
    expect(resolveSendPolicy({ policy: raw, key: "agent:main:direct:bob" })).toBe("allow");
    const canonical: SendPolicyConfig = { rules: [{ match: { keyPrefix: "direct:" }, action: "deny" }] };
    expect(resolveSendPolicy({ policy: canonical, key: "agent:main:dm:bob" })).toBe("deny");
  });

  it("a present but unusable match field matches nothing", () => {
    for (const match of [{ channel: 5 }, { channel: "" }, { chatType: "  " }, { keyPrefix: null }]) {
      const policy = { rules: [{ match, action: "deny" }] } as unknown as SendPolicyConfig;
      expect(resolveSendPolicy({ policy, key: "agent:main:telegram:group:-1" })).toBe("allow");
    }
  });
});
