// 4. Runs per second (agent + waitRun): latency one at a time, then throughput in process, over one connection
// and over several, on a SQLite file of its own.
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { createGateway, createScriptedRunner, createSqliteStore, type Gateway } from "@sessions/gateway";
import type { GatewayClient } from "../src/index.js";
import {
  CONNECTIONS,
  check,
  connect,
  IN_FLIGHT_PER_CONNECTION,
  latencyRow,
  measure,
  note,
  RUN_LATENCY,
  RUN_REPEATS,
  RUNS,
  rows,
  type Stats,
  stats,
  WARMUP_RUNS,
} from "./harness.js";

interface RunApi {
  start(sessionKey: string, idempotencyKey: string): Promise<string>;
  wait(runId: string): Promise<string>;
}

const viaClient = (client: GatewayClient): RunApi => ({
  start: async (sessionKey, idempotencyKey) =>
    (await client.agent({ message: "ping", sessionKey, idempotencyKey })).runId,
  wait: async (runId) => (await client.waitRun(runId, { timeoutMs: 30_000 })).status,
});

const inProcessApi = (gateway: Gateway): RunApi => ({
  start: async (sessionKey, idempotencyKey) =>
    (await gateway.agent({ message: "ping", sessionKey, idempotencyKey })).runId,
  wait: async (runId) => (await gateway.agentWait({ runId, timeoutMs: 30_000 })).status,
});

/**
 * `total` runs spread over the connections, `inFlight` at a time per connection. Every in-flight slot has its own
 * session key (runs of one session queue on its lane), reused run after run.
 */
async function runBatch(apis: RunApi[], total: number, inFlight: number, tag: string) {
  const perApi = Math.ceil(total / apis.length);
  let failed = 0;
  let done = 0;
  const t0 = performance.now();
  await Promise.all(
    apis.flatMap((api, c) =>
      Array.from({ length: inFlight }, async (_, w) => {
        const sessionKey = `bench:${tag}:c${c}:w${w}`;
        for (let i = w; i < perApi; i += inFlight) {
          const runId = await api.start(sessionKey, `${tag}-${c}-${i}`);
          const status = await api.wait(runId);
          if (status === "ok") done++;
          else failed++;
        }
      }),
    ),
  );
  const elapsed = performance.now() - t0;
  check(failed === 0, `${tag}: ${failed} run(s) did not end ok`);
  return { runs: done, elapsed, perSecond: (done / elapsed) * 1000 } satisfies Throughput;
}

interface Throughput {
  runs: number;
  elapsed: number;
  perSecond: number;
}

export async function runsBench(dir: string): Promise<void> {
  const token = randomBytes(24).toString("hex");
  const gateway = createGateway({
    runner: createScriptedRunner({ agents: {}, fallback: () => "ok" }),
    store: createSqliteStore({ path: join(dir, "runs.db") }),
  });
  const server = await gateway.listen({ port: 0, auth: { token } });
  const open = new Set<GatewayClient>();
  const connectRun = async () => {
    const client = await connect(server, token);
    open.add(client);
    return client;
  };
  const closeAll = async () => {
    await Promise.all([...open].map((client) => client.close()));
    open.clear();
  };
  const local = inProcessApi(gateway);
  try {
    // Warm-up, then the latency of one run at a time (in process and over one connection, interleaved).
    await runBatch([local], WARMUP_RUNS, IN_FLIGHT_PER_CONNECTION, "warm-local");
    const first = viaClient(await connectRun());
    await runBatch([first], WARMUP_RUNS, IN_FLIGHT_PER_CONNECTION, "warm-wire");
    let seq = 0;
    const serial = (api: RunApi, tag: string) => async () => {
      seq++;
      const runId = await api.start(`bench:serial-${tag}`, `serial-${tag}-${seq}`);
      check((await api.wait(runId)) === "ok", "serial run ended ok");
    };
    const [oneLocal, oneWire] = (await measure(
      [serial(local, "local"), serial(first, "wire")],
      RUN_LATENCY,
    )) as [Stats, Stats];
    await closeAll();
    latencyRow("agent + agentWait in process, one at a time (latency)", oneLocal);
    latencyRow("agent + waitRun over the wire, one at a time (latency)", oneWire);

    // Throughput: each configuration RUN_REPEATS times, interleaved, so disk and checkpoint noise hits all alike.
    const results = { local: [] as Throughput[], single: [] as Throughput[], wide: [] as Throughput[] };
    const multi: Throughput[] = [];
    let eventsPerRunSingle = 0;
    let eventsPerRunMulti = 0;
    for (let rep = 0; rep < RUN_REPEATS; rep++) {
      // In process while no connection is open.
      results.local.push(await runBatch([local], RUNS, IN_FLIGHT_PER_CONNECTION, `local-${rep}`));

      const one = await connectRun();
      let events = 0;
      const off = one.on("*", () => events++);
      const api = viaClient(one);
      results.single.push(await runBatch([api], RUNS, IN_FLIGHT_PER_CONNECTION, `single-${rep}`));
      eventsPerRunSingle = events / RUNS;
      off();
      results.wide.push(
        await runBatch([api], RUNS, IN_FLIGHT_PER_CONNECTION * CONNECTIONS, `single-wide-${rep}`),
      );
      await closeAll();

      const clients: GatewayClient[] = [];
      for (let c = 0; c < CONNECTIONS; c++) clients.push(await connectRun());
      let received = 0;
      const offs = clients.map((client) => client.on("*", () => received++));
      multi.push(await runBatch(clients.map(viaClient), RUNS, IN_FLIGHT_PER_CONNECTION, `multi-${rep}`));
      eventsPerRunMulti = received / RUNS;
      for (const unsubscribe of offs) unsubscribe();
      await closeAll();
    }

    const throughputRow = (task: string, reps: Throughput[]) => {
      const perSecond = stats(reps.map((r) => r.perSecond));
      const low = Math.min(...reps.map((r) => r.perSecond));
      rows.push({
        task,
        p50: "",
        "p95 / total": `${perSecond.p50.toFixed(0)} runs/s (${low.toFixed(0)}–${perSecond.max.toFixed(0)})`,
        target: "",
        verdict: "",
      });
    };
    throughputRow(`in process: agent + agentWait, ${IN_FLIGHT_PER_CONNECTION} in flight`, results.local);
    throughputRow(`1 connection: agent + waitRun, ${IN_FLIGHT_PER_CONNECTION} in flight`, results.single);
    throughputRow(
      `1 connection: agent + waitRun, ${IN_FLIGHT_PER_CONNECTION * CONNECTIONS} in flight`,
      results.wide,
    );
    throughputRow(
      `${CONNECTIONS} connections: agent + waitRun, ${IN_FLIGHT_PER_CONNECTION} in flight each`,
      multi,
    );
    note(
      `runs/s: median of ${RUN_REPEATS} batches of ${RUNS.toLocaleString("en-US")} runs (min–max in brackets)`,
    );
    note(
      `events received per run: ${eventsPerRunSingle.toFixed(1)} with 1 connection;` +
        ` ${eventsPerRunMulti.toFixed(1)} in total with ${CONNECTIONS} connections` +
        ` (a connection gets the chat/agent events of the runs it started, unless it subscribes to more)`,
    );
  } finally {
    await closeAll();
    await gateway.close({ drainMs: 1000 });
  }
}
