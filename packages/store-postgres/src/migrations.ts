import { SessionsError } from "@sessions/core";
import type pg from "pg";

/** One step of the schema; `up` runs in its own transaction together with its row in `schema_migrations`. */
export interface Migration {
  version: number;
  description: string;
  /** The SQL, given the quoted schema name. */
  up(schema: string): string;
}

// Text keys that are sorted or compared as prefixes use the "C" collation: byte order, as JavaScript compares
// them, whatever the database's locale.
const VERSION_1 = (s: string) => `
CREATE TABLE ${s}.entries (
  key text COLLATE "C" PRIMARY KEY,
  session_id text NOT NULL,
  agent_id text NOT NULL,
  kind text NOT NULL,
  updated_at bigint NOT NULL,
  spawned_by text,
  label text,
  display_name text,
  archived boolean NOT NULL DEFAULT false,
  data text NOT NULL
);
CREATE INDEX entries_updated ON ${s}.entries (archived, updated_at DESC, key);
CREATE INDEX entries_kind ON ${s}.entries (archived, kind, updated_at DESC, key);
CREATE INDEX entries_agent ON ${s}.entries (archived, agent_id, updated_at DESC, key);
CREATE INDEX entries_spawned_by ON ${s}.entries (spawned_by, updated_at DESC);
CREATE INDEX entries_session_id ON ${s}.entries (session_id);
CREATE INDEX entries_label ON ${s}.entries (label);

CREATE TABLE ${s}.transcripts (
  session_key text COLLATE "C" PRIMARY KEY,
  last_seq bigint NOT NULL
);
CREATE TABLE ${s}.messages (
  session_key text COLLATE "C" NOT NULL,
  seq bigint NOT NULL,
  data text NOT NULL,
  PRIMARY KEY (session_key, seq)
);

CREATE TABLE ${s}.runs (
  run_id text PRIMARY KEY,
  status text NOT NULL,
  idempotency_key text UNIQUE,
  follow_up_pending boolean NOT NULL DEFAULT false,
  owner text,
  data text NOT NULL
);
CREATE INDEX runs_status ON ${s}.runs (status);
CREATE INDEX runs_follow_up ON ${s}.runs (follow_up_pending) WHERE follow_up_pending;

CREATE TABLE ${s}.deliveries (
  id text COLLATE "C" PRIMARY KEY,
  idempotency_key text NOT NULL UNIQUE,
  session_key text NOT NULL,
  run_id text,
  status text NOT NULL,
  next_attempt_at bigint NOT NULL,
  created_at bigint NOT NULL,
  lease_owner text,
  lease_until bigint,
  data text NOT NULL
);
CREATE INDEX deliveries_due ON ${s}.deliveries (next_attempt_at, id) WHERE status = 'queued';
CREATE INDEX deliveries_session ON ${s}.deliveries (session_key, created_at DESC);
CREATE INDEX deliveries_run ON ${s}.deliveries (run_id);
CREATE INDEX deliveries_created ON ${s}.deliveries (created_at DESC, id DESC);

CREATE TABLE ${s}.routes (
  session_key text NOT NULL,
  channel text NOT NULL,
  account_id text NOT NULL,
  updated_at bigint NOT NULL,
  data text NOT NULL,
  PRIMARY KEY (session_key, channel, account_id)
);

CREATE TABLE ${s}.subagents (
  child_key text PRIMARY KEY,
  requester_key text NOT NULL,
  status text NOT NULL,
  created_at bigint NOT NULL,
  archive_at bigint,
  data text NOT NULL
);
CREATE INDEX subagents_requester ON ${s}.subagents (requester_key, status);
CREATE INDEX subagents_status ON ${s}.subagents (status);
CREATE INDEX subagents_archive ON ${s}.subagents (archive_at) WHERE archive_at IS NOT NULL;

CREATE TABLE ${s}.thread_bindings (
  channel text NOT NULL,
  account_id text NOT NULL,
  thread_id text NOT NULL,
  session_key text NOT NULL,
  data text NOT NULL,
  PRIMARY KEY (channel, account_id, thread_id)
);
CREATE INDEX thread_bindings_session ON ${s}.thread_bindings (session_key);

CREATE TABLE ${s}.leases (
  name text COLLATE "C" PRIMARY KEY,
  owner text NOT NULL,
  acquired_at bigint NOT NULL,
  expires_at bigint NOT NULL,
  data text
);
`;

/** Every schema version in order. Append only: a released migration never changes. */
export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    description:
      "entries, transcripts with per-session sequence counters, runs, outbox, routes, sub-agents, thread bindings, leases",
    up: VERSION_1,
  },
];

/**
 * The schema version this package writes: the last of {@link MIGRATIONS}. `createPostgresStore` migrates an older
 * schema up to it and refuses (`unavailable`, field `schema`) a schema a newer version of the package wrote.
 */
export const SCHEMA_VERSION = MIGRATIONS[MIGRATIONS.length - 1]?.version ?? 0;

/** The highest version recorded in `schema_migrations`; 0 for a schema that does not exist yet. */
export async function schemaVersion(client: pg.ClientBase, schema: string): Promise<number> {
  const table = await client.query<{ exists: boolean }>("SELECT to_regclass($1) IS NOT NULL AS exists", [
    `${schema}.schema_migrations`,
  ]);
  if (!table.rows[0]?.exists) return 0;
  const row = await client.query<{ version: number | null }>(
    `SELECT max(version)::int AS version FROM ${schema}.schema_migrations`,
  );
  return row.rows[0]?.version ?? 0;
}

/**
 * Brings `schema` to `SCHEMA_VERSION`, one migration per transaction, under an advisory lock so that gateways
 * starting together migrate once (the others wait, then find nothing to do). A schema written by a newer
 * version of this package is refused.
 */
export async function migrate(client: pg.ClientBase, schema: string, where: string): Promise<number> {
  const lockKey = `sessions.migrate:${schema}`;
  await client.query("SELECT pg_advisory_lock(hashtextextended($1, 0))", [lockKey]);
  try {
    await client.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
    await client.query(`CREATE TABLE IF NOT EXISTS ${schema}.schema_migrations (
      version integer PRIMARY KEY,
      description text NOT NULL,
      applied_at timestamptz NOT NULL DEFAULT now()
    )`);
    const current = await schemaVersion(client, schema);
    if (current > SCHEMA_VERSION) {
      throw new SessionsError(
        "unavailable",
        `Postgres schema ${schema} at ${where} has version ${current}; this @sessions/store-postgres understands up to ${SCHEMA_VERSION}`,
        { field: "schema" },
      );
    }
    for (const migration of MIGRATIONS) {
      if (migration.version <= current) continue;
      await client.query("BEGIN");
      try {
        await client.query(migration.up(schema));
        await client.query(`INSERT INTO ${schema}.schema_migrations (version, description) VALUES ($1, $2)`, [
          migration.version,
          migration.description,
        ]);
        await client.query("COMMIT");
      } catch (error) {
        await client.query("ROLLBACK").catch(() => undefined);
        throw error;
      }
    }
    return Math.max(current, SCHEMA_VERSION);
  } finally {
    await client
      .query("SELECT pg_advisory_unlock(hashtextextended($1, 0))", [lockKey])
      .catch(() => undefined);
  }
}
