import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { SessionsSendResult } from "@sessions/core";
import { afterAll, describe, expect, it } from "vitest";
import { announceDeliveryId } from "../a2a/receipt.js";
import { createGateway } from "../create-gateway.js";
import { createScriptedRunner } from "../runner/scripted.js";
import { eventually, openStore, runFixtureUntilKilled } from "../test-kit.js";
import { startSdkAgent } from "./sdk-agent.fixture.js";

const here = dirname(fileURLToPath(import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "sessions-remote-crash-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const KEY = "agent:weather:a2a:main";

/** Runs the child gateway until the session holds the remote's context, then SIGKILLs it; what it printed. */
async function runAndKill(
  path: string,
  cardUrl: string,
): Promise<{ runId: string; contextId: string; running?: { runId: string; taskId: string } }> {
  let runId = "";
  let contextId = "";
  let running: { runId: string; taskId: string } | undefined;
  const { signal, stderr } = await runFixtureUntilKilled(
    join(here, "remote-crash-child.fixture.ts"),
    [path, cardUrl],
    (line, kill) => {
      if (line.accepted) runId = (line.accepted as { runId: string }).runId;
      if (line.contextId) {
        contextId = line.contextId as string;
        running = line.running as typeof running;
        kill();
      }
    },
  );
  if (signal !== "SIGKILL") throw new Error(`the child exited on its own; stderr: ${stderr}`);
  return { runId, contextId, ...(running === undefined ? {} : { running }) };
}

describe("a gateway killed while a remote agent answers (kill -9, restart on the same file)", () => {
  it("sent the message once, ends the run clearly, cancels its task at the remote, and keeps the session's context for the next message", async () => {
    const remote = await startSdkAgent();
    const path = join(dir, "sessions.db");
    try {
      const killed = await runAndKill(path, remote.cardUrl);
      expect(remote.received.map((r) => [r.text, r.messageId])).toEqual([["hold on", killed.runId]]);
      expect(remote.received[0]?.contextId).toBe(killed.contextId);
      // The session named the task under way as the run's before the kill.
      expect(killed.running?.runId).toBe(killed.runId);
      expect(remote.canceled).toEqual([]);

      const gateway = createGateway({
        store: openStore("sqlite", path).store,
        runner: createScriptedRunner({ agents: { main: () => "REPLY_SKIP" } }),
        config: {
          tools: {
            sessions: { visibility: "all" },
            agentToAgent: { enabled: true, allow: ["main", "weather"] },
          },
          agents: { remotes: [{ id: "weather", url: remote.cardUrl }] },
        },
      });
      try {
        await gateway.ready;
        const run = await gateway.store.getRun(killed.runId);
        expect(run).toMatchObject({
          status: "error",
          error: "gateway restarted while the run was in progress",
        });
        // Recovery ended the run, so the task it had under way at the remote is cancelled, once, and the mark goes.
        await eventually(() => expect(remote.canceled).toEqual([killed.running?.taskId]));
        await eventually(async () =>
          expect((await gateway.store.getEntry(KEY))?.a2a).toEqual({ contextId: killed.contextId }),
        );
        // The sender's receipt resolves: nothing to announce from a failed run.
        await eventually(async () =>
          expect((await gateway.store.getDelivery(announceDeliveryId(killed.runId)))?.status).toBe(
            "suppressed",
          ),
        );
        // The next message continues the context the remote named before the crash; the first was never sent again.
        const again = (await gateway.callTool("agent:main:main", "sessions_send", {
          sessionKey: KEY,
          message: "hello again",
          timeoutSeconds: 30,
        })) as SessionsSendResult;
        expect(again).toMatchObject({
          status: "ok",
          reply: "remote heard: hello again (message 2 of this context)",
        });
        expect(remote.received.map((r) => [r.text, r.contextId])).toEqual([
          ["hold on", killed.contextId],
          ["hello again", killed.contextId],
        ]);
        expect(remote.canceled).toHaveLength(1);
      } finally {
        await gateway.close({ drainMs: 100 });
      }
    } finally {
      await remote.close();
    }
  });
});
