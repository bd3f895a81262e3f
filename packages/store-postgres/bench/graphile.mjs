// The graphile-worker rows of postgres.bench.ts and serve.bench.ts: graphile-worker (0.18, which needs Node >= 22.18,
// so the benches run this file with the Node 22 that bench/graphile-node.ts finds) on the bench's Postgres, measured
// end to end the way the gateways are. Plain JavaScript: Node 22 runs it without tsx.
//
// Env: DATABASE_URL, SCHEMA (a fresh one: the migrations install graphile-worker there), SHAPE (serial or backlog),
// JOBS (measured), WARMUP (jobs run before the measurement, in the same shape), IN_FLIGHT (500), QUEUES (200),
// CONCURRENCY (24), POLL_MS (100), LOCAL_QUEUE (off: a size > 1 turns on graphile-worker's local queue, which
// fetches and locks jobs in batches).
// Installs the schema, starts a worker (CONCURRENCY jobs at once, a no-op task, LISTEN/NOTIFY for new jobs,
// completions batched with completeJobBatchDelay 0), runs WARMUP jobs, prints `ready` and waits for a line on
// stdin. Then, SHAPE serial: IN_FLIGHT producers each add a job with `addJob()` (its own call, its own transaction)
// and wait for the task to have run before adding the next, until JOBS jobs ran. SHAPE backlog: JOBS `addJob()`
// calls at once, job n in the named queue `q<n % QUEUES>` (a named queue runs one job at a time, as a session
// runs one run at a time), then waits for every task. Either way the clock stops once every completion is
// committed (the jobs table is empty). Prints `{"jobs":…,"ms":…,"cpuMs":…}` (cpuMs: this process' CPU time).
import { Logger, makeWorkerUtils, parseCronItems, run, runMigrations } from "graphile-worker";

const env = (name, fallback) => process.env[name] ?? fallback;
const connectionString = env("DATABASE_URL");
const schema = env("SCHEMA", "graphile_worker_bench");
const jobs = Number(env("JOBS", 5000));
const warmup = Number(env("WARMUP", 500));
const inFlight = Number(env("IN_FLIGHT", 500));
const shape = env("SHAPE", "serial");
const queues = Number(env("QUEUES", 200));
const concurrency = Number(env("CONCURRENCY", 24));
const pollInterval = Number(env("POLL_MS", 100));
const localQueue = Number(env("LOCAL_QUEUE", -1));

// Warnings and errors only: graphile-worker logs every job at info level otherwise (NO_LOG_SUCCESS is set too).
const logger = new Logger(() => (level, message) => {
  if (level === "error" || level === "warning")
    process.stderr.write(`graphile-worker ${level}: ${message}\n`);
});

/** Producers waiting for their job's task to run, by the job's number. */
const waiting = new Map();
const taskList = {
  noop: async (payload) => {
    const resolve = waiting.get(payload.n);
    waiting.delete(payload.n);
    resolve?.();
  },
};

await runMigrations({ connectionString, schema, logger });
const utils = await makeWorkerUtils({ connectionString, schema, logger, maxPoolSize: 10 });
const runner = await run({
  connectionString,
  schema,
  logger,
  concurrency,
  // graphile-worker's advice: at least concurrency + 2.
  maxPoolSize: concurrency + 2,
  pollInterval,
  noHandleSignals: true,
  taskList,
  parsedCronItems: parseCronItems([]),
  preset: {
    worker: { completeJobBatchDelay: 0, ...(localQueue > 1 ? { localQueue: { size: localQueue } } : {}) },
  },
});

let next = 0;
/** Runs `count` jobs with `inFlight` producers, job numbers from `next` on. */
async function serial(count) {
  const end = next + count;
  await Promise.all(
    Array.from({ length: Math.min(inFlight, count) }, async () => {
      for (let n = next++; n < end; n = next++) {
        const ran = new Promise((resolve) => waiting.set(n, resolve));
        await utils.addJob("noop", { n });
        await ran;
      }
    }),
  );
  next = end;
}

/** Adds `count` jobs at once over `queues` named queues, then waits for every task to have run. */
async function backlog(count) {
  const numbers = Array.from({ length: count }, (_, i) => next + i);
  next += count;
  const ran = numbers.map((n) => new Promise((resolve) => waiting.set(n, resolve)));
  await Promise.all(numbers.map((n) => utils.addJob("noop", { n }, { queueName: `q${n % queues}` })));
  await Promise.all(ran);
}

async function load(count) {
  await (shape === "backlog" ? backlog(count) : serial(count));
  // Completions are written by the worker after the task returns: wait for all of them (polled only now, so the
  // polls are a few statements at the end, not a stream beside the load).
  for (;;) {
    const { rows } = await utils.withPgClient((client) =>
      client.query(`SELECT count(*)::int AS n FROM ${client.escapeIdentifier(schema)}._private_jobs`),
    );
    if (rows[0].n === 0) return;
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

await load(warmup);
process.stdout.write("ready\n");
await new Promise((resolve) => process.stdin.once("data", resolve));
const cpu = process.cpuUsage();
const started = performance.now();
await load(jobs);
const ms = performance.now() - started;
const used = process.cpuUsage(cpu);
process.stdout.write(`${JSON.stringify({ jobs, ms, cpuMs: (used.user + used.system) / 1000 })}\n`);
await runner.stop();
await utils.release();
process.exit(0);
