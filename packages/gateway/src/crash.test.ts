import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { createManualClock } from "./clock.js";
import { createGateway } from "./create-gateway.js";
import { createScriptedRunner } from "./runner/scripted.js";
import { createSqliteStore } from "./store/sqlite.js";
import { createFakeChannel, eventually, runFixtureUntilKilled } from "./test-kit.js";

const here = dirname(fileURLToPath(import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "sessions-crash-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Ack {
  sessionKey: string;
  runId: string;
  text: string;
}

/** Starts the gateway child, collects its acknowledgements, SIGKILLs it once `killAfterAcks` arrived past "ready". */
async function runAndKill(
  path: string,
  killAfterAcks: number,
): Promise<{ acks: Ack[]; signal: NodeJS.Signals | null }> {
  const acks: Ack[] = [];
  let ready = false;
  let afterReady = 0;
  const { signal } = await runFixtureUntilKilled(
    join(here, "crash-child.fixture.ts"),
    [path],
    (line, kill) => {
      if (line.ready) ready = true;
      else if (line.ack) {
        acks.push(line as unknown as Ack);
        if (ready && ++afterReady === killAfterAcks) kill();
      }
    },
  );
  return { acks, signal };
}

describe("crash safety (kill -9 mid-traffic, restart on the same file)", () => {
  it("loses nothing acknowledged, fails in-flight runs clearly, delivers pending announces once, keeps archive deadlines", async () => {
    const path = join(dir, "crash.db");
    const { acks, signal } = await runAndKill(path, 25);
    expect(signal).toBe("SIGKILL");
    expect(acks.length).toBeGreaterThanOrEqual(28);

    const clock = createManualClock(Date.now());
    const channel = createFakeChannel("chat");
    const runner = createScriptedRunner({ agents: { main: () => "after restart" }, clock });
    const gateway = createGateway({
      store: createSqliteStore({ path }),
      runner,
      adapters: [channel],
      clock,
      config: { agents: { defaults: { subagents: { archiveAfterMinutes: 1 } } } },
    });
    await gateway.ready;

    // Every acknowledged message is in its transcript, and every acknowledged run has a final outcome.
    for (const ack of acks) {
      const messages = await gateway.store.readMessages(ack.sessionKey, { limit: 1000 });
      expect(messages.some((m) => m.content === ack.text && m.role === "user")).toBe(true);
      const waited = await gateway.agentWait({ runId: ack.runId, timeoutMs: 0 });
      expect(["ok", "error"]).toContain(waited.status);
    }
    const slow = acks.find((a) => a.text === "slow") as Ack;
    expect(await gateway.agentWait({ runId: slow.runId })).toMatchObject({
      status: "error",
      error: "gateway restarted while the run was in progress",
    });

    // The sub-agent that was running at the crash ends as error and announces once.
    await eventually(async () => {
      const done = await gateway.store.listSubagents({ statuses: ["done"] });
      expect(done).toHaveLength(2);
    });
    // Deliveries the dead process queued keep their retry time (the platform asked for an hour) and then go out.
    const quick = (await gateway.store.listSubagents({ statuses: ["done"] })).find(
      (s) => s.task === "quick task",
    );
    expect(quick?.archiveAt).toBeGreaterThan(clock.now() - 60_000);
    expect((await gateway.store.listQueuedDeliveries(1000)).length).toBeGreaterThan(0);
    await clock.advance(61 * 60_000);
    await eventually(async () => {
      const queued = await gateway.store.listQueuedDeliveries(1000);
      expect(queued).toEqual([]);
    });
    const announces = channel.sent.filter((s) => s.message.kind === "subagent_announce");
    expect(announces).toHaveLength(2);
    expect(
      announces.some(
        (a) => a.message.text.startsWith("Status: error") && a.message.text.includes("gateway restarted"),
      ),
    ).toBe(true);
    expect(announces.some((a) => a.message.text.startsWith("Status: success"))).toBe(true);
    const keys = channel.sent.map((s) => s.idempotencyKey);
    expect(new Set(keys).size).toBe(keys.length);
    const replies = channel.sent.filter((s) => s.message.kind === "reply").map((s) => s.message.text);
    for (const ack of acks.filter((a) => a.text.startsWith("message "))) {
      const run = await gateway.store.getRun(ack.runId);
      if (run?.status === "ok") expect(replies).toContain(`reply to ${ack.text}`);
    }

    // Archive deadlines survive: the finished quick sub-agent was archived once its minute had passed.
    await eventually(async () =>
      expect((await gateway.store.getEntry(quick?.childKey as string))?.archivedAt).toBeDefined(),
    );
    await gateway.close();

    // A second restart replays nothing twice.
    const again = createFakeChannel("chat");
    const second = createGateway({ store: createSqliteStore({ path }), runner, adapters: [again], clock });
    await second.ready;
    await second.close();
    expect(again.sent).toEqual([]);
  });
});
