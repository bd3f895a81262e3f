import type { GatewayRow, RunTreeNodePayload } from "@sessions/core";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  authorOf,
  fromHistory,
  mergeTail,
  partsOf,
  type ShownMessage,
  textOf,
} from "../ui/src/lib/messages.js";
import { budgetLine, buildRunTree, type TreeNode } from "../ui/src/lib/run-tree.js";
import { buildTree, describeRow, NO_FILTERS, type SessionNode } from "../ui/src/lib/sessions.js";
import { webchatKey } from "../ui/src/lib/webchat-key.js";

const row = (key: string, extra: Partial<GatewayRow> = {}): GatewayRow => ({
  key,
  kind: "direct",
  updatedAt: 1000,
  sessionId: key,
  ...extra,
});

function flatten(nodes: readonly SessionNode[]): SessionNode[] {
  return nodes.flatMap((n) => [n, ...flatten(n.children)]);
}

describe("message content", () => {
  it("reads a string, content parts, and OpenClaw's { role, content } final message alike", () => {
    expect(textOf("hi")).toBe("hi");
    expect(
      textOf([
        { type: "text", text: "a" },
        { type: "text", text: "b" },
      ]),
    ).toBe("a\nb");
    expect(textOf({ role: "assistant", content: [{ type: "text", text: "done" }] })).toBe("done");
    expect(
      partsOf([{ type: "tool-call", toolCallId: "c1", toolName: "sessions_send", input: { x: 1 } }]),
    ).toEqual([{ type: "tool-call", toolName: "sessions_send", toolCallId: "c1", input: { x: 1 } }]);
    expect(partsOf([{ type: "tool-result", toolName: "sessions_send", output: { status: "ok" } }])).toEqual([
      { type: "tool-result", toolName: "sessions_send", output: { status: "ok" } },
    ]);
    expect(partsOf(undefined)).toEqual([]);
  });

  it("never throws on whatever a gateway sends", () => {
    fc.assert(
      fc.property(fc.anything(), fc.nat(), (value, i) => {
        partsOf(value);
        textOf(value);
        const shown = fromHistory(value, i);
        expect(typeof authorOf(shown)).toBe("string");
      }),
    );
  });

  it("takes OpenClaw's timestamp and __openclaw.seq, and names inter-session authors by their source", () => {
    const m = fromHistory({ role: "user", content: "x", timestamp: 5, __openclaw: { seq: 7 } }, 0);
    expect(m).toMatchObject({ id: "s7", seq: 7, ts: 5 });
    const routed = fromHistory(
      {
        role: "user",
        content: "do it",
        ts: 1,
        seq: 2,
        provenance: {
          kind: "inter_session",
          sourceSessionKey: "agent:main:main",
          sourceTool: "sessions_send",
        },
      },
      0,
    );
    expect(authorOf(routed)).toBe("from session agent:main:main · sessions_send");
    expect(
      authorOf({
        ...routed,
        provenance: { kind: "inter_session", sourceTool: "sessions_spawn", sourceSessionKey: "c" },
      }),
    ).toBe("sub-agent result · c");
    expect(authorOf({ role: "user" })).toBe("user");
  });

  it("merges pages by seq: sorted, each once, pending messages kept until their run is stored", () => {
    const msg = (seq: number): ShownMessage => ({
      id: `s${seq}`,
      seq,
      role: "user",
      parts: [],
      runId: `r${seq}`,
    });
    fc.assert(
      fc.property(fc.array(fc.nat(50)), fc.array(fc.nat(50)), (a, b) => {
        const merged = mergeTail(a.map(msg), b.map(msg));
        const seqs = merged.map((m) => m.seq);
        expect(seqs).toEqual([...new Set([...a, ...b])].sort((x, y) => x - y));
      }),
    );
    const pending: ShownMessage = { id: "local", role: "user", parts: [], pending: true, runId: "r9" };
    expect(mergeTail([pending], [msg(1)]).map((m) => m.id)).toEqual(["s1", "local"]);
    expect(mergeTail([pending], [msg(1), msg(9)]).map((m) => m.id)).toEqual(["s1", "s9"]);
  });
});

describe("sessions tree", () => {
  it("nests children under the session that spawned them and derives kind, agent and channel from keys", () => {
    const infos = [
      row("agent:main:main", { updatedAt: 5, deliveryContext: { channel: "discord", to: "user:1" } }),
      row("agent:research:subagent:1", { spawnedBy: "agent:main:main", updatedAt: 4 }),
      row("agent:ops:discord:group:ops", {
        kind: "group",
        chatType: "group",
        channel: "discord",
        updatedAt: 3,
      }),
      row("agent:main:cron:nightly", { updatedAt: 2 }),
    ].map((r) => describeRow(r));
    const tree = buildTree(infos, NO_FILTERS, 10);
    expect(tree.map((n) => [n.row.key, n.kind, n.agentId, n.channel])).toEqual([
      ["agent:main:main", "main", "main", "discord"],
      ["agent:ops:discord:group:ops", "group", "ops", "discord"],
      ["agent:main:cron:nightly", "cron", "main", "internal"],
    ]);
    expect(tree[0]?.children.map((c) => c.row.key)).toEqual(["agent:research:subagent:1"]);
    const filtered = buildTree(infos, { ...NO_FILTERS, agent: "research" }, 10);
    expect(flatten(filtered).map((n) => [n.row.key, n.match])).toEqual([
      ["agent:main:main", false],
      ["agent:research:subagent:1", true],
    ]);
    expect(
      buildTree(infos, { ...NO_FILTERS, activity: "running" }, 10, new Set(["agent:main:cron:nightly"])).map(
        (n) => n.row.key,
      ),
    ).toEqual(["agent:main:cron:nightly"]);
  });

  it("filters by activity: a run under way, or updated within 5 minutes, an hour, a day", () => {
    const now = 10 * 86_400_000;
    const ages = { fresh: 60_000, tenMinutes: 600_000, twoHours: 7_200_000, twoDays: 172_800_000 };
    const infos = Object.entries(ages).map(([name, age]) =>
      describeRow(row(`agent:main:cron:${name}`, { updatedAt: now - age })),
    );
    const shown = (activity: string, running = new Set<string>()) =>
      flatten(buildTree(infos, { ...NO_FILTERS, activity }, now, running))
        .map((n) => n.row.key.split(":")[3])
        .sort();
    expect(shown("any")).toEqual(["fresh", "tenMinutes", "twoDays", "twoHours"]);
    expect(shown("5m")).toEqual(["fresh"]);
    expect(shown("1h")).toEqual(["fresh", "tenMinutes"]);
    expect(shown("24h")).toEqual(["fresh", "tenMinutes", "twoHours"]);
    expect(shown("running", new Set(["agent:main:cron:twoDays"]))).toEqual(["twoDays"]);
  });

  it("shows every matching row exactly once, with its ancestors, whatever the spawnedBy graph (cycles too)", () => {
    const keys = Array.from({ length: 8 }, (_, i) => `agent:main:subagent:${i}`);
    fc.assert(
      fc.property(
        fc.array(fc.option(fc.nat(9), { nil: undefined }), { minLength: 8, maxLength: 8 }),
        fc.array(fc.boolean(), { minLength: 8, maxLength: 8 }),
        (parents, labelled) => {
          const infos = keys.map((key, i) => {
            const parent = parents[i];
            return describeRow(
              row(key, {
                updatedAt: i,
                ...(parent === undefined ? {} : { spawnedBy: `agent:main:subagent:${parent}` }),
                ...(labelled[i] ? { label: "needle" } : {}),
              }),
            );
          });
          const all = flatten(buildTree(infos, NO_FILTERS, 100)).map((n) => n.row.key);
          expect([...all].sort()).toEqual([...keys].sort());
          const shown = flatten(buildTree(infos, { ...NO_FILTERS, search: "needle" }, 100));
          const matched = shown.filter((n) => n.match).map((n) => n.row.key);
          expect(matched.sort()).toEqual(keys.filter((_, i) => labelled[i]).sort());
          expect(new Set(shown.map((n) => n.row.key)).size).toBe(shown.length);
        },
      ),
    );
  });
});

describe("web chat keys (the key model, SPEC 1.4)", () => {
  it("a visitor is a direct peer of channel webchat: dmScope decides the session", () => {
    const base = { agentId: "main", visitor: "web-abc123", mainKey: "main" };
    expect(webchatKey({ ...base, dmScope: "main" })).toBe("agent:main:main");
    expect(webchatKey({ ...base, dmScope: "per-peer" })).toBe("agent:main:direct:web-abc123");
    expect(webchatKey({ ...base, dmScope: "per-channel-peer" })).toBe("agent:main:webchat:direct:web-abc123");
    expect(webchatKey({ ...base, dmScope: "per-account-channel-peer" })).toBe(
      "agent:main:webchat:default:direct:web-abc123",
    );
    expect(webchatKey({ ...base, agentId: "Ops Bot", dmScope: "per-peer" })).toBe(
      "agent:ops-bot:direct:web-abc123",
    );
  });
});

describe("run trees", () => {
  const treeRun = (runId: string, parentRunId: string | undefined, tokens: number): RunTreeNodePayload => ({
    runId,
    ...(parentRunId === undefined ? {} : { parentRunId }),
    sessionKey: `agent:main:${runId}`,
    agentId: "main",
    kind: "chat",
    status: "ok",
    createdAt: 1,
    usage: { inputTokens: tokens, outputTokens: 1, costUsd: tokens / 1000 },
    deliveries: [],
  });
  const all = (nodes: readonly TreeNode[]): TreeNode[] => nodes.flatMap((n) => [n, ...all(n.children)]);

  it("puts every run once under its parent and rolls totals up, for any list of runs", () => {
    // Each run's parent is any run of the list (cycles too), one not in it, or none.
    const lists = fc
      .array(fc.tuple(fc.option(fc.nat(30), { nil: undefined }), fc.nat(500)), { maxLength: 30 })
      .map((specs) =>
        specs.map(([parent, tokens], i) =>
          treeRun(`r${i}`, parent === undefined ? undefined : `r${parent}`, tokens),
        ),
      );
    fc.assert(
      fc.property(lists, (runs) => {
        const roots = buildRunTree(runs);
        const shown = all(roots);
        expect(shown.map((n) => n.run.runId).sort()).toEqual(runs.map((r) => r.runId).sort());
        for (const node of shown) {
          const below = all(node.children);
          expect(node.subtree.runs).toBe(1 + below.length);
          expect(node.subtree.inputTokens).toBe(
            [node, ...below].reduce((sum, n) => sum + (n.run.usage?.inputTokens ?? 0), 0),
          );
        }
        const total = roots.reduce((sum, r) => sum + r.subtree.runs, 0);
        expect(total).toBe(runs.length);
      }),
    );
  });

  it("nests a sessions_send's follow-ups under it, and a missing parent makes a root", () => {
    const roots = buildRunTree([
      treeRun("root", undefined, 100),
      treeRun("send", "root", 50),
      treeRun("turn", "send", 10),
      treeRun("orphan", "hidden", 7),
    ]);
    expect(roots.map((r) => r.run.runId)).toEqual(["root", "orphan"]);
    expect(roots[0]?.subtree).toEqual({ runs: 3, inputTokens: 160, outputTokens: 3, costUsd: 0.16 });
    expect(roots[0]?.children[0]?.children.map((c) => c.run.runId)).toEqual(["turn"]);
  });
});

describe("a run tree's budget", () => {
  it("shows each limit the budget has as spent of limit and what is left", () => {
    expect(
      budgetLine({
        limits: { runs: 5, costUsd: 0.5, deadlineAt: Date.UTC(2026, 0, 1) },
        spent: { runs: 3, tokens: 900, costUsd: 0.125 },
        left: { runs: 2, costUsd: 0.375, seconds: 40 },
      }),
    ).toBe(
      "runs 3 of 5 (2 left) · cost $0.125 of $0.5 ($0.375 left) · deadline 2026-01-01T00:00:00.000Z (40 s left)",
    );
    expect(
      budgetLine({
        limits: { tokens: 100 },
        spent: { runs: 1, tokens: 150, costUsd: 0 },
        left: { tokens: 0 },
      }),
    ).toBe("tokens 150 of 100 (0 left)");
  });
});
