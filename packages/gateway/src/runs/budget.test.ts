import { afterAll, afterEach, describe, expect, it } from "vitest";
import type { GatewayEvent } from "../gateway.js";
import type { ScriptedAgent } from "../runner/scripted.js";
import type { AgentRunner } from "../runner/types.js";
import type { StoredMessage } from "../store/types.js";
import { cleanupDirs, eventually, type Harness, harness, STORE_KINDS } from "../test-kit.js";
import { messageText } from "../transcript.js";

afterAll(cleanupDirs);

const MAIN = "agent:main:main";
const room = (name: string) => `agent:main:chat:group:${name}`;
const B = room("b");

/** Sub-agents may spawn sub-agents, far enough for any budget here to be what stops a tree. */
const deepTrees = (extra: Record<string, unknown> = {}) => ({
  tools: { sessions: { visibility: "all" as const }, subagents: { tools: { deny: [] } } },
  session: { agentToAgent: { maxHops: 50 } },
  ...extra,
  agents: {
    ...((extra.agents as Record<string, unknown>) ?? {}),
    defaults: {
      subagents: { maxSpawnDepth: 50, maxChildrenPerAgent: 10 },
      ...(((extra.agents as Record<string, unknown>)?.defaults as Record<string, unknown>) ?? {}),
    },
  },
});

type Refusal = {
  status: string;
  code?: string;
  error?: string;
  budget?: Record<string, Record<string, number>>;
};

/** Every tool result in a session's transcript. */
async function toolResults(h: Harness, sessionKey: string): Promise<Refusal[]> {
  const messages: StoredMessage[] = await h.store.readMessages(sessionKey, { limit: 200 });
  return messages.flatMap((m) =>
    m.role === "toolResult" && Array.isArray(m.content)
      ? (m.content as { output?: Refusal }[]).flatMap((part) => (part.output ? [part.output] : []))
      : [],
  );
}

/** Someone writes in #b, so that the session exists and has a channel to announce on. */
async function openRoomB(h: Harness): Promise<void> {
  const hi = await h.gateway.receive({
    channel: "chat",
    chatType: "group",
    peerId: "b",
    senderId: "sam",
    to: "group:b",
    text: "hi",
  });
  await h.gateway.agentWait({ runId: hi.runId as string, timeoutMs: 60_000 });
}

/**
 * The tree has nothing left to do, read from what the store says is still due, never from a quiet moment: no run of
 * it queued or running, no sub-agent running or announcing (a sub-agent is `running` from its spawn until its
 * announce is posted, so the moment between a child's end and its announce run does not count as settled), and no
 * `sessions_send` follow-up pending (written with the target run, done once its reply-back and announce are).
 */
async function settledTree(h: Harness, rootRunId: string) {
  let tree = await h.gateway.runs.tree({ runId: rootRunId });
  await eventually(async () => {
    tree = await h.gateway.runs.tree({ runId: rootRunId });
    const ids = new Set(tree.runs.map((run) => run.runId));
    expect(tree.runs.filter((run) => run.status === "queued" || run.status === "running")).toEqual([]);
    expect(await h.store.listSubagents({ statuses: ["running", "announcing"] })).toEqual([]);
    expect((await h.store.listPendingFollowUps()).filter((run) => ids.has(run.runId))).toEqual([]);
  }, "the tree to settle");
  return tree;
}

describe.each(STORE_KINDS)("budgets of agent trees on the %s store", (kind) => {
  let h: Harness;
  afterEach(async () => {
    await h?.close();
  });

  /** Every run spawns one more sub-agent and reports what its spawn answered. */
  const spawner: ScriptedAgent = async (turn) => {
    if (turn.kind === "subagent_announce") return "ANNOUNCE_SKIP";
    const result = await turn.callTool<Refusal>("sessions_spawn", { task: `deeper than ${turn.sessionKey}` });
    return `${result.status}${result.code ? ` ${result.code}` : ""}`;
  };

  it("stops a tree that keeps spawning at its runs budget, with a typed budget_exceeded result", async () => {
    h = await harness(kind, { main: spawner }, { config: deepTrees() });
    const events: GatewayEvent[] = [];
    h.gateway.subscribe((event) => events.push(event));
    const { runId } = await h.gateway.agent({ message: "go", idempotencyKey: "k1", budget: { runs: 5 } });
    const tree = await settledTree(h, runId);
    // Never more runs than the budget: spawns and announces alike drew from it.
    expect(tree.runs).toHaveLength(5);
    expect(tree.budget).toMatchObject({ limits: { runs: 5 }, spent: { runs: 5 }, left: { runs: 0 } });
    // Some run of the tree was told why it could not spawn, or some announce was replaced by the notice.
    const keys = [...new Set(tree.runs.map((run) => run.sessionKey))];
    const refusals = (await Promise.all(keys.map((key) => toolResults(h, key))))
      .flat()
      .filter((r) => r.code === "budget_exceeded");
    for (const refusal of refusals) {
      expect(refusal).toMatchObject({
        status: "forbidden",
        budget: { limits: { runs: 5 }, spent: { runs: 5 }, left: { runs: 0 } },
      });
      expect(refusal.error).toContain("budget is spent (runs 5 of 5)");
    }
    const guarded = tree.runs.filter((run) => run.guards?.some((g) => g.code === "budget_exceeded"));
    expect(guarded.length).toBe(refusals.length);
    const announcedNotice = (await h.store.readMessages(MAIN, { limit: 200 })).some((m) =>
      String(m.content).includes("Stopped: this request's budget is spent"),
    );
    expect(refusals.length > 0 || announcedNotice).toBe(true);
    if (refusals.length > 0)
      expect(events.some((e) => e.type === "agent" && e.stream === "guard")).toBe(true);
    // Its runs carry the budget; agent.wait reports spent and left.
    const waited = await h.gateway.agentWait({ runId, timeoutMs: 1000 });
    expect(waited.budget).toMatchObject({ limits: { runs: 5 }, spent: { runs: 5 }, left: { runs: 0 } });
    for (const run of tree.runs) expect((await h.store.getRun(run.runId))?.budget).toEqual({ runs: 5 });
  });

  it("refuses the next spawn once the tree's tokens or cost are spent", async () => {
    for (const [budget, usage, reason] of [
      [{ tokens: 150 }, { totalTokens: 200 }, "tokens 200 of 150"],
      [{ costUsd: 0.4 }, { inputTokens: 1, outputTokens: 1, costUsd: 0.5 }, "cost $0.5 of $0.4"],
    ] as const) {
      let first: string | undefined;
      const agent: ScriptedAgent = async (turn) => {
        if (turn.kind === "subagent") return { reply: "done", usage };
        if (turn.kind === "subagent_announce") return { reply: "ANNOUNCE_SKIP", usage: { totalTokens: 0 } };
        const one = await turn.callTool<{ runId?: string }>("sessions_spawn", { task: "one" });
        first = one.runId;
        // The first child's end (and so its usage) is recorded before the second spawn draws from the budget.
        await eventually(
          async () => expect((await h.store.getRun(first as string))?.status).toBe("ok"),
          "the first child's end recorded",
        );
        const two = await turn.callTool<Refusal>("sessions_spawn", { task: "two" });
        return { reply: `${two.status} ${two.code ?? ""}`, usage: { totalTokens: 0 } };
      };
      h = await harness(kind, { main: agent }, { config: deepTrees() });
      const { runId } = await h.gateway.agent({ message: "go", idempotencyKey: "k", budget });
      const waited = await h.gateway.agentWait({ runId, timeoutMs: 60_000 });
      expect(waited.reply).toBe("forbidden budget_exceeded");
      const refusal = (await toolResults(h, MAIN)).find((r) => r.code === "budget_exceeded");
      expect(refusal?.error).toContain(reason);
      expect(refusal?.budget?.left).toEqual("tokens" in budget ? { tokens: 0 } : { costUsd: 0 });
      // Nothing of the refused child was kept: one sub-agent session, the one that ran.
      const children = (await h.gateway.sessions.list({})).sessions.filter((s) =>
        s.key.includes(":subagent:"),
      );
      expect(children).toHaveLength(1);
      await h.close();
    }
  });

  it("stops running runs at the budget's deadline, refuses later ones and tells the requester", async () => {
    let release: () => void = () => {};
    const later = new Promise<void>((resolve) => {
      release = resolve;
    });
    const agent: ScriptedAgent = async (turn) => {
      if (turn.kind === "subagent") {
        await turn.sleep(3_600_000);
        return "never";
      }
      if (turn.kind === "subagent_announce") return "summary";
      await turn.callTool("sessions_spawn", { task: "slow" });
      await later;
      const again = await turn.callTool<Refusal>("sessions_spawn", { task: "too late" });
      return `${again.status} ${again.code ?? ""}`;
    };
    h = await harness(kind, { main: agent }, { config: deepTrees() });
    const { runId } = await h.gateway.agent({ message: "go", idempotencyKey: "k", budget: { seconds: 10 } });
    let child: string | undefined;
    await eventually(async () => {
      const tree = await h.gateway.runs.tree({ runId });
      child = tree.runs.find((run) => run.kind === "subagent" && run.status === "running")?.runId;
      expect(child).toBeDefined();
    });
    h.clock.advance(11_000);
    await eventually(async () => {
      const run = await h.store.getRun(child as string);
      expect(run?.status).toBe("timeout");
      expect(run?.error).toContain("budget deadline");
    });
    release();
    const waited = await h.gateway.agentWait({ runId, timeoutMs: 60_000 });
    // The root itself started before the deadline and had no timer of its own shorter than it: it was stopped too.
    expect(waited.status).toBe("timeout");
    expect(waited.budget?.left).toMatchObject({ seconds: 0 });
    // The requester heard the child was stopped by the budget (the announce step did not run: no run was left).
    await eventually(async () => {
      const messages = await h.store.readMessages(MAIN, { limit: 200 });
      expect(
        messages.some((m) => String(m.content).includes("Stopped: this request's budget is spent (deadline")),
      ).toBe(true);
    });
    const tree = await settledTree(h, runId);
    expect(tree.runs.filter((run) => run.kind === "subagent_announce")).toHaveLength(0);
  });

  it("ends a reply-back loop whose tree is spent and posts a notice where the announce would have gone", async () => {
    const agent: ScriptedAgent = async (turn) => {
      if (turn.sessionKey === B) return turn.kind === "inter_session" ? "round one" : "hi";
      if (turn.text !== "go") return "hello";
      await turn.callTool("sessions_send", { sessionKey: B, message: "deploy?", timeoutSeconds: 0 });
      return "sent";
    };
    h = await harness(kind, { main: agent }, { config: deepTrees() });
    await openRoomB(h);
    const { runId } = await h.gateway.agent({ message: "go", idempotencyKey: "k", budget: { runs: 2 } });
    await eventually(() =>
      expect(h.channel.sent.map((s) => s.message.text)).toContain(
        "Stopped: this request's budget is spent (runs 2 of 2).",
      ),
    );
    let tree = await settledTree(h, runId);
    expect(tree.runs.map((run) => run.kind)).toEqual(["agent", "inter_session"]);
    // The channel has the notice; its delivery is marked delivered in the write after the send.
    await eventually(async () => {
      tree = await h.gateway.runs.tree({ runId });
      const announce = tree.runs[1]?.deliveries.find((d) => d.kind === "announce");
      expect(announce).toMatchObject({
        status: "delivered",
        text: "Stopped: this request's budget is spent (runs 2 of 2).",
      });
    });
  });

  it("refuses a sessions_send of a spent tree with the typed result, recorded as a guard of the calling run", async () => {
    const agent: ScriptedAgent = async (turn) => {
      if (turn.sessionKey === B) return "noted";
      if (turn.text !== "go") return "hello";
      const first = await turn.callTool<Refusal>("sessions_send", {
        sessionKey: B,
        message: "one",
        timeoutSeconds: 0,
      });
      const second = await turn.callTool<Refusal>("sessions_send", {
        sessionKey: B,
        message: "two",
        timeoutSeconds: 0,
      });
      return `${first.status}, ${second.status} ${second.code ?? ""}`;
    };
    h = await harness(kind, { main: agent }, { config: deepTrees() });
    await h.gateway.agent({ sessionKey: B, message: "hi", idempotencyKey: "hi" });
    const events: GatewayEvent[] = [];
    h.gateway.subscribe((event) => events.push(event));
    const { runId } = await h.gateway.agent({ message: "go", idempotencyKey: "k", budget: { runs: 2 } });
    expect((await h.gateway.agentWait({ runId, timeoutMs: 60_000 })).reply).toBe(
      "accepted, forbidden budget_exceeded",
    );
    const refusal = (await toolResults(h, MAIN)).find((r) => r.code === "budget_exceeded");
    expect(refusal).toMatchObject({
      status: "forbidden",
      limit: 2,
      chain: [MAIN, B],
      budget: { limits: { runs: 2 }, spent: { runs: 2 }, left: { runs: 0 } },
    });
    expect(refusal?.error).toMatch(/^sessions_send refused: this request's budget is spent \(runs 2 of 2\)/);
    expect((await h.store.getRun(runId))?.guards).toEqual([
      { code: "budget_exceeded", tool: "sessions_send", limit: 2, chain: [MAIN, B] },
    ]);
    expect(events.find((e) => e.type === "agent" && e.stream === "guard")).toMatchObject({
      runId,
      data: { code: "budget_exceeded", limit: 2 },
    });
  });

  it("tells a delivering request's target when the budget's deadline stopped its run", async () => {
    h = await harness(
      kind,
      {
        main: async (turn) => {
          await turn.sleep(3_600_000);
          return "never";
        },
      },
      { config: deepTrees() },
    );
    const key = "agent:main:chat:group:dev";
    await h.store.putEntry({
      key,
      sessionId: "s-dev",
      agentId: "main",
      kind: "group",
      createdAt: 1,
      updatedAt: 1,
      deliveryContext: { channel: "chat", to: "group:dev" },
    });
    const sent = await h.gateway.chat.send({
      sessionKey: key,
      message: "think hard",
      idempotencyKey: "k",
      deliver: true,
      timeoutMs: 3_600_000,
      budget: { seconds: 5 },
    });
    await eventually(async () => expect((await h.store.getRun(sent.runId))?.status).toBe("running"));
    h.clock.advance(5_000);
    const waited = await h.gateway.agentWait({ runId: sent.runId, timeoutMs: 60_000 });
    expect(waited).toMatchObject({ status: "timeout", budget: { left: { seconds: 0 } } });
    expect(waited.error).toMatch(/^run stopped at its request's budget deadline/);
    await eventually(() =>
      expect(h.channel.sent).toMatchObject([
        {
          target: { channel: "chat", to: "group:dev" },
          message: {
            text: expect.stringMatching(/^Stopped: this request's budget is spent \(deadline .* passed\)\.$/),
          },
        },
      ]),
    );
  });

  it("posts the deadline notice where the announce would have gone when the deadline stops the announce step", async () => {
    const agent: ScriptedAgent = async (turn) => {
      if (turn.sessionKey === B) {
        if (turn.kind !== "announce") return turn.kind === "inter_session" ? "round one" : "hi";
        await turn.sleep(3_600_000);
        return "never announced";
      }
      if (turn.kind === "ping_pong") return "REPLY_SKIP";
      if (turn.text !== "go") return "hello";
      await turn.callTool("sessions_send", { sessionKey: B, message: "deploy?", timeoutSeconds: 0 });
      return "sent";
    };
    h = await harness(kind, { main: agent }, { config: deepTrees() });
    await openRoomB(h);
    const { runId } = await h.gateway.agent({ message: "go", idempotencyKey: "k", budget: { seconds: 10 } });
    let announceRun: string | undefined;
    await eventually(async () => {
      const tree = await (h as Harness).gateway.runs.tree({ runId });
      announceRun = tree.runs.find((run) => run.kind === "announce" && run.status === "running")?.runId;
      expect(announceRun).toBeDefined();
    }, "the announce step running");
    await h.clock.advance(10_000);
    await eventually(() =>
      expect(h?.channel.sent.map((s) => [s.target.to, s.message.text])).toContainEqual([
        "group:b",
        expect.stringMatching(/^Stopped: this request's budget is spent \(deadline .* passed\)\.$/),
      ]),
    );
    expect((await h.store.getRun(announceRun as string))?.status).toBe("timeout");
  });

  it("starts a tree's clock when its first run starts, not while that run waits for its session", async () => {
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    h = await harness(kind, {
      main: async (turn) => {
        if (turn.text === "first") await held;
        return `done: ${turn.text}`;
      },
    });
    const first = await h.gateway.agent({ message: "first", idempotencyKey: "first" });
    await eventually(async () => expect((await h?.store.getRun(first.runId))?.status).toBe("running"));
    const { runId } = await h.gateway.agent({ message: "go", idempotencyKey: "go", budget: { seconds: 5 } });
    expect((await h.store.getRun(runId))?.status).toBe("queued");
    // It waits longer than its budget's seconds behind the session's run, then starts with all of them ahead.
    await h.clock.advance(60_000);
    release();
    const waited = await h.gateway.agentWait({ runId, timeoutMs: 60_000 });
    expect(waited).toMatchObject({ status: "ok", reply: "done: go", budget: { left: { seconds: 5 } } });
    const run = await h.store.getRun(runId);
    expect(run?.budget?.deadlineAt).toBe((run?.startedAt ?? 0) + 5_000);
  });

  it("counts what a failed run's model steps used, so failing runs cannot spend a tree's tokens unseen", async () => {
    const results: { status: string; code?: string }[] = [];
    const runner: AgentRunner = {
      async run(request) {
        if (request.sessionKey === B) {
          if (request.kind !== "inter_session") return { reply: "hi" };
          // One model step (600 tokens), then the model fails.
          request.emit({ type: "usage", usage: { inputTokens: 500, outputTokens: 100, totalTokens: 600 } });
          throw new Error("model exploded");
        }
        if (messageText(request.input) !== "go") return { reply: "ok" };
        const send = request.tools.find((tool) => tool.name === "sessions_send");
        for (let i = 0; i < 3; i++)
          results.push(
            (await send?.execute({ sessionKey: B, message: `try ${i}`, timeoutSeconds: 30 })) as {
              status: string;
            },
          );
        return { reply: "done" };
      },
    };
    h = await harness(kind, {}, { runner, config: deepTrees() });
    await openRoomB(h);
    const { runId } = await h.gateway.agent({ message: "go", idempotencyKey: "k", budget: { tokens: 1000 } });
    await h.gateway.agentWait({ runId, timeoutMs: 60_000 });
    // Two failed runs spent 1,200 tokens: the third send is refused.
    expect(results.map((r) => r.code ?? r.status)).toEqual(["error", "error", "budget_exceeded"]);
    const tree = await settledTree(h, runId);
    const failed = tree.runs.filter((run) => run.kind === "inter_session");
    expect(failed.map((run) => [run.status, run.usage?.totalTokens])).toEqual([
      ["error", 600],
      ["error", 600],
    ]);
    expect(tree.budget?.spent.tokens).toBeGreaterThanOrEqual(1200);
  });

  it("takes the budget from the request, else the session, else the agent, else the defaults", async () => {
    h = await harness(
      kind,
      { main: () => "ok", ops: () => "ok" },
      {
        config: deepTrees({
          agents: {
            list: [{ id: "main" }, { id: "ops", budget: { runs: 3 } }],
            defaults: { budget: { runs: 9 } },
          },
        }),
      },
    );
    const budgetOf = async (runId: string) => {
      await h.gateway.agentWait({ runId, timeoutMs: 60_000 });
      return (await h.store.getRun(runId))?.budget;
    };
    const a = await h.gateway.agent({ message: "1", idempotencyKey: "a" });
    expect(await budgetOf(a.runId)).toEqual({ runs: 9 });
    // A message from an adapter takes its session's, agent's or the default budget too.
    const inbound = await h.gateway.receive({
      channel: "chat",
      chatType: "group",
      peerId: "ops",
      senderId: "sam",
      to: "group:ops",
      text: "hi",
      agentId: "ops",
    });
    expect(await budgetOf(inbound.runId as string)).toEqual({ runs: 3 });
    const b = await h.gateway.agent({ message: "1", idempotencyKey: "b", agentId: "ops" });
    expect(await budgetOf(b.runId)).toEqual({ runs: 3 });
    const patched = await h.gateway.sessions.patch({ key: b.sessionKey, budget: { runs: 4, tokens: 500 } });
    expect(patched.entry.budget).toEqual({ runs: 4, tokens: 500 });
    const c = await h.gateway.chat.send({ sessionKey: b.sessionKey, message: "2", idempotencyKey: "c" });
    expect(await budgetOf(c.runId)).toEqual({ runs: 4, tokens: 500 });
    const now = h.clock.now();
    const d = await h.gateway.chat.send({
      sessionKey: b.sessionKey,
      message: "3",
      idempotencyKey: "d",
      budget: { seconds: 30 },
    });
    expect(await budgetOf(d.runId)).toEqual({ deadlineAt: now + 30_000 });
    await h.gateway.sessions.patch({ key: b.sessionKey, budget: null });
    const e = await h.gateway.chat.send({ sessionKey: b.sessionKey, message: "4", idempotencyKey: "e" });
    expect(await budgetOf(e.runId)).toEqual({ runs: 3 });
    await expect(
      h.gateway.agent({ message: "x", idempotencyKey: "f", budget: { runs: -1 } } as never),
    ).rejects.toMatchObject({ code: "invalid_params", field: "budget.runs" });
  });

  it("leaves trees without a budget as they were: no budget on their runs or in agent.wait and runs.tree", async () => {
    h = await harness(
      kind,
      { main: spawner },
      {
        config: deepTrees({
          agents: { defaults: { subagents: { maxSpawnDepth: 2, maxChildrenPerAgent: 10 } } },
        }),
      },
    );
    const { runId } = await h.gateway.agent({ message: "go", idempotencyKey: "k" });
    const tree = await settledTree(h, runId);
    expect(tree.budget).toBeUndefined();
    expect(tree.runs.length).toBeGreaterThan(3);
    expect(tree.runs.every((run) => run.guards === undefined)).toBe(true);
    expect((await h.gateway.agentWait({ runId, timeoutMs: 1000 })).budget).toBeUndefined();
    expect((await h.store.getRun(runId))?.budget).toBeUndefined();
  });
});
