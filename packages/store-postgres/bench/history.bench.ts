/**
 * `chat.history` limit 50 on a transcript grown through the product's own path — chat.send runs on one gateway, no
 * ANALYZE, the statistics autovacuum happens to have gathered (on a young table: none) — against a 200-message
 * one: `npx tsx bench/history.bench.ts` (`BENCH_SCALE=small`: 2,000 messages instead of 20,000; `BENCH_SMOKE=1`:
 * 200 and 50 messages, 10 samples, to check the bench runs). `postgres.bench.ts`
 * seeds with set-based SQL and ANALYZE, which this does not. Also prints the shared buffers each statement of the
 * call touches (EXPLAIN ANALYZE), which, unlike the times, do not depend on what else the machine is doing.
 */
import { createGateway, createScriptedRunner } from "@sessions/gateway";
import pg from "pg";
import { SMOKE } from "../../gateway/bench/kit.js";
import { createPostgresStore } from "../src/index.js";
import { startLocalPostgres } from "../src/testing/local-postgres.js";

const small = process.env.BENCH_SCALE === "small";
const BIG = SMOKE ? 200 : small ? 2_000 : 20_000;
const SMALL = SMOKE ? 50 : 200;
const ITERATIONS = SMOKE ? 10 : 300;
const ROUNDS = SMOKE ? 1 : 3;
const say = (line: string) => process.stdout.write(`${line}\n`);
const schema = "bench_history";
const keys = { big: "agent:main:big", small: "agent:main:small" };

const server = await startLocalPostgres({ durable: true });
try {
  const url = await server.createDatabase("sessions_bench_history");
  const store = await createPostgresStore({ connectionString: url, schema });
  const gateway = createGateway({
    store,
    runner: createScriptedRunner({ agents: {}, fallback: (turn) => `echo: ${turn.text}` }),
    cluster: false,
  });
  await gateway.ready;
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  try {
    let sent = 0;
    const grow = async (key: string, messages: number) => {
      for (let i = 0; i < messages / 2; i++) {
        const { runId } = await gateway.chat.send({
          sessionKey: key,
          message: `m${i}`,
          idempotencyKey: `h${sent++}`,
        });
        const done = await gateway.agentWait({ runId, timeoutMs: 60_000 });
        if (done.status !== "ok") throw new Error(`run ${runId} ended ${done.status}: ${done.error}`);
      }
    };
    const started = performance.now();
    await grow(keys.small, SMALL);
    await grow(keys.big, BIG);
    const seconds = (performance.now() - started) / 1000;

    const p50 = async (key: string) => {
      for (let i = 0; i < 10; i++) await gateway.chat.history({ sessionKey: key, limit: 50 });
      const samples: number[] = [];
      for (let i = 0; i < ITERATIONS; i++) {
        const start = performance.now();
        await gateway.chat.history({ sessionKey: key, limit: 50 });
        samples.push(performance.now() - start);
      }
      samples.sort((a, b) => a - b);
      return samples[Math.floor(samples.length / 2)] as number;
    };
    // Interleaved, so that both sides see the same load.
    const times = { big: [] as number[], small: [] as number[] };
    for (let round = 0; round < ROUNDS; round++) {
      times.big.push(await p50(keys.big));
      times.small.push(await p50(keys.small));
    }
    const best = (samples: number[]) => Math.min(...samples);

    // The statements of one history call, as the store sends them.
    const buffers = async (key: string) => {
      const recorded: { text: string; values: unknown[] }[] = [];
      const original = pg.Client.prototype.query;
      pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
        if (typeof args[0] === "string")
          recorded.push({ text: args[0], values: (args[1] ?? []) as unknown[] });
        return (original as (...a: unknown[]) => unknown).apply(this, args);
      } as typeof original;
      try {
        await gateway.chat.history({ sessionKey: key, limit: 50 });
      } finally {
        pg.Client.prototype.query = original;
      }
      const counts: number[] = [];
      for (const { text, values } of recorded) {
        if (!/^\s*SELECT\b/i.test(text) || !text.includes(`"${schema}"`)) continue;
        const { rows } = await admin.query(`EXPLAIN (FORMAT JSON, ANALYZE, BUFFERS) ${text}`, values);
        const plan = (rows[0] as { "QUERY PLAN": [{ Plan: Record<string, number> }] })["QUERY PLAN"][0].Plan;
        counts.push((plan["Shared Hit Blocks"] ?? 0) + (plan["Shared Read Blocks"] ?? 0));
      }
      return counts.join(" + ");
    };

    say(
      `# chat.history limit 50 on Postgres, transcripts grown through chat.send (${SMOKE ? "BENCH_SMOKE=1" : small ? "BENCH_SCALE=small" : "full size"}), ${new Date().toISOString()}`,
    );
    say(`(${(BIG + SMALL).toLocaleString("en")} messages sent in ${seconds.toFixed(1)} s, no ANALYZE)`);
    say(
      `\n| transcript | p50 ms (best of ${ROUNDS} × ${ITERATIONS}) | shared buffers (entries + transcripts + messages) |`,
    );
    say("| --- | --- | --- |");
    say(
      `| ${BIG.toLocaleString("en")} messages | ${best(times.big).toFixed(2)} | ${await buffers(keys.big)} |`,
    );
    say(
      `| ${SMALL.toLocaleString("en")} messages | ${best(times.small).toFixed(2)} | ${await buffers(keys.small)} |`,
    );
  } finally {
    await admin.end();
    await gateway.close({ drainMs: 100 });
  }
} finally {
  await server.stop();
}
