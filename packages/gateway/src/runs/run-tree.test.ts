import { afterAll, afterEach, describe, expect, it } from "vitest";
import type { RunTreeNode } from "../gateway.js";
import type { ScriptedAgent } from "../runner/scripted.js";
import {
  cleanupDirs,
  eventually,
  type Harness,
  harness,
  STORE_KINDS,
  seedTreeSessions,
  TREE_OPS,
  treeMessage,
} from "../test-kit.js";

afterAll(cleanupDirs);

const MAIN = "agent:main:main";
const OPS = TREE_OPS;

/**
 * The main session's agent answers a user by sending to #ops and spawning a sub-agent; #ops replies, two
 * reply-back turns follow, #ops announces; the sub-agent's result is announced back.
 */
const agent: ScriptedAgent = async (turn) => {
  if (turn.kind === "ping_pong") return turn.sessionKey === OPS ? "ops, turn 2" : "main, turn 1";
  if (turn.kind === "announce") return "Deploy approved";
  if (turn.kind === "subagent") return "Result: three papers";
  if (turn.kind === "subagent_announce") return "Result: three papers\nNotes:\n- none";
  if (turn.sessionKey === OPS) return turn.kind === "inter_session" ? "round one" : "ok";
  if (turn.text !== "go") return "hello";
  await turn.callTool("sessions_send", { sessionKey: OPS, message: "deploy?", timeoutSeconds: 0 });
  await turn.callTool("sessions_spawn", { task: "research" });
  return "on it";
};

const config = {
  tools: { sessions: { visibility: "agent" as const } },
  session: { agentToAgent: { maxPingPongTurns: 2 } },
};

describe.each(STORE_KINDS)("runs.tree on the %s store", (kind) => {
  let h: Harness;
  afterEach(async () => {
    await h?.close();
  });

  /** Sets up #ops and the main DM, then the user's "go"; resolves once the whole tree has delivered. */
  async function grow() {
    h = await harness(kind, { main: agent }, { config });
    const { runIds: others } = await seedTreeSessions(h);
    const go = await h.gateway.receive(treeMessage("alice", "go", { messageId: "m-go" }));
    const rootRunId = go.runId as string;
    await eventually(async () => {
      const tree = await h.gateway.runs.tree({ runId: rootRunId });
      expect(tree.runs).toHaveLength(7);
      expect(tree.runs.every((run) => run.status === "ok")).toBe(true);
      const kinds = tree.runs.flatMap((run) => run.deliveries.map((d) => `${d.kind}:${d.status}`)).sort();
      expect(kinds).toEqual(["announce:delivered", "reply:delivered", "subagent_announce:delivered"]);
    }, "the tree to finish and deliver");
    return { rootRunId, others };
  }

  const byKind = (runs: RunTreeNode[], kind: string) => runs.filter((run) => run.kind === kind);

  it("returns the whole tree from any of its runs: causes, parents, sessions, usage and deliveries", async () => {
    const { rootRunId, others } = await grow();
    const tree = await h.gateway.runs.tree({ runId: rootRunId });
    expect(tree).toMatchObject({ rootRunId, truncated: false });
    const [root] = tree.runs;
    expect(root).toMatchObject({
      runId: rootRunId,
      sessionKey: MAIN,
      kind: "chat",
      cause: { kind: "inbound", channel: "chat", messageId: "m-go" },
      deliveries: [{ kind: "reply", status: "delivered", text: "on it" }],
    });
    expect(root?.parentRunId).toBeUndefined();
    expect(root?.usage?.totalTokens).toBeGreaterThan(0);

    const [send] = byKind(tree.runs, "inter_session");
    expect(send).toMatchObject({
      sessionKey: OPS,
      parentRunId: rootRunId,
      cause: { kind: "tool", runId: rootRunId, tool: "sessions_send", toolCallId: `${rootRunId}:1` },
      deliveries: [{ kind: "announce", status: "delivered", text: "Deploy approved" }],
    });
    // Runs created in the same millisecond (a manual clock: all of them) come in any order.
    const turns = byKind(tree.runs, "ping_pong").sort(
      (a, b) =>
        (a.cause?.kind === "follow_up" ? (a.cause.turn ?? 0) : 0) -
        (b.cause?.kind === "follow_up" ? (b.cause.turn ?? 0) : 0),
    );
    expect(turns.map((t) => [t.sessionKey, t.parentRunId, t.cause])).toEqual([
      [MAIN, send?.runId, { kind: "follow_up", runId: send?.runId, step: "reply_back", turn: 1 }],
      [OPS, send?.runId, { kind: "follow_up", runId: send?.runId, step: "reply_back", turn: 2 }],
    ]);
    expect(byKind(tree.runs, "announce")).toMatchObject([
      { sessionKey: OPS, parentRunId: send?.runId, cause: { step: "announce" } },
    ]);
    const [child] = byKind(tree.runs, "subagent");
    expect(child).toMatchObject({
      parentRunId: rootRunId,
      cause: { kind: "tool", tool: "sessions_spawn", toolCallId: `${rootRunId}:2` },
      deliveries: [{ kind: "subagent_announce", status: "delivered" }],
    });
    expect(byKind(tree.runs, "subagent_announce")).toMatchObject([
      { sessionKey: child?.sessionKey, parentRunId: child?.runId, cause: { step: "subagent_announce" } },
    ]);
    // Oldest first, and the same tree from any of its runs.
    const created = tree.runs.map((run) => run.createdAt);
    expect(created).toEqual([...created].sort((a, b) => a - b));
    for (const run of tree.runs) expect(await h.gateway.runs.tree({ runId: run.runId })).toEqual(tree);
    // The session's earlier runs are trees of their own.
    for (const other of others) {
      expect(tree.runs.map((run) => run.runId)).not.toContain(other);
      expect((await h.gateway.runs.tree({ runId: other })).runs.map((run) => run.runId)).toEqual([other]);
    }
  });

  it("survives a restart, pages by limit and says the tree was cut", async () => {
    const { rootRunId } = await grow();
    const before = await h.gateway.runs.tree({ runId: rootRunId });
    h = await h.restart();
    expect(await h.gateway.runs.tree({ runId: rootRunId })).toEqual(before);
    const cut = await h.gateway.runs.tree({ runId: rootRunId, limit: 3 });
    expect(cut.truncated).toBe(true);
    expect(cut.runs.map((run) => run.runId)).toEqual(before.runs.slice(0, 3).map((run) => run.runId));
  });

  it("as a requester sees it: hidden sessions' runs are left out, their children hang from what is shown", async () => {
    const { rootRunId } = await grow();
    await h.gateway.sessions.patch({ key: OPS, visibility: "self" });
    // The main session sees every session of its agent (visibility "agent"): the whole tree.
    expect((await h.gateway.runs.tree({ runId: rootRunId, requesterKey: MAIN })).runs).toHaveLength(7);
    const full = await h.gateway.runs.tree({ runId: rootRunId });
    const [send] = byKind(full.runs, "inter_session");
    const fromOps = await h.gateway.runs.tree({ runId: send?.runId as string, requesterKey: OPS });
    expect(fromOps.runs.map((run) => [run.kind, run.sessionKey]).sort()).toEqual([
      ["announce", OPS],
      ["inter_session", OPS],
      ["ping_pong", OPS],
    ]);
    // Its cause (the DM's run) is hidden: it is a root as #ops sees it; its follow-ups' parent is shown.
    expect(byKind(fromOps.runs, "inter_session")[0]?.parentRunId).toBeUndefined();
    expect(byKind(fromOps.runs, "ping_pong")[0]?.parentRunId).toBe(send?.runId);
    // A hidden run looks like no run at all.
    await expect(h.gateway.runs.tree({ runId: rootRunId, requesterKey: OPS })).rejects.toMatchObject({
      code: "not_found",
      field: "runId",
    });
    await expect(h.gateway.runs.tree({ runId: "nope" })).rejects.toMatchObject({ code: "not_found" });
  });
});
