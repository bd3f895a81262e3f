// A gateway process for the remote-agent crash test: its main agent sends to a remote A2A agent that holds the
// task, and the process prints one JSON line once the send is accepted and once the session holds the remote's
// context (and the task under way); the test then kills it with SIGKILL. Run: node --import tsx remote-crash-child.fixture.ts <db> <card-url>
import { createGateway } from "../create-gateway.js";
import { createScriptedRunner } from "../runner/scripted.js";
import { createSqliteStore } from "../store/sqlite.js";

const [path, cardUrl] = process.argv.slice(2) as [string, string];
const out = (value: unknown) => process.stdout.write(`${JSON.stringify(value)}\n`);
const key = "agent:weather:a2a:main";

const gateway = createGateway({
  store: createSqliteStore({ path }),
  runner: createScriptedRunner({ agents: { main: () => "ok" } }),
  config: {
    tools: { sessions: { visibility: "all" }, agentToAgent: { enabled: true, allow: ["main", "weather"] } },
    agents: { remotes: [{ id: "weather", url: cardUrl }] },
  },
});
await gateway.ready;
const sent = (await gateway.callTool("agent:main:main", "sessions_send", {
  sessionKey: key,
  message: "hold on",
  timeoutSeconds: 0,
})) as { runId: string; status: string };
out({ accepted: sent });
for (;;) {
  const a2a = (await gateway.store.getEntry(key))?.a2a;
  if (a2a !== undefined) {
    out({ contextId: a2a.contextId, running: a2a.running });
    break;
  }
  await new Promise((resolve) => setTimeout(resolve, 10));
}
// Kept alive until the test kills it.
setInterval(() => {}, 1 << 30);
