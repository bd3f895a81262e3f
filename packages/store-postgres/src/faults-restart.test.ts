import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it, onTestFailed } from "vitest";
import {
  type AcceptedMessage,
  checkHistory,
  describeHistory,
  type WaitResult,
} from "./testing/faults/history-check.js";
import { type ServedGateway, startServeCluster } from "./testing/faults/serve-cluster.js";
import { readWitness, witnessNow } from "./testing/faults/witness.js";
import { eventually, freshSchema } from "./testing/helpers.js";
import { type LocalPostgres, startLocalPostgres } from "./testing/local-postgres.js";

/**
 * Postgres itself restarted (a fast shutdown, or every process of it killed) under two `sessions-gateway serve`
 * processes with runs in flight, checked against the runner's witness log. A durable Postgres of this file's own:
 * restarting the one the other test files share would fail them, and a killed server must keep what it committed.
 */
const work = mkdtempSync(join(tmpdir(), "sessions-faults-restart-"));
const cleanup: (() => Promise<unknown>)[] = [];
let server: LocalPostgres;
let url: string;
beforeAll(async () => {
  server = await startLocalPostgres({ durable: true });
  url = await server.createDatabase("faults_restart");
});
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step().catch(() => undefined);
});
afterAll(async () => {
  await server?.stop();
  rmSync(work, { recursive: true, force: true });
});

describe("Postgres restarting under the cluster, through sessions-gateway serve", () => {
  for (const how of ["fast", "kill"] as const) {
    it(`a ${how === "fast" ? "fast shutdown and start" : "kill of every Postgres process and a start"} with six runs in flight: all end ok, once each, none ended as if a gateway had died`, async () => {
      const name = `restart_${how}`;
      const witnessFile = join(work, `${name}.jsonl`);
      const gateways = await startServeCluster({
        names: ["a", "b"],
        postgresUrl: url,
        schema: freshSchema(name),
        witnessFile,
        work,
        cleanup,
      });
      onTestFailed(() => {
        for (const g of gateways) process.stderr.write(`--- ${g.name}\n${g.log.join("")}\n`);
        process.stderr.write(`--- witness\n${JSON.stringify(readWitness(witnessFile), null, 1)}\n`);
      });
      const accepted: AcceptedMessage[] = [];
      for (const [i, ms] of [2000, 2500, 3000, 3500, 4000, 4500].entries()) {
        const gateway = gateways[i % 2] as ServedGateway;
        const sessionKey = `agent:main:restart-${i}`;
        const text = `slow:${ms} run ${i}`;
        const { runId } = await gateway.client.agent({
          sessionKey,
          message: text,
          idempotencyKey: `${how}-${i}`,
        });
        accepted.push({ runId, sessionKey, text });
      }
      await eventually(
        () =>
          accepted.every((m) =>
            readWitness(witnessFile).some((r) => r.kind === "exec-start" && r.runId === m.runId),
          ),
        "every run executing",
      );
      await server.restart(how, { downMs: 1000 });
      const upAt = witnessNow();
      const waits: WaitResult[] = await Promise.all(
        accepted.map(async ({ runId }) => {
          const result = await (gateways[0] as ServedGateway).client.waitRun(runId, { timeoutMs: 120_000 });
          return { runId, status: result.status as WaitResult["status"], at: witnessNow() };
        }),
      );
      const report = checkHistory({ witness: readWitness(witnessFile), accepted, waits });
      expect(describeHistory(report)).toEqual([]);
      expect(waits.map((w) => w.status)).toEqual(["ok", "ok", "ok", "ok", "ok", "ok"]);
      // The restart is shorter than the lease: nothing is stopped, each ran once.
      expect(readWitness(witnessFile).filter((r) => r.kind === "exec-start")).toHaveLength(6);
      const last = Math.max(...waits.map((w) => w.at ?? 0));
      process.stderr.write(
        `faults: Postgres restart (${how}): every wait answered ${((last - upAt) / 1000).toFixed(1)} s after it was back; none ran twice\n`,
      );
    });
  }
});
