import type { Visibility } from "@sessions/core";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import type { GatewayOptions } from "../gateway.js";
import type { ScriptedAgent } from "../runner/scripted.js";
import { entry } from "../store/contract-records.js";
import { cleanupDirs, type Harness, harness, STORE_KINDS } from "../test-kit.js";

afterAll(cleanupDirs);

const MAIN = "agent:main:main";
const CHILD = "agent:main:subagent:kid";
const DEV = "agent:main:chat:group:dev";
const DEV_CHILD = "agent:main:subagent:devkid";
const OPS = "agent:ops:main";
const OPS_ROOM = "agent:ops:chat:group:room";

type Rows = {
  count: number;
  sessions: { key: string; match?: { seq: number; role: string; snippet: string } }[];
};

/** Sessions of two agents, a child of main and a child of #dev, each with "zebra" in its transcript. */
async function seed(h: Harness): Promise<void> {
  const sessions: [string, string | undefined][] = [
    [MAIN, undefined],
    [CHILD, MAIN],
    [DEV, undefined],
    [DEV_CHILD, DEV],
    [OPS, undefined],
    [OPS_ROOM, undefined],
  ];
  for (const [sessionKey, spawnedBy] of sessions) {
    const { runId } = await h.gateway.agent({
      sessionKey,
      message: `a zebra crossed ${sessionKey.split(":").pop()}`,
      idempotencyKey: `seed-${sessionKey}`,
      ...(spawnedBy === undefined ? {} : { spawnedBy }),
    });
    await h.gateway.agentWait({ runId, timeoutMs: 60_000 });
  }
  // A reserved key is never listed, nor found (written behind the gateway's back: it refuses such keys).
  await h.store.putEntry(entry("agent:main:global", 1));
  await h.store.appendMessage("agent:main:global", { role: "user", content: "zebra", ts: 1 });
}

const config = (visibility: Visibility, agentToAgent?: { enabled: boolean; allow?: string[] }) =>
  ({
    config: { tools: { sessions: { visibility }, ...(agentToAgent ? { agentToAgent } : {}) } },
  }) as Partial<GatewayOptions>;

describe.each(STORE_KINDS)("sessions_list with a query (%s store)", (kind) => {
  let h: Harness;
  afterEach(async () => {
    await h?.close();
  });

  const listed = async (requester: string, params: Record<string, unknown> = {}) =>
    ((await h.gateway.callTool(requester, "sessions_list", { limit: 50, ...params })) as Rows).sessions
      // An agent sees its own main session as `main`.
      .map((s) => (s.key === "main" ? MAIN : s.key))
      .sort();

  const cases: [string, Partial<GatewayOptions>, string[]][] = [
    ["self", config("self"), [MAIN]],
    ["tree", config("tree"), [CHILD, MAIN]],
    ["agent", config("agent"), [CHILD, DEV, DEV_CHILD, MAIN]],
    ["all, agent-to-agent off", config("all"), [CHILD, DEV, DEV_CHILD, MAIN]],
    [
      "all, agent-to-agent for any agent",
      config("all", { enabled: true }),
      [CHILD, DEV, DEV_CHILD, MAIN, OPS, OPS_ROOM],
    ],
    [
      "all, agent-to-agent by pattern",
      config("all", { enabled: true, allow: ["ma*", "o*"] }),
      [CHILD, DEV, DEV_CHILD, MAIN, OPS, OPS_ROOM],
    ],
    [
      "all, agent-to-agent for others only",
      config("all", { enabled: true, allow: ["o*"] }),
      [CHILD, DEV, DEV_CHILD, MAIN],
    ],
  ];

  it.each(cases)(
    "visibility %s: finds exactly the sessions sessions_list shows",
    async (_, options, expected) => {
      h = await harness(kind, {}, options);
      await seed(h);
      const found = await listed(MAIN, { query: "zebra" });
      expect(found).toEqual([...expected].sort());
      expect(found).toEqual(await listed(MAIN));
      // Over the wire's sessions.search as the requester: the same, and what it may not see is not counted either.
      const wire = (await h.gateway.sessions.search({ query: "zebra", requesterKey: "main", limit: 1 })) as {
        hasMore: boolean;
        count: number;
      };
      expect(wire).toMatchObject({ count: 1, hasMore: expected.length > 1 });
      const all = await h.gateway.sessions.search({ query: "zebra", requesterKey: "main", limit: 100 });
      expect(all.results.map((r) => r.key).sort()).toEqual([...expected].sort());
    },
  );

  it("ranks the matching sessions and shows each one's best message with the words marked", async () => {
    h = await harness(kind, {}, config("agent"));
    await seed(h);
    await h.gateway.sessions.patch({ key: DEV, label: "Zebra watch" });
    const result = (await h.gateway.callTool(MAIN, "sessions_list", { query: "ZEBRA crossed" })) as Rows;
    expect(result.count).toBe(4);
    expect(result.sessions[0]?.key).toBe(DEV);
    const main = result.sessions.find((s) => s.key === "main");
    expect(main?.match).toEqual({ seq: 1, role: "user", snippet: "a «zebra» «crossed» main" });
    expect(await listed(MAIN, { query: "giraffe" })).toEqual([]);
    expect(await listed(MAIN, { query: "zebra", kinds: ["group"] })).toEqual([DEV]);
    const rows = (await h.gateway.callTool(MAIN, "sessions_list", {
      query: "zebra",
      limit: 1,
      messageLimit: 1,
    })) as {
      sessions: { messages?: unknown[] }[];
    };
    expect(rows.sessions).toHaveLength(1);
    expect(rows.sessions[0]?.messages).toHaveLength(1);
  });

  it("keeps a sandboxed requester to its tree, whatever the configured visibility", async () => {
    h = await harness(kind, {}, config("all", { enabled: true }));
    await seed(h);
    const sandboxed = await h.gateway.sessions.search({
      query: "zebra",
      requesterKey: "main",
      sandboxed: true,
    });
    expect(sandboxed.results.map((r) => r.key).sort()).toEqual([CHILD, MAIN].sort());
    const tools = await h.gateway.tools(DEV, { sandboxed: true });
    const list = tools.find((t) => t.name === "sessions_list");
    const rows = (await list?.execute({ query: "zebra" })) as Rows;
    expect(rows.sessions.map((s) => s.key).sort()).toEqual([DEV_CHILD, DEV].sort());
  });
});

describe.each(STORE_KINDS)("sessions.search for operators (%s store)", (kind) => {
  let h: Harness;
  afterEach(async () => {
    await h?.close();
  });

  it("searches every session, filters by agent and kind, pages by offset, and shows list rows", async () => {
    const echo: ScriptedAgent = (turn) => `echo: ${turn.text}`;
    h = await harness(kind, { main: echo, ops: echo });
    await seed(h);
    const everything = await h.gateway.sessions.search({ query: "zebra", limit: 100, messagesPerSession: 2 });
    // Operators see every session, the reserved one too.
    expect(everything.results).toHaveLength(7);
    expect(everything.results.find((r) => r.key === MAIN)).toMatchObject({
      matchedMessages: 2,
      messages: [
        { role: "user", seq: 1 },
        { role: "assistant", seq: 2 },
      ],
      session: { key: MAIN, kind: "direct", sessionId: expect.any(String) },
    });
    const ops = await h.gateway.sessions.search({ query: "zebra", agentId: "OPS" });
    expect(ops.results.map((r) => r.key).sort()).toEqual([OPS, OPS_ROOM].sort());
    const groups = await h.gateway.sessions.search({ query: "zebra", kinds: ["group"] });
    expect(groups.results.map((r) => r.key).sort()).toEqual([DEV, OPS_ROOM].sort());
    const first = await h.gateway.sessions.search({ query: "zebra", limit: 4 });
    expect(first).toMatchObject({ count: 4, hasMore: true, nextOffset: 4 });
    const second = await h.gateway.sessions.search({ query: "zebra", limit: 4, offset: 4 });
    expect(second).toMatchObject({ count: 3, hasMore: false, nextOffset: null });
    expect([...first.results, ...second.results].map((r) => r.key)).toEqual(
      everything.results.map((r) => r.key),
    );
    // An agent filter narrows a requester's view, never widens it.
    const narrowed = await h.gateway.sessions.search({
      query: "zebra",
      requesterKey: "main",
      agentId: "ops",
    });
    expect(narrowed.results).toEqual([]);
  });

  it("refuses bad params naming the field", async () => {
    h = await harness(kind, {});
    for (const [params, field] of [
      [{}, "query"],
      [{ query: 3 }, "query"],
      [{ query: "x".repeat(201) }, "query"],
      [{ query: "x", limit: 0 }, "limit"],
      [{ query: "x", offset: -1 }, "offset"],
      [{ query: "x", messagesPerSession: 11 }, "messagesPerSession"],
      [{ query: "x", requesterKey: "global" }, "requesterKey"],
    ] as const) {
      await expect(h.gateway.call("sessions.search", params)).rejects.toMatchObject({
        code: "invalid_params",
        field,
      });
    }
  });
});
