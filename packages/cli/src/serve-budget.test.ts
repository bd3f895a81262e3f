import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { createGatewayClient } from "@sessions/gateway-client";
import { eventually } from "@sessions/testing/eventually";
import { afterAll, describe, expect, it } from "vitest";
import { serveProcesses } from "./serve-process.fixture.js";

const dir = mkdtempSync(join(tmpdir(), "sessions-budget-"));
const token = "budget-test-token";
const here = dirname(fileURLToPath(import.meta.url));
const servers = serveProcesses(token);
const serve = servers.serve;

afterAll(() => {
  servers.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe("a tree's budget through the shipped CLI", () => {
  it("stops a tree that keeps spawning at its runs budget, with budget_exceeded in a transcript", async () => {
    const config = join(dir, "deep.json5");
    // Sub-agents may spawn sub-agents far deeper than the budget allows: only the budget stops the tree.
    writeFileSync(
      config,
      `{
        tools: { sessions: { visibility: 'all' }, subagents: { tools: { deny: [] } } },
        session: { agentToAgent: { maxHops: 50 } },
        agents: { defaults: { subagents: { maxSpawnDepth: 50 } } },
      }`,
    );
    const url = await serve([
      "--config",
      config,
      "--db",
      join(dir, "budget.db"),
      "--runner",
      join(here, "spawn-runner.fixture.ts"),
    ]);
    const client = createGatewayClient({ url, token, reconnect: false });
    try {
      const { runId: root } = await client.agent({
        message: "start",
        idempotencyKey: "start",
        budget: { runs: 6 },
      });
      let tree = await client.runs.tree({ runId: root });
      await eventually(async () => {
        tree = await client.runs.tree({ runId: root });
        expect(tree.runs.every((run) => run.status === "ok")).toBe(true);
        expect(tree.runs.flatMap((run) => run.guards ?? []).map((g) => g.code)).toContain("budget_exceeded");
      }, "the tree to stop and settle");
      // Never more runs than the budget, and none short of it: every spawn and announce drew from it.
      expect(tree.runs).toHaveLength(6);
      expect(tree.budget).toMatchObject({ limits: { runs: 6 }, spent: { runs: 6 }, left: { runs: 0 } });
      // The refused spawn's typed result is in its session's transcript: the agent saw why.
      const refused = tree.runs.find((run) => run.guards?.some((g) => g.code === "budget_exceeded"));
      const history = await client.chat.history({ sessionKey: refused?.sessionKey as string, limit: 100 });
      const result = history.messages
        .flatMap((m) =>
          Array.isArray(m.content) ? (m.content as { output?: Record<string, unknown> }[]) : [],
        )
        .map((part) => part.output)
        .find((output) => output?.code === "budget_exceeded");
      expect(result).toMatchObject({
        status: "forbidden",
        code: "budget_exceeded",
        budget: { limits: { runs: 6 }, spent: { runs: 6 }, left: { runs: 0 } },
      });
      expect(String(result?.error)).toContain("budget is spent (runs 6 of 6)");
      const waited = await client.agentWait({ runId: root, timeoutMs: 10_000 });
      expect(waited.budget).toMatchObject({ spent: { runs: 6 }, left: { runs: 0 } });
    } finally {
      await client.close();
    }
  });
});
