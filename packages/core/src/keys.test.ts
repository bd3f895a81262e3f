import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { SessionsError } from "./errors.js";
import {
  buildPeerSessionKey,
  buildSubagentSessionKey,
  channelOf,
  chatTypeOf,
  isReservedKey,
  isSubagentKey,
  looksLikeSessionId,
  normalizeAccountId,
  normalizeAgentId,
  normalizeSessionKey,
  parseSessionKey,
  sessionKindOf,
  threadOf,
  toRequestKey,
  toStoreKey,
} from "./keys.js";

describe("normalizeAgentId / normalizeAccountId", () => {
  it.each([
    ["main", "main"],
    ["Foo Bar", "foo-bar"],
    ["../../etc/passwd", "etc-passwd"],
    ["  Research  ", "research"],
    ["ops_team-2", "ops_team-2"],
    ["__x", "x"],
    ["---", "main"],
    ["", "main"],
    [undefined, "main"],
    [42, "main"],
    ["a".repeat(100), "a".repeat(64)],
    [`${"a".repeat(63)}!b`, "a".repeat(63)],
  ])("normalizeAgentId(%j) → %j", (input, expected) => {
    expect(normalizeAgentId(input)).toBe(expected);
  });

  it("uses `default` as the account fallback", () => {
    expect(normalizeAccountId("")).toBe("default");
    expect(normalizeAccountId(undefined)).toBe("default");
    expect(normalizeAccountId("Work Bot")).toBe("work-bot");
  });

  it("always yields an id matching the spec's pattern", () => {
    fc.assert(
      fc.property(fc.string(), (s) => {
        expect(normalizeAgentId(s)).toMatch(/^[a-z0-9][a-z0-9_-]{0,63}$/);
      }),
    );
  });
});

describe("normalizeSessionKey", () => {
  it.each([
    ["main", "main"],
    ["  MAIN  ", "main"],
    ["Agent:Main:Main", "agent:main:main"],
    ["agent:Foo Bar:main", "agent:foo-bar:main"],
    ["agent:main:Discord:Group:DEV", "agent:main:discord:group:dev"],
    ["agent:main:dm:Alice", "agent:main:direct:alice"],
    ["agent:main:telegram:dm:42", "agent:main:telegram:direct:42"],
    ["agent:main:telegram:work:DM:42", "agent:main:telegram:work:direct:42"],
    ["discord:group:dev", "discord:group:dev"],
    ["cron:dm:x", "cron:dm:x"],
    // Opaque ids keep their case; markers still fold.
    ["agent:main:signal:GROUP:AbC+/=", "agent:main:signal:group:AbC+/="],
    ["agent:main:Matrix:Channel:!RoOm:Example.ORG", "agent:main:matrix:channel:!RoOm:Example.ORG"],
    ["agent:main:signal:group:AbC:THREAD:T1", "agent:main:signal:group:AbC:thread:t1"],
  ])("%j → %j", (input, expected) => {
    expect(normalizeSessionKey(input)).toBe(expected);
  });

  it.each([
    ["agent::x"],
    ["agent:main:"],
    [":agent:main:x"],
    ["agent:main"],
    ["a:: b"],
    ["a: :b"],
    [""],
    ["   "],
    ["x".repeat(2000)],
  ])("%j is invalid", (input) => {
    expect(normalizeSessionKey(input)).toBeNull();
    expect(parseSessionKey(input)).toBeNull();
  });

  it.each([[null], [undefined], [42], [{}], [[]]])("non-string %j is null", (input) => {
    expect(normalizeSessionKey(input)).toBeNull();
  });

  it("never throws and is idempotent on any string", () => {
    fc.assert(
      fc.property(fc.string(), (s) => {
        const once = normalizeSessionKey(s);
        if (once !== null) expect(normalizeSessionKey(once)).toBe(once);
      }),
      { numRuns: 2000 },
    );
  });

  it("is idempotent on key-shaped strings", () => {
    const segment = fc.stringMatching(/^[A-Za-z0-9_@.+=!-]{1,8}$/);
    const word = fc.constantFrom(
      "agent",
      "main",
      "dm",
      "direct",
      "group",
      "channel",
      "thread",
      "topic",
      "signal",
      "matrix",
      "cron",
      "subagent",
      "node",
    );
    const keyish = fc
      .array(fc.oneof(segment, word), { minLength: 1, maxLength: 8 })
      .map((parts) => parts.join(":"));
    fc.assert(
      fc.property(keyish, (s) => {
        const once = normalizeSessionKey(s);
        if (once !== null) expect(normalizeSessionKey(once)).toBe(once);
      }),
      { numRuns: 3000 },
    );
  });
});

describe("parseSessionKey", () => {
  it("parses a thread under a Discord group", () => {
    expect(parseSessionKey("agent:main:discord:group:Dev:thread:123")).toEqual({
      key: "agent:main:discord:group:dev:thread:123",
      agentId: "main",
      rest: "discord:group:dev:thread:123",
      kind: "group",
      chatType: "group",
      channel: "discord",
      peerId: "dev",
      threadId: "123",
      parentKey: "agent:main:discord:group:dev",
      subagent: false,
    });
  });

  it("parses per-account direct keys", () => {
    expect(parseSessionKey("agent:ops:telegram:work:dm:42")).toMatchObject({
      agentId: "ops",
      kind: "other",
      chatType: "direct",
      channel: "telegram",
      accountId: "work",
      peerId: "42",
    });
  });

  it("marks sub-agents", () => {
    const parsed = parseSessionKey("agent:research:subagent:5b0c3f7e-2a51-4a43-8b8b-6b2c1f9c9d11");
    expect(parsed).toMatchObject({ agentId: "research", kind: "other", subagent: true });
  });

  it("maps channel aliases (tg → telegram)", () => {
    expect(parseSessionKey("agent:main:tg:group:-100")?.channel).toBe("telegram");
  });

  it("never throws on any input", () => {
    fc.assert(
      fc.property(fc.anything(), (value) => {
        parseSessionKey(value);
      }),
    );
    fc.assert(
      fc.property(fc.string({ unit: "grapheme", maxLength: 300 }), (s) => {
        const parsed = parseSessionKey(s);
        if (parsed !== null) expect(parseSessionKey(parsed.key)).toEqual(parsed);
      }),
    );
  });
});

describe("sessionKindOf (SPEC 1.3)", () => {
  it.each([
    // The reference classified the next two as `other`: the spec fixes that.
    ["agent:main:main", "main"],
    ["agent:main:cron:nightly", "cron"],
    ["main", "main"],
    ["cron:nightly", "cron"],
    ["agent:main:cron:nightly:run:abc", "cron"],
    ["hook:7c9e6679-7425-40de-944b-e07fc1f90ae7", "hook"],
    ["agent:main:hook:deploy", "hook"],
    ["node-abc", "node"],
    ["node:abc", "node"],
    ["agent:main:discord:group:dev", "group"],
    ["agent:main:discord:channel:general", "group"],
    ["agent:main:discord:channel:general:thread:9", "group"],
    ["agent:main:telegram:group:-100:topic:42", "group"],
    ["discord:group:dev", "group"],
    ["group:dev", "group"],
    ["agent:main:whatsapp:group:120363@g.us", "group"],
    ["whatsapp:120363@g.us", "group"],
    ["agent:main:subagent:abc", "other"],
    ["agent:main:direct:alice", "other"],
    ["agent:main:telegram:direct:42", "other"],
    ["agent:main:main:thread:1", "other"],
    ["custom-key", "other"],
    ["agent:main:::", "other"],
    // A2A contexts: a caller's with one of our agents, and ours with a remote agent.
    ["agent:main:a2a:direct:ctx-1", "a2a"],
    ["agent:weather:a2a:main", "a2a"],
    ["agent:weather:a2a:trip:thread:2", "a2a"],
    ["agent:main:a2a", "other"],
  ])("%j is %j", (key, kind) => {
    expect(sessionKindOf(key)).toBe(kind);
  });

  it("honours a custom main key", () => {
    expect(sessionKindOf("agent:main:home", { mainKey: "home" })).toBe("main");
    expect(sessionKindOf("agent:main:home")).toBe("other");
  });

  it("classifies by entry chatType when the key says nothing", () => {
    expect(sessionKindOf("agent:main:custom", { chatType: "group" })).toBe("group");
    expect(sessionKindOf("cron:x", { chatType: "group" })).toBe("cron");
  });
});

describe("chatTypeOf", () => {
  it.each([
    ["agent:main:discord:group:dev", "group"],
    ["agent:main:discord:channel:news", "channel"],
    ["agent:main:dm:bob", "direct"],
    ["agent:main:discord:direct:bob", "direct"],
    ["group:abc", "group"],
    ["channel:abc", "group"],
    ["agent:main:whatsapp:4915@g.us", "group"],
    ["agent:main:main", "direct"],
    ["cron:x", "unknown"],
    ["agent:main:subagent:x", "unknown"],
    ["not a key::", "unknown"],
  ])("%j → %j", (key, expected) => {
    expect(chatTypeOf(key)).toBe(expected);
  });
});

describe("channelOf", () => {
  it.each([
    [{ key: "cron:nightly", channel: "discord" }, "internal"],
    [{ key: "agent:main:hook:x" }, "internal"],
    [{ key: "node-a" }, "internal"],
    [{ key: "agent:main:discord:group:dev", channel: "Discord" }, "discord"],
    [{ key: "agent:main:main", deliveryContext: { channel: "tg" }, lastChannel: "discord" }, "telegram"],
    [{ key: "agent:main:main", lastChannel: "WhatsApp" }, "whatsapp"],
    [{ key: "agent:main:slack:group:c1" }, "slack"],
    [{ key: "discord:group:dev" }, "discord"],
    [{ key: "agent:main:main" }, "unknown"],
    [{ key: "::" }, "unknown"],
  ])("%j → %j", (input, expected) => {
    expect(channelOf(input)).toBe(expected);
  });

  it("uses adapter-provided aliases", () => {
    expect(channelOf({ key: "agent:main:main", lastChannel: "dc" }, { dc: "discord" })).toBe("discord");
  });

  it.each([["__proto__"], ["constructor"], ["toString"]])("treats %j as a plain channel id", (channel) => {
    expect(channelOf({ key: "agent:main:main", lastChannel: channel })).toBe(channel.toLowerCase());
    expect(buildPeerSessionKey({ channel, peerKind: "group", peerId: "x" })).toBe(
      `agent:main:${channel.toLowerCase()}:group:x`,
    );
  });
});

describe("threadOf", () => {
  it.each([
    [
      "agent:main:discord:group:dev:thread:123",
      { parentKey: "agent:main:discord:group:dev", threadId: "123", marker: "thread" },
    ],
    [
      "agent:main:telegram:group:-100:TOPIC:42",
      { parentKey: "agent:main:telegram:group:-100", threadId: "42", marker: "topic" },
    ],
    [
      "agent:main:slack:channel:c1:thread:1710000000.123456",
      { parentKey: "agent:main:slack:channel:c1", threadId: "1710000000.123456", marker: "thread" },
    ],
    [
      "agent:main:a:thread:1:thread:2",
      { parentKey: "agent:main:a:thread:1", threadId: "2", marker: "thread" },
    ],
  ])("%j", (key, expected) => {
    expect(threadOf(key)).toEqual(expected);
  });

  it.each([["agent:main:main"], ["thread:1"], ["agent:main:thread"], ["agent:thread:main"], [""]])(
    "%j has no thread",
    (key) => {
      expect(threadOf(key)).toBeNull();
    },
  );
});

describe("reserved keys, sub-agents, session ids", () => {
  it.each([
    ["global", true],
    ["UNKNOWN", true],
    ["agent:main:global", true],
    ["main", false],
    ["global:x", false],
  ])("isReservedKey(%j) → %j", (key, expected) => {
    expect(isReservedKey(key)).toBe(expected);
  });

  it.each([
    ["agent:main:subagent:abc", true],
    ["subagent:abc", true],
    ["agent:main:main", false],
    ["agent:main:subagent", false],
  ])("isSubagentKey(%j) → %j", (key, expected) => {
    expect(isSubagentKey(key)).toBe(expected);
  });

  it.each([
    ["5b0c3f7e-2a51-4a43-8b8b-6b2c1f9c9d11", true],
    [" 5B0C3F7E-2A51-4A43-8B8B-6B2C1F9C9D11 ", true],
    ["5b0c3f7e2a514a438b8b6b2c1f9c9d11", false],
    ["agent:main:main", false],
    [42, false],
  ])("looksLikeSessionId(%j) → %j", (input, expected) => {
    expect(looksLikeSessionId(input)).toBe(expected);
  });

  it("builds sub-agent keys with a fresh uuid or a given id", () => {
    const key = buildSubagentSessionKey("Research");
    expect(key).toMatch(/^agent:research:subagent:[0-9a-f-]{36}$/);
    expect(looksLikeSessionId(key.split(":").pop())).toBe(true);
    expect(buildSubagentSessionKey("ops", "Run-1")).toBe("agent:ops:subagent:run-1");
    expect(buildSubagentSessionKey(undefined, "bad:id")).toMatch(/^agent:main:subagent:[0-9a-f-]{36}$/);
    expect(buildSubagentSessionKey("main")).not.toBe(buildSubagentSessionKey("main"));
  });
});

describe("toStoreKey / toRequestKey", () => {
  it.each([
    [{ agentId: "main", key: "main" }, "agent:main:main"],
    [{ agentId: "ops", key: "MAIN" }, "agent:ops:main"],
    [{ agentId: "ops", key: "" }, "agent:ops:main"],
    [{ agentId: "ops", key: undefined }, "agent:ops:main"],
    [{ agentId: "ops", key: "main", mainKey: "Home" }, "agent:ops:home"],
    [{ agentId: "main", key: "discord:group:dev" }, "agent:main:discord:group:dev"],
    [{ agentId: "main", key: "subagent:abc" }, "agent:main:subagent:abc"],
    [{ agentId: "main", key: "agent:Ops:discord:group:dev" }, "agent:ops:discord:group:dev"],
    [{ agentId: "Research Team", key: "cron:nightly" }, "agent:research-team:cron:nightly"],
    [{ agentId: "main", key: "global" }, "global"],
  ])("toStoreKey(%j) → %j", (input, expected) => {
    expect(toStoreKey(input)).toBe(expected);
  });

  it("throws a typed error naming the field for invalid keys", () => {
    const error = (() => {
      try {
        toStoreKey({ agentId: "main", key: "agent::x" });
      } catch (e) {
        return e;
      }
    })();
    expect(SessionsError.isInstance(error)).toBe(true);
    expect(error).toMatchObject({ code: "invalid_key", field: "key" });
  });

  it.each([
    ["agent:main:main", "main"],
    ["agent:ops:discord:group:dev", "discord:group:dev"],
    ["agent:main:global", "agent:main:global"],
    ["agent:main:agent:x", "agent:main:agent:x"],
    ["cron:x", "cron:x"],
    ["  bad::key ", "bad::key"],
  ])("toRequestKey(%j) → %j", (input, expected) => {
    expect(toRequestKey(input)).toBe(expected);
  });

  it("toStoreKey then parseSessionKey round-trips, and the request key scopes back", () => {
    const segment = fc.stringMatching(/^[A-Za-z0-9_@.+=!-]{1,8}$/);
    const word = fc.constantFrom(
      "agent",
      "main",
      "dm",
      "group",
      "channel",
      "thread",
      "topic",
      "signal",
      "matrix",
      "cron",
      "subagent",
      "global",
    );
    const key = fc
      .array(fc.oneof(segment, word), { minLength: 1, maxLength: 7 })
      .map((parts) => parts.join(":"));
    fc.assert(
      fc.property(fc.string({ maxLength: 12 }), key, (agentId, k) => {
        let store: string;
        try {
          store = toStoreKey({ agentId, key: k });
        } catch (e) {
          expect(SessionsError.isInstance(e)).toBe(true);
          expect(normalizeSessionKey(k)).toBeNull();
          return;
        }
        const parsed = parseSessionKey(store);
        expect(parsed?.key).toBe(store);
        expect(toStoreKey({ agentId: parsed?.agentId ?? agentId, key: toRequestKey(store) })).toBe(store);
      }),
      { numRuns: 3000 },
    );
  });
});

describe("buildPeerSessionKey (SPEC 1.4)", () => {
  const base = { agentId: "main", channel: "telegram", accountId: "Work", peerId: "42" } as const;

  it.each([
    [{ ...base, peerKind: "direct" }, "agent:main:main"],
    [{ ...base, peerKind: "direct", dmScope: "main", mainKey: "home" }, "agent:main:home"],
    [{ ...base, peerKind: "direct", dmScope: "per-peer" }, "agent:main:direct:42"],
    [{ ...base, peerKind: "direct", dmScope: "per-channel-peer" }, "agent:main:telegram:direct:42"],
    [
      { ...base, peerKind: "direct", dmScope: "per-account-channel-peer" },
      "agent:main:telegram:work:direct:42",
    ],
    [{ ...base, peerKind: "group", peerId: "-100123" }, "agent:main:telegram:group:-100123"],
    [{ ...base, channel: "Discord", peerKind: "channel", peerId: "9001" }, "agent:main:discord:channel:9001"],
    [{ ...base, peerKind: "group", peerId: "  " }, "agent:main:telegram:group:unknown"],
    [{ ...base, channel: "", peerKind: "group", peerId: "x" }, "agent:main:unknown:group:x"],
    [
      { ...base, channel: "tg", peerKind: "direct", dmScope: "per-channel-peer", peerId: 7 },
      "agent:main:telegram:direct:7",
    ],
    [{ ...base, channel: "signal", peerKind: "group", peerId: "AbC=" }, "agent:main:signal:group:AbC="],
    // Enum options are trimmed and case-insensitive, like config values.
    [{ ...base, peerKind: "direct", dmScope: " Per-Peer " as "per-peer" }, "agent:main:direct:42"],
    [{ ...base, peerKind: "Group" as "group", peerId: "-1" }, "agent:main:telegram:group:-1"],
  ] as const)("%j → %j", (options, expected) => {
    expect(buildPeerSessionKey(options)).toBe(expected);
  });

  it("links identities across channels (not under dmScope main)", () => {
    const identityLinks = { Alice: ["telegram:123", "discord:9"] };
    const tg = buildPeerSessionKey({
      channel: "telegram",
      peerKind: "direct",
      peerId: "123",
      dmScope: "per-peer",
      identityLinks,
    });
    const dc = buildPeerSessionKey({
      channel: "discord",
      peerKind: "direct",
      peerId: "9",
      dmScope: "per-peer",
      identityLinks,
    });
    expect(tg).toBe("agent:main:direct:alice");
    expect(dc).toBe(tg);
    expect(
      buildPeerSessionKey({
        channel: "discord",
        peerKind: "direct",
        peerId: "123",
        dmScope: "per-peer",
        identityLinks,
      }),
    ).toBe("agent:main:direct:123");
    expect(
      buildPeerSessionKey({ channel: "telegram", peerKind: "direct", peerId: "123", identityLinks }),
    ).toBe("agent:main:main");
    const raw = { bob: ["555"] };
    expect(
      buildPeerSessionKey({
        channel: "signal",
        peerKind: "direct",
        peerId: "555",
        dmScope: "per-channel-peer",
        identityLinks: raw,
      }),
    ).toBe("agent:main:signal:direct:bob");
  });

  it("always yields a valid key", () => {
    fc.assert(
      fc.property(
        fc.string(),
        fc.string(),
        fc.constantFrom("direct", "group", "channel"),
        fc.oneof(fc.string(), fc.integer()),
        fc.constantFrom("main", "per-peer", "per-channel-peer", "per-account-channel-peer"),
        fc.oneof(fc.string(), fc.constantFrom("group", "channel", "dm", "direct", "thread", "Work")),
        (agentId, channel, peerKind, peerId, dmScope, accountId) => {
          const key = buildPeerSessionKey({ agentId, channel, peerKind, peerId, dmScope, accountId });
          expect(normalizeSessionKey(key)).toBe(key);
          const parsed = parseSessionKey(key);
          if (peerKind === "direct" && dmScope !== "main") {
            expect(parsed?.chatType).toBe("direct");
            if (dmScope === "per-account-channel-peer") expect(parsed?.accountId).toBeDefined();
          }
          if (peerKind !== "direct") expect(parsed?.kind).toBe("group");
        },
      ),
    );
  });
});

describe("review findings", () => {
  it("trims '-' at both ends even when the id already matches the pattern", () => {
    expect(normalizeAgentId("a-")).toBe("a");
    expect(normalizeAgentId("ops--")).toBe("ops");
  });

  it("keeps case only for Signal group ids and Matrix room ids", () => {
    expect(normalizeSessionKey("agent:main:signal:channel:AbC")).toBe("agent:main:signal:channel:abc");
    expect(normalizeSessionKey("agent:main:matrix:group:!AbC:X.org")).toBe(
      "agent:main:matrix:group:!AbC:X.org",
    );
  });

  it("ranks an entry's group chatType above the direct-key rule", () => {
    expect(sessionKindOf("agent:main:telegram:direct:42", { chatType: "group" })).toBe("group");
    expect(sessionKindOf("agent:main:main", { chatType: "group" })).toBe("main");
  });

  it.each([["group"], ["channel"], ["dm"], ["direct"]])(
    "keeps per-account DM keys unambiguous for account %j",
    (accountId) => {
      const key = buildPeerSessionKey({
        channel: "slack",
        peerKind: "direct",
        peerId: "U1",
        dmScope: "per-account-channel-peer",
        accountId,
      });
      expect(parseSessionKey(key)).toMatchObject({
        chatType: "direct",
        kind: "other",
        peerId: "u1",
        channel: "slack",
      });
      expect(parseSessionKey(key)?.accountId).toMatch(new RegExp(`^${accountId}`));
    },
  );

  it("does not collide per-account keys of different accounts", () => {
    const a = buildPeerSessionKey({
      channel: "slack",
      peerKind: "direct",
      peerId: "U1",
      dmScope: "per-account-channel-peer",
      accountId: "dm",
    });
    const b = buildPeerSessionKey({
      channel: "slack",
      peerKind: "direct",
      peerId: "U1",
      dmScope: "per-account-channel-peer",
      accountId: "direct",
    });
    expect(a).not.toBe(b);
  });

  it("matches identity links written with a channel alias", () => {
    const identityLinks = { alice: ["tg:123"] };
    expect(
      buildPeerSessionKey({
        channel: "telegram",
        peerKind: "direct",
        peerId: "123",
        dmScope: "per-peer",
        identityLinks,
      }),
    ).toBe("agent:main:direct:alice");
  });

  it.each([[undefined], [null], ["x"], [42]])("key builders survive %j instead of throwing", (bad) => {
    expect(toStoreKey(bad as never)).toBe("agent:main:main");
    expect(buildPeerSessionKey(bad as never)).toBe("agent:main:main");
    expect(channelOf(bad as never)).toBe("unknown");
  });
});
