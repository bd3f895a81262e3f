import { afterAll, afterEach, describe, expect, it } from "vitest";
import type { LifecycleHooks } from "../lifecycle.js";
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

const agent: ScriptedAgent = async (turn) => {
  if (turn.kind === "ping_pong") return "REPLY_SKIP";
  if (turn.kind === "announce") return "Announced";
  if (turn.kind === "subagent_announce") return "Result: done";
  if (turn.text === "go") {
    await turn.callTool("sessions_send", { sessionKey: TREE_OPS, message: "deploy?", timeoutSeconds: 0 });
    await turn.callTool("sessions_spawn", { task: "research" });
    await turn.callTool("sessions_history", { sessionKey: "nowhere" });
    return "on it";
  }
  return "ok";
};

/** Every hook call as a line: `hook runId detail`. */
function recorder() {
  const lines: string[] = [];
  const hooks: Partial<LifecycleHooks> = {
    recording: (run) => lines.push(`recording ${run.sessionKey} ${run.kind}`),
    declined: (run) => lines.push(`declined ${run.sessionKey}`),
    accepted: (run) => lines.push(`accepted ${run.runId}`),
    started: (run) => lines.push(`started ${run.runId}`),
    toolCalled: (run, call) => lines.push(`toolCalled ${run.runId} ${call.tool} ${call.toolCallId}`),
    toolReturned: (run, call, result) =>
      lines.push(`toolReturned ${run.runId} ${call.tool} ${(result as { status?: string }).status}`),
    ended: (run, followUps) => lines.push(`ended ${run.runId} ${run.status} ${followUps}`),
    deliveryAttempted: (delivery, attempt) =>
      lines.push(`deliveryAttempted ${delivery.runId} ${delivery.kind} ${attempt.outcome}`),
    deliveryFinal: (delivery) =>
      lines.push(`deliveryFinal ${delivery.runId} ${delivery.kind} ${delivery.status}`),
  };
  return { lines, hooks };
}

describe.each(STORE_KINDS)("the run lifecycle on the %s store", (kind) => {
  let h: Harness;
  afterEach(async () => {
    await h?.close();
  });

  it("raises every hook of a tree in order, and its follow-ups run from them", async () => {
    h = await harness(kind, { main: agent }, { config: { tools: { sessions: { visibility: "agent" } } } });
    await seedTreeSessions(h);
    const { lines, hooks } = recorder();
    // A subscriber that throws is logged; the others and the run go on.
    h.gateway.lifecycle.subscribe({
      accepted() {
        throw new Error("a broken subscriber");
      },
    });
    const unsubscribe = h.gateway.lifecycle.subscribe(hooks);
    const go = await h.gateway.receive(treeMessage("alice", "go", { messageId: "m1" }));
    const root = go.runId as string;
    await eventually(() => {
      expect(lines.filter((line) => line.startsWith("deliveryFinal"))).toHaveLength(3);
      expect(lines.filter((line) => line.startsWith("ended"))).toHaveLength(6);
    }, "the tree to end and deliver");
    const tree = await h.gateway.runs.tree({ runId: root });
    const id = (kind: string) => tree.runs.find((run) => run.kind === kind)?.runId as string;
    const of = (runId: string) => lines.filter((line) => line.split(" ")[1] === runId);
    expect(of(root)).toEqual([
      `accepted ${root}`,
      `started ${root}`,
      `toolCalled ${root} sessions_send ${root}:1`,
      `toolReturned ${root} sessions_send accepted`,
      `toolCalled ${root} sessions_spawn ${root}:2`,
      `toolReturned ${root} sessions_spawn accepted`,
      `toolCalled ${root} sessions_history ${root}:3`,
      `toolReturned ${root} sessions_history not_found`,
      `ended ${root} ok true`,
      `deliveryAttempted ${root} reply delivered`,
      `deliveryFinal ${root} reply delivered`,
    ]);
    // A sessions_send run's announce goes out under its id; a sub-agent's under the child's.
    expect(of(id("inter_session")).slice(-3)).toEqual([
      `ended ${id("inter_session")} ok true`,
      `deliveryAttempted ${id("inter_session")} announce delivered`,
      `deliveryFinal ${id("inter_session")} announce delivered`,
    ]);
    expect(of(id("subagent"))).toContain(`deliveryFinal ${id("subagent")} subagent_announce delivered`);
    // Each run is recorded before it is accepted: the root, the send, one reply-back turn, two announces, the child.
    expect(lines.filter((line) => line.startsWith("recording"))).toHaveLength(6);
    expect(lines.indexOf("recording agent:main:main chat")).toBeLessThan(lines.indexOf(`accepted ${root}`));
    for (const run of tree.runs) expect(of(run.runId)[0]).toBe(`accepted ${run.runId}`);

    // A repeated message is declined (nothing new recorded), and an unsubscribed hook hears nothing.
    const before = lines.length;
    await h.gateway.receive(treeMessage("alice", "go", { messageId: "m1" }));
    expect(lines.slice(before)).toEqual(["recording agent:main:main chat", "declined agent:main:main"]);
    unsubscribe();
    await h.gateway.receive(treeMessage("alice", "hello", { messageId: "m2" }));
    expect(lines).toHaveLength(before + 2);
  });
});
