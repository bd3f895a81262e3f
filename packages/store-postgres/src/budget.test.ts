import { type AgentRunner, type Gateway, messageText } from "@sessions/gateway";
import { afterAll, describe, expect, inject, it } from "vitest";
import { eventually, twoGateways } from "./testing/helpers.js";

const url = inject("postgresUrl");
const open: Gateway[] = [];
afterAll(async () => {
  await Promise.all(open.splice(0).map((gateway) => gateway.close({ drainMs: 100 })));
});

const CHILDREN = 4;

/**
 * The root spawns four sub-agents at once; each answers at once; their announce steps wait for `release` (or for
 * their gateway to go), so that the gateway left takes over the announces still to do.
 */
function fanOut() {
  const announcing: string[] = [];
  let release: () => void = () => {};
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  const runner: AgentRunner = {
    async run(request) {
      if (request.kind === "subagent") return { reply: `done: ${messageText(request.input)}` };
      if (request.kind === "subagent_announce") {
        announcing.push(request.runId);
        await Promise.race([
          released,
          new Promise((resolve) => request.signal.addEventListener("abort", resolve, { once: true })),
        ]);
        return { reply: "Result: done" };
      }
      const spawn = request.tools.find((tool) => tool.name === "sessions_spawn");
      for (let i = 0; i < CHILDREN; i++) await spawn?.execute({ task: `part ${i}` });
      return { reply: "spawned" };
    },
  };
  return { runner, announcing, release: () => release() };
}

/** Two gateways on one Postgres schema, sub-agents allowed to fan out. */
const cluster = (runner: AgentRunner) =>
  twoGateways({
    url,
    prefix: "budget",
    runner,
    config: { agents: { defaults: { subagents: { maxChildrenPerAgent: 10 } } } },
    opened: (gateway) => open.push(gateway),
  });

describe("a tree's budget across two gateways on one Postgres", () => {
  it("holds when the other gateway takes the tree over: its runs stop at the budget and the rest are told", async () => {
    const tree = fanOut();
    const [a, b] = await cluster(tree.runner);
    // The root, four children and their four announce steps on a: 9 runs. Two more are left for b.
    const { runId } = await a.agent({ message: "go", idempotencyKey: "go", budget: { runs: 11 } });
    await eventually(() => tree.announcing.length === CHILDREN);
    // a goes away mid-tree (its announce steps are stopped): b takes over the four announces still to do.
    await a.close({ drainMs: 0 });
    tree.release();
    await eventually(async () => {
      const done = await b.store.listSubagents({ statuses: ["done"] });
      return done.length === CHILDREN;
    }, "b to finish the announces");
    const result = await b.runs.tree({ runId });
    const runs = result.runs;
    // Never more runs than the budget, and none short of it, whichever gateway drew them.
    expect(runs).toHaveLength(11);
    expect(result.budget).toMatchObject({ limits: { runs: 11 }, spent: { runs: 11 }, left: { runs: 0 } });
    const owners = new Set<string | undefined>();
    for (const run of runs) owners.add((await b.store.getRun(run.runId))?.owner);
    expect(owners.size).toBe(2);
    expect(runs.filter((run) => run.kind === "subagent_announce")).toHaveLength(CHILDREN + 2);
    // The two announces the budget did not leave a run for told the requester so instead.
    const requester = await b.store.readMessages("agent:main:main", { limit: 100 });
    const notices = requester.filter((m) =>
      String(m.content).includes("Stopped: this request's budget is spent (runs 11 of 11)"),
    );
    expect(notices).toHaveLength(2);
  });

  it("leaves a sub-agent whose spawn waits for its tree's budget to its gateway: no run yet is not a lost one", async () => {
    let rootRunId = "";
    let go: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      go = resolve;
    });
    const spawned: unknown[] = [];
    const runner: AgentRunner = {
      async run(request) {
        if (request.kind === "subagent") return { reply: "child done" };
        if (request.kind === "subagent_announce") return { reply: "Result: child done" };
        await gate;
        const spawn = request.tools.find((tool) => tool.name === "sessions_spawn");
        spawned.push(await spawn?.execute({ task: "one part" }));
        return { reply: "spawned" };
      },
    };
    const [a, b] = await cluster(runner);
    const { runId } = await a.agent({ message: "go", idempotencyKey: "window", budget: { runs: 5 } });
    rootRunId = runId;
    // Someone holds the tree's budget lease: the spawn records its sub-agent, then waits to draw from the budget.
    const holder = { name: `budget:${rootRunId}`, owner: "a-slow-draw", ttlMs: 60_000 };
    expect((await b.store.acquireLease({ ...holder, now: Date.now() })).acquired).toBe(true);
    go();
    await eventually(async () => (await b.store.listSubagents({})).length === 1, "the sub-agent recorded");
    // Several of b's recovery passes (every 200 ms) see the record without its run while a is alive.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect(await b.store.listSubagents({})).toMatchObject([{ status: "running" }]);
    await b.store.releaseLease(holder.name, holder.owner);
    await eventually(
      async () => (await b.store.listSubagents({ statuses: ["done"] })).length === 1,
      "the announce",
    );
    expect(spawned).toMatchObject([{ status: "accepted" }]);
    const [record] = await b.store.listSubagents({});
    expect(record).toMatchObject({ outcome: "ok", owner: expect.any(String) });
    expect(record?.error).toBeUndefined();
    // Announced once, with the child's true outcome.
    const requester = await b.store.readMessages("agent:main:main", { limit: 100 });
    const announces = requester.filter((m) => String(m.content).includes("Result:"));
    expect(announces).toHaveLength(1);
    expect(String(announces[0]?.content)).toMatch(/^Status: success/);
  });
});
