import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { freshSchema, storeOpener } from "./testing/helpers.js";

/**
 * run_start and run_end find rows by key: a run by its id and status together (the fence of a run's end and of a
 * lane's next run), a lease by its name. Their plans are made once per connection and kept, from statistics that may
 * be from a quiet moment (no run queued, no lease held), and then serve a backlog of thousands: each must reach its
 * row by key whatever those statistics say. Work is counted, not timed: the rows and buffers the generic plan of
 * each statement shape reads, under EXPLAIN ANALYZE, with the settings those functions run under.
 */
const url = inject("postgresUrl");
const stores = storeOpener(url);
const schema = freshSchema("key_plans");
const DONE = 3_000;
const QUEUED = 2_000;
const LEASES = 2_000;
/** The index's path and the run's heap page, a few times over for dead versions: far below a backlog's pages. */
const BUFFERS = 12;

/** The shapes run_end's statements find a run with (migrations.ts, migrations-lanes.ts). */
const FENCES = [
  `SELECT 1 FROM "${schema}".runs r WHERE r.run_id = $1 AND r.status IN ('queued', 'running')
     AND r.owner IS NOT DISTINCT FROM $2`,
  `SELECT 1 FROM "${schema}".runs r WHERE r.run_id = $1 AND r.status = 'queued'
     AND r.owner IS NOT DISTINCT FROM $2`,
];

interface PlanNode {
  "Actual Rows": number;
  "Rows Removed by Filter"?: number;
  "Rows Removed by Index Recheck"?: number;
  "Shared Hit Blocks": number;
  "Shared Read Blocks": number;
  Plans?: PlanNode[];
}
const walk = (node: PlanNode): PlanNode[] => [node, ...(node.Plans ?? []).flatMap(walk)];

/**
 * The generic plan of `text` (as PL/pgSQL keeps it) made now, then, after `grow`, run for one queued run / lease:
 * the buffers and rows it read.
 */
async function keptPlanCost(
  client: pg.Client,
  text: string,
  args = "'q-1000', 'gw'",
  grow: () => Promise<unknown> = async () => undefined,
): Promise<{ buffers: number; rows: number; plan: string }> {
  await client.query("DEALLOCATE ALL");
  await client.query(`PREPARE keyed(text, text) AS ${text}`);
  await client.query(`EXECUTE keyed(${args})`);
  await grow();
  const { rows } = await client.query<{ "QUERY PLAN": [{ Plan: PlanNode }] }>(
    `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE keyed(${args})`,
  );
  const plan = (rows[0] as { "QUERY PLAN": [{ Plan: PlanNode }] })["QUERY PLAN"][0].Plan;
  const nodes = walk(plan);
  return {
    buffers: plan["Shared Hit Blocks"] + plan["Shared Read Blocks"],
    rows: Math.max(
      ...nodes.map(
        (node) =>
          node["Actual Rows"] +
          (node["Rows Removed by Filter"] ?? 0) +
          (node["Rows Removed by Index Recheck"] ?? 0),
      ),
    ),
    plan: JSON.stringify(plan),
  };
}

let client: pg.Client;
beforeAll(async () => {
  await stores.open(schema);
  await stores.closeAll();
  client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query(`ALTER TABLE "${schema}".runs SET (autovacuum_enabled = false)`);
  const insert = (prefix: string, status: string, count: number) =>
    client.query(
      `INSERT INTO "${schema}".runs (run_id, status, owner, data)
         SELECT $1 || i, $2, 'gw', '{}' FROM generate_series(1, $3::int) AS i`,
      [prefix, status, count],
    );
  // Statistics of a quiet moment: every run ended. Then a backlog arrives, which they do not know of.
  await insert("d-", "ok", DONE);
  await client.query(`ANALYZE "${schema}".runs`);
  await insert("q-", "queued", QUEUED);
  // A lease table as a vacuum leaves it once almost every lane was given back: a page, statistics of a few rows.
  await client.query(`ALTER TABLE "${schema}".leases SET (autovacuum_enabled = false)`);
  await client.query(
    `INSERT INTO "${schema}".leases (name, owner, acquired_at, expires_at)
       SELECT 'quiet:' || i, 'gw', 0, 1 FROM generate_series(1, 3) AS i`,
  );
  await client.query(`VACUUM ANALYZE "${schema}".leases`);
  await client.query("SET plan_cache_mode = force_generic_plan");
  // What run_start and run_end run under, each overload of each (migration 9): every setting they carry, all alike.
  const { rows } = await client.query<{ config: string[] | null }>(
    `SELECT proconfig AS config FROM pg_proc
      WHERE pronamespace = $1::regnamespace AND proname IN ('run_start', 'run_end')`,
    [`"${schema}"`],
  );
  expect(rows.length).toBeGreaterThanOrEqual(4);
  const settings = new Set(rows.map((row) => JSON.stringify(row.config ?? [])));
  expect(settings.size).toBe(1);
  functionSettings = rows[0]?.config ?? [];
});
let functionSettings: string[] = [];

/** Lanes taken (in the transaction of `asInFunctions`, given back after). */
const takeLanes = () =>
  client.query(
    `INSERT INTO "${schema}".leases (name, owner, acquired_at, expires_at)
       SELECT 'lane:' || i, 'gw', 0, 1 FROM generate_series(1, $1::int) AS i`,
    [LEASES],
  );

/** Runs `check` under the settings of run_start and run_end (`SET` clauses apply to the plans made inside them). */
async function asInFunctions<T>(check: () => Promise<T>): Promise<T> {
  await client.query("BEGIN");
  try {
    for (const setting of functionSettings) {
      const [name, value] = setting.split("=") as [string, string];
      await client.query("SELECT set_config($1, $2, true)", [name, value]);
    }
    return await check();
  } finally {
    await client.query("ROLLBACK");
  }
}
afterAll(async () => {
  await client.end();
});

const LEASE = `SELECT l.owner FROM "${schema}".leases l WHERE l.name = $1 AND $2 IS NOT NULL FOR SHARE`;

describe("finding rows by key in run_start and run_end on Postgres", () => {
  it("reaches the run by its id under statistics that saw no run queued", async () => {
    for (const text of FENCES) {
      const cost = await asInFunctions(() => keptPlanCost(client, text));
      expect(cost.rows, cost.plan).toBeLessThanOrEqual(1);
      expect(cost.buffers, cost.plan).toBeLessThanOrEqual(BUFFERS);
    }
  });

  it("reaches a lease by its name under statistics of a lease table with few leases", async () => {
    // The premise: without those settings, the plan made from these statistics reads every lease. (First: the lanes
    // taken and given back leave the table bigger than a vacuum would.)
    const without = await asInFunctions(async () => {
      await client.query("SET LOCAL enable_seqscan = on");
      return keptPlanCost(client, LEASE, "'lane:1000', 'x'", takeLanes);
    });
    expect(without.rows, without.plan).toBeGreaterThanOrEqual(LEASES);
    const cost = await asInFunctions(() => keptPlanCost(client, LEASE, "'lane:1000', 'x'", takeLanes));
    expect(cost.rows, cost.plan).toBeLessThanOrEqual(1);
    expect(cost.buffers, cost.plan).toBeLessThanOrEqual(BUFFERS);
  });

  it("would read the backlog through an index of every run's status (the index migration 9 replaced)", async () => {
    // The premise of the test above: under these statistics the planner prefers such an index, and pays for it.
    await client.query(`CREATE INDEX runs_status_before ON "${schema}".runs (status)`);
    try {
      let most = 0;
      for (const text of FENCES) most = Math.max(most, (await keptPlanCost(client, text)).rows);
      expect(most).toBeGreaterThanOrEqual(QUEUED);
    } finally {
      await client.query(`DROP INDEX "${schema}".runs_status_before`);
    }
  });
});
