import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { createGatewayClient, type GatewayClient } from "@sessions/gateway-client";
import { afterAll, describe, expect, inject, it, onTestFailed } from "vitest";
import { eventually, freshSchema } from "./testing/helpers.js";

// Two `sessions-gateway serve --store postgres://…` processes: the shipped binary (`pnpm build` first).
const here = dirname(fileURLToPath(import.meta.url));
const bin = resolve(here, "../../../apps/gateway/bin.js");
const url = inject("postgresUrl");
const work = mkdtempSync(join(tmpdir(), "sessions-serve-budget-"));
const children = new Set<ChildProcess>();
const clients: GatewayClient[] = [];
afterAll(async () => {
  await Promise.all(clients.map((client) => client.close().catch(() => undefined)));
  for (const child of children) child.kill("SIGKILL");
  rmSync(work, { recursive: true, force: true });
});

const CHILDREN = 4;

// The runner both gateways load with --runner: the root spawns four sub-agents, which answer at once; an announce
// step on g1 waits until its run is stopped (g1 is killed meanwhile); on g2 it answers at once.
const runner = join(work, "runner.mjs");
writeFileSync(
  runner,
  `export default {
  async run(request) {
    if (request.kind === "subagent") return { reply: "done" };
    if (request.kind === "subagent_announce") {
      if (process.env.GATEWAY_NAME === "g1")
        await new Promise((resolve) => request.signal.addEventListener("abort", resolve, { once: true }));
      return { reply: "Result: done" };
    }
    const spawn = request.tools.find((tool) => tool.name === "sessions_spawn");
    for (let i = 0; i < ${CHILDREN}; i++) await spawn.execute({ task: "part " + i });
    return { reply: "spawned" };
  },
};
`,
);
const config = join(work, "config.json5");
// Long leases: a busy machine must not make g1 look dead before it is killed (a kill on this host is noticed at
// once all the same: its pid is checked).
writeFileSync(
  config,
  "{ agents: { defaults: { subagents: { maxChildrenPerAgent: 10 } } }, gateway: { cluster: { leaseTtlMs: 15000 } } }",
);

function serve(name: string, store: string, log: string[]): Promise<{ child: ChildProcess; url: string }> {
  return new Promise((resolveServe, reject) => {
    const child = spawn(
      process.execPath,
      [
        bin,
        "serve",
        "--port",
        "0",
        "--store",
        store,
        "--config",
        config,
        "--runner",
        runner,
        "--log-level",
        "debug",
      ],
      {
        env: { ...process.env, GATEWAY_NAME: name, SESSIONS_GATEWAY_TOKEN: "" },
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    children.add(child);
    const read = (chunk: Buffer) => {
      log.push(String(chunk));
      const match = /listening (ws:\/\/\S+)/.exec(log.join(""));
      if (match) resolveServe({ child, url: match[1] as string });
    };
    child.stdout?.on("data", read);
    child.stderr?.on("data", read);
    child.on("exit", (code) => reject(new Error(`${name} exited ${code}: ${log.join("")}`)));
  });
}

describe("a tree's budget on two sessions-gateway serve processes sharing Postgres", () => {
  // Retried: on a starved machine a run of g1's tree was once seen queued for a minute, which leaves the tree short of
  // the state this test kills g1 in. Not seen since two causes of stuck runs were fixed (a lost start answer, a lane
  // freed outside its retry); the gateways log at debug, so a failure prints each one's run steps.
  it("stops at its runs budget when the other gateway takes the tree over after a kill -9", {
    retry: 2,
  }, async () => {
    const store = `${url}${url.includes("?") ? "&" : "?"}schema=${freshSchema("serve_budget")}`;
    const logs: Record<string, string[]> = { g1: [], g2: [] };
    onTestFailed(() => {
      for (const [name, log] of Object.entries(logs)) process.stderr.write(`--- ${name}\n${log.join("")}\n`);
    });
    const g1 = await serve("g1", store, logs.g1 as string[]);
    const g2 = await serve("g2", store, logs.g2 as string[]);
    const [c1, c2] = [g1, g2].map(({ url: wsUrl }) => {
      const client = createGatewayClient({ url: wsUrl, reconnect: false });
      clients.push(client);
      return client;
    }) as [GatewayClient, GatewayClient];
    // The root, four children and their four announce steps on g1: 9 runs; two are left for g2.
    const { runId } = await c1.agent({ message: "go", idempotencyKey: "go", budget: { runs: 11 } });
    let seen = "";
    await eventually(
      async () => {
        const tree = await c2.runs.tree({ runId });
        seen = tree.runs.map((run) => `${run.kind}:${run.status}`).join(", ");
        // Recorded and not ended: running, or (on a starved machine) still queued for its lane.
        const underWay = (status: string) => status === "running" || status === "queued";
        return (
          tree.runs.filter((run) => run.kind === "subagent_announce" && underWay(run.status)).length ===
          CHILDREN
        );
      },
      () => `g1's four announce steps recorded and under way (the tree: ${seen})`,
    );
    g1.child.kill("SIGKILL");
    // g2 notices g1 is gone, ends its runs and does the announces still to do, as far as the budget goes.
    let tree = await c2.runs.tree({ runId });
    await eventually(async () => {
      tree = await c2.runs.tree({ runId });
      const announces = tree.runs.filter((run) => run.kind === "subagent_announce");
      return announces.length === CHILDREN + 2 && announces.every((run) => run.status !== "running");
    }, "g2 to take the tree over");
    await eventually(async () => {
      const now = await c2.chat.history({ sessionKey: "agent:main:main", limit: 100 });
      return (
        now.messages.filter((m) => JSON.stringify(m.content).includes("budget is spent (runs 11 of 11)"))
          .length === 2
      );
    }, "the two announces left without a run to tell the requester");
    // Never more runs than the budget, whichever gateway drew them.
    tree = await c2.runs.tree({ runId });
    expect(tree.runs).toHaveLength(11);
    expect(tree.budget).toMatchObject({ limits: { runs: 11 }, spent: { runs: 11 }, left: { runs: 0 } });
    const waited = await c2.agentWait({ runId, timeoutMs: 10_000 });
    expect(waited).toMatchObject({ status: "ok", budget: { spent: { runs: 11 }, left: { runs: 0 } } });
  });
});
