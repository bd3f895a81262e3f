// A gateway process for the crash test: it takes traffic, prints one JSON line per acknowledged message, and is
// killed with SIGKILL by the test. Run: node --import tsx crash-child.fixture.ts <db-path>
import { SessionsError } from "@sessions/core";
import type { ChannelAdapterV1 } from "./adapter.js";
import { createGateway } from "./create-gateway.js";
import { createScriptedRunner } from "./runner/scripted.js";
import { createSqliteStore } from "./store/sqlite.js";

const path = process.argv[2] as string;
const out = (value: unknown) => process.stdout.write(`${JSON.stringify(value)}\n`);

// The platform is down for this whole process: every delivery stays queued in the outbox.
const downPlatform: ChannelAdapterV1 = {
  specVersion: 1,
  channel: "chat",
  capabilities: {},
  async deliver() {
    throw new SessionsError("unavailable", "platform down", { retryAfterMs: 3_600_000 });
  },
};

const runner = createScriptedRunner({
  agents: {
    main: async (turn) => {
      if (turn.kind === "subagent") {
        if (turn.text === "slow task") await turn.sleep(600_000);
        return "Result: quick findings";
      }
      if (turn.kind === "subagent_announce") return "Result: announced";
      if (turn.text === "spawn quick") await turn.callTool("sessions_spawn", { task: "quick task" });
      if (turn.text === "spawn slow") await turn.callTool("sessions_spawn", { task: "slow task" });
      if (turn.text === "slow") await turn.sleep(600_000);
      return `reply to ${turn.text}`;
    },
  },
});

const gateway = createGateway({
  store: createSqliteStore({ path }),
  runner,
  adapters: [downPlatform],
  config: { agents: { defaults: { subagents: { archiveAfterMinutes: 1 } } } },
});
await gateway.ready;

const dm = (peer: string, text: string) => ({
  channel: "chat",
  chatType: "direct" as const,
  peerId: peer,
  senderId: peer,
  to: `user:${peer}`,
  text,
});
async function ack(peer: string, text: string) {
  const result = await gateway.receive(dm(peer, text));
  out({ ack: true, sessionKey: result.sessionKey, runId: result.runId, text });
  return result;
}

const quick = await ack("alice", "spawn quick");
await gateway.agentWait({ runId: quick.runId as string, timeoutMs: 60_000 });
// The quick sub-agent must be over before the kill (the test expects its success announced, not an error): no
// bound here, the test's guard on "ready" ends a child that never gets there.
while ((await gateway.store.listSubagents({ statuses: ["done"] })).length !== 1) {
  await new Promise((r) => setTimeout(r, 10));
}
const slowSpawn = await ack("bob", "spawn slow");
await gateway.agentWait({ runId: slowSpawn.runId as string, timeoutMs: 60_000 });
await ack("carol", "slow");
out({ ready: true });

// Keep traffic flowing until the test kills us.
for (let i = 0; ; i++) {
  await ack(`user${i % 7}`, `message ${i}`);
}
