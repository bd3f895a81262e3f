/**
 * One gateway process of the runs/s bench: a gateway on the shared Postgres with the scripted echo runner. Runs
 * one warm-up run in each of its SESSIONS sessions (creating them), prints `ready`, waits for `go` on stdin, then
 * runs RUNS scripted runs over those sessions (agent → agent.wait, SESSIONS at a time) and prints
 * `{"runs":…,"ms":…,"cpuMs":…}` (cpuMs: this process' CPU time over the runs).
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
const run = async (s: number, key: string) => {
  const { runId } = await gateway.agent({ sessionKey: `${prefix}-${s}`, message: key, idempotencyKey: key });
  const done = await gateway.agentWait({ runId, timeoutMs: 60_000 });
  if (done.status !== "ok") throw new Error(`run ${runId} ended ${done.status}: ${done.error}`);
};
await Promise.all(Array.from({ length: sessions }, (_, s) => run(s, `${prefix}-warmup-${s}`)));
process.stdout.write("ready\n");
await new Promise<void>((resolve) => process.stdin.once("data", () => resolve()));
let next = 0;
const started = performance.now();
const cpu = process.cpuUsage();
await Promise.all(
  Array.from({ length: sessions }, async (_, s) => {
    for (let i = next++; i < runs; i = next++) await run(s, `${prefix}-${i}`);
  }),
);
const ms = performance.now() - started;
const used = process.cpuUsage(cpu);
const cpuMs = (used.user + used.system) / 1000;
process.stdout.write(`${JSON.stringify({ runs, ms, cpuMs })}\n`);
await gateway.close({ drainMs: 1000 });
process.exit(0);
