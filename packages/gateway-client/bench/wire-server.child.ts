// Child process of the pipelined-runs part (pipeline.ts): `node --import tsx bench/wire-server.child.ts <db> <token>`.
// A gateway on a SQLite file with the scripted echo runner, listening on loopback: what `sessions-gateway serve`
// runs, alone in its process so that its CPU is its own. Sends `{ url }` over IPC once listening; answers IPC
// messages: "cpu" with its `process.cpuUsage()`, "connections" with its open connections, "stop" by closing and
// exiting. `--cpu-prof` in NODE_OPTIONS profiles it.
import { createGateway, createScriptedRunner, createSqliteStore } from "@sessions/gateway";

const [dbPath, token] = process.argv.slice(2);
if (dbPath === undefined || token === undefined || process.send === undefined) {
  console.error("usage: fork wire-server.child.ts <sqlite path> <token> (with an IPC channel)");
  process.exit(2);
}
const send = process.send.bind(process);

const gateway = createGateway({
  runner: createScriptedRunner({ agents: {}, fallback: (turn) => `echo: ${turn.text}` }),
  store: createSqliteStore({ path: dbPath }),
});
const server = await gateway.listen({ port: 0, auth: { token } });
send({ type: "listening", url: server.url });

process.on("message", (message: unknown) => {
  if (message === "cpu") send({ type: "cpu", usage: process.cpuUsage() });
  if (message === "connections") send({ type: "connections", count: server.connections() });
  if (message === "stop") {
    void gateway.close({ drainMs: 0 }).then(() => process.exit(0));
  }
});
process.on("disconnect", () => process.exit(0));
