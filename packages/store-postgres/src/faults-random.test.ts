import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, afterEach, describe, expect, inject, it, onTestFailed } from "vitest";
import { type AcceptedMessage, checkHistory, describeHistory } from "./testing/faults/history-check.js";
import { type ServedGateway, startServeCluster } from "./testing/faults/serve-cluster.js";
import { readWitness, witnessNow } from "./testing/faults/witness.js";
import { freshSchema } from "./testing/helpers.js";

/**
 * A random schedule of faults between two `serve` gateways and Postgres — one gateway cut off (held or reset),
 * both, one direction only, a slow link — with messages to a few sessions sent through either gateway meanwhile,
 * then checked against the witness log: no overlapping executions of a session, every accepted message answered,
 * every wait true. The seed is printed; `FAULT_SEED=<n>` replays a schedule, `FAULT_SOAK=1` runs a long one.
 * Faults here stay shorter than what a lease rides out (8.5 s with the default 15 s lease): every message must end ok.
 */
const postgresUrl = inject("postgresUrl");
const work = mkdtempSync(join(tmpdir(), "sessions-faults-random-"));
const cleanup: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step().catch(() => undefined);
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

const soak = process.env.FAULT_SOAK === "1";
const seed = Number(process.env.FAULT_SEED ?? Date.now() % 2 ** 31);
const STEPS = soak ? 40 : 6;
const SESSIONS = ["agent:main:r0", "agent:main:r1", "agent:main:r2"];

type Fault =
  | { kind: "hold" | "reset"; who: "a" | "b" | "both"; ms: number }
  | { kind: "oneway"; who: "a" | "b"; direction: "toTarget" | "toClient"; ms: number }
  | { kind: "slow"; who: "a" | "b" | "both"; delayMs: number; ms: number };

interface Step {
  fault: Fault;
  /** Messages sent while the fault lasts: a session and the gateway it goes through. */
  sends: { session: number; via: "a" | "b"; runMs: number }[];
}

const who = fc.constantFrom("a" as const, "b" as const);
const step: fc.Arbitrary<Step> = fc.record({
  fault: fc.oneof(
    fc.record({
      kind: fc.constantFrom("hold" as const, "reset" as const),
      who: fc.constantFrom("a" as const, "b" as const, "both" as const),
      ms: fc.integer({ min: 500, max: 4000 }),
    }),
    fc.record({
      kind: fc.constant("oneway" as const),
      who,
      direction: fc.constantFrom("toTarget" as const, "toClient" as const),
      ms: fc.integer({ min: 500, max: 3000 }),
    }),
    fc.record({
      kind: fc.constant("slow" as const),
      who: fc.constantFrom("a" as const, "b" as const, "both" as const),
      delayMs: fc.integer({ min: 20, max: 150 }),
      ms: fc.integer({ min: 500, max: 3000 }),
    }),
  ),
  sends: fc.array(
    fc.record({
      session: fc.integer({ min: 0, max: SESSIONS.length - 1 }),
      via: who,
      runMs: fc.integer({ min: 20, max: 1500 }),
    }),
    { minLength: 1, maxLength: 3 },
  ),
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("a random schedule of network and database faults", () => {
  it(`keeps one run at a time per session and answers every message (seed ${seed})`, async () => {
    process.stderr.write(`faults-random: seed ${seed}${soak ? " (soak)" : ""}\n`);
    const schedule = fc.sample(fc.array(step, { minLength: STEPS, maxLength: STEPS }), {
      seed,
      numRuns: 1,
    })[0] as Step[];
    const witnessFile = join(work, `random-${seed}.jsonl`);
    const gateways = await startServeCluster({
      names: ["a", "b"],
      postgresUrl,
      schema: freshSchema("faults_random"),
      witnessFile,
      work,
      cleanup,
    });
    const [a, b] = gateways as [ServedGateway, ServedGateway];
    onTestFailed(() => {
      process.stderr.write(`faults-random: failed with seed ${seed}: FAULT_SEED=${seed} to replay\n`);
      process.stderr.write(`schedule: ${JSON.stringify(schedule)}\n`);
      for (const g of gateways) process.stderr.write(`--- ${g.name}\n${g.log.join("")}\n`);
    });
    const pick = (name: "a" | "b" | "both") => (name === "both" ? [a, b] : [name === "a" ? a : b]);
    const accepted: AcceptedMessage[] = [];
    // Requests go out as the faults happen: a request through a cut-off gateway waits for its database.
    const requests: Promise<void>[] = [];
    let n = 0;
    for (const { fault, sends } of schedule) {
      const targets = pick(fault.who);
      for (const g of targets) {
        if (fault.kind === "hold") g.proxy.hold();
        else if (fault.kind === "reset") g.proxy.reset();
        else if (fault.kind === "oneway") g.proxy.hold(fault.direction);
        else if (fault.kind === "slow") g.proxy.delay(fault.delayMs);
      }
      for (const send of sends) {
        const id = n++;
        const sessionKey = SESSIONS[send.session] as string;
        const text = `slow:${send.runMs} m${id}`;
        const via = send.via === "a" ? a : b;
        requests.push(
          (async () => {
            // A request cut off with its connection is retried with the same key, as a careful client does.
            for (;;) {
              try {
                const { runId } = await via.client.agent({
                  sessionKey,
                  message: text,
                  idempotencyKey: `r-${seed}-${id}`,
                });
                accepted.push({ runId, sessionKey, text });
                return;
              } catch (error) {
                if (!(error as { retryable?: boolean }).retryable) throw error;
                await sleep(200);
              }
            }
          })(),
        );
      }
      await sleep(fault.ms);
      for (const g of targets) g.proxy.heal();
      await sleep(200);
    }
    await Promise.all(requests);
    const waits = await Promise.all(
      accepted.map(async (m) => {
        const result = await a.client.waitRun(m.runId, { timeoutMs: 180_000 });
        return { runId: m.runId, status: result.status as "ok" | "error" | "timeout", at: witnessNow() };
      }),
    );
    const report = checkHistory({ witness: readWitness(witnessFile), accepted, waits });
    expect(describeHistory(report)).toEqual([]);
    expect(waits.filter((w) => w.status !== "ok")).toEqual([]);
    expect(accepted).toHaveLength(n);
  });
});
