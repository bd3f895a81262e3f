/**
 * One gateway process of the runs/s bench: a gateway on the shared Postgres with the scripted echo runner. Prints
 * `ready`, waits for `go` on stdin, then runs RUNS scripted runs over SESSIONS sessions of its own (agent →
 * agent.wait, SESSIONS at a time) and prints `{"runs":…,"ms":…}`.
 */
import { createGateway, createScriptedRunner } from "@sessions/gateway";
import { createPostgresStore } from "../src/index.js";

const runs = Number(process.env.RUNS ?? 1000);
const sessions = Number(process.env.SESSIONS ?? 64);
const prefix = process.env.PREFIX ?? "p";
const store = await createPostgresStore({
  connectionString: process.env.DATABASE_URL as string,
  schema: process.env.SCHEMA as string,
  maxConnections: Number(process.env.POOL ?? 10),
});
const gateway = createGateway({
  store,
  runner: createScriptedRunner({ agents: {}, fallback: (turn) => `echo: ${turn.text}` }),
  ...(process.env.CLUSTER === "0" ? { cluster: false } : {}),
});
await gateway.ready;
process.stdout.write("ready\n");
await new Promise<void>((resolve) => process.stdin.once("data", () => resolve()));
let next = 0;
const started = performance.now();
const cpu = process.cpuUsage();
await Promise.all(
  Array.from({ length: sessions }, async (_, s) => {
    for (;;) {
      const i = next++;
      if (i >= runs) return;
      const { runId } = await gateway.agent({
        sessionKey: `${prefix}-${s}`,
        message: `m${i}`,
        idempotencyKey: `${prefix}-${i}`,
      });
      const done = await gateway.agentWait({ runId, timeoutMs: 60_000 });
      if (done.status !== "ok") throw new Error(`run ${runId} ended ${done.status}: ${done.error}`);
    }
  }),
);
const ms = performance.now() - started;
const used = process.cpuUsage(cpu);
const cpuMs = (used.user + used.system) / 1000;
process.stdout.write(`${JSON.stringify({ runs, ms, cpuMs })}\n`);
await gateway.close({ drainMs: 1000 });
process.exit(0);
