import { SessionsError } from "@sessions/core";
import type pg from "pg";
import { endTouchingOncePerSecond } from "./end-touch.js";
import { VERSION_8 } from "./migrations-cached-plans.js";
import { VERSION_5, VERSION_6 } from "./migrations-lanes.js";
import { HAS_ROOT, ROOT_OF_RUN } from "./operations.js";
import { SESSION_SEARCH_TEXT, searchVector, UNREADABLE_ESCAPE } from "./search.js";
import { startTouchingOncePerSecond } from "./start-touch.js";

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

// A run's two units of work as one statement each (see `run-units.ts`): the same record locks, reads and writes as
// the gateway's `recordRunStart`/`recordRunEnd` through a transaction. Record bodies are JSON text (`json`, never
// `jsonb`, which cannot hold an escaped NUL), changed field by field.
// An escaped NUL or UTF-16 surrogate in JSON text (a false alarm on an escaped backslash before "u0000" is harmless).
const UNREADABLE = String.raw`'\\u(0000|[dD][89abcdefABCDEF])'`;
const VERSION_2 = (s: string) => `
CREATE FUNCTION ${s}.json_with(doc text, fields jsonb) RETURNS text LANGUAGE sql IMMUTABLE AS $$
  SELECT json_object_agg(k, v)::text FROM (
    SELECT key AS k, value AS v FROM json_each(doc::json) WHERE NOT fields ? key
    UNION ALL
    SELECT key, value::json FROM jsonb_each(fields)
  ) f
$$;

CREATE FUNCTION ${s}.lock_record(space text, name text) RETURNS void LANGUAGE sql AS $$
  SELECT pg_advisory_xact_lock(hashtextextended(space || '/' || name, 0))
$$;

CREATE FUNCTION ${s}.append_message(p_key text, p_data text) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE v_seq bigint;
BEGIN
  INSERT INTO ${s}.transcripts AS t (session_key, last_seq) VALUES (p_key, 1)
    ON CONFLICT (session_key) DO UPDATE SET last_seq = t.last_seq + 1
    RETURNING last_seq INTO v_seq;
  INSERT INTO ${s}.messages (session_key, seq, data) VALUES (p_key, v_seq, p_data);
  RETURN v_seq;
END
$$;

CREATE FUNCTION ${s}.run_start(
  space text, p_key text, p_idem text, p_run_id text, p_preferred text, p_fresh text, p_now bigint,
  p_input text, p_run text, p_status text, p_follow_up boolean, p_owner text,
  p_lease_name text, p_lease_owner text, p_lease_now bigint, p_lease_expires bigint, p_lease_data text, p_run_queued text,
  OUT declined boolean, OUT created boolean, OUT run_id text, OUT seq bigint, OUT run_data text, OUT entry_data text,
  OUT lease_taken boolean, OUT lease_row text
) LANGUAGE plpgsql AS $$
DECLARE v_head text;
BEGIN
  declined := false;
  IF p_idem IS NOT NULL THEN
    PERFORM ${s}.lock_record(space, 'i:' || p_idem);
    SELECT r.data INTO run_data FROM ${s}.runs r WHERE r.idempotency_key = p_idem;
    IF FOUND THEN
      created := false;
      RETURN;
    END IF;
  END IF;
  created := true;
  PERFORM ${s}.lock_record(space, 's:' || p_key);
  -- Postgres's JSON functions cannot read an escaped NUL or a lone surrogate: such an entry (nothing written yet)
  -- is left to the gateway's unit through a transaction.
  IF EXISTS (SELECT 1 FROM ${s}.entries e WHERE e.key = p_key AND e.data ~ ${UNREADABLE}) THEN
    declined := true;
    RETURN;
  END IF;
  -- The lane, as acquireLease takes it (free, expired or already the owner's); not taken, the run waits for it.
  IF p_lease_name IS NOT NULL THEN
    FOR attempt IN 1..2 LOOP
      INSERT INTO ${s}.leases AS l (name, owner, acquired_at, expires_at, data)
        VALUES (p_lease_name, p_lease_owner, p_lease_now, p_lease_expires, p_lease_data)
        ON CONFLICT (name) DO UPDATE SET
          acquired_at = CASE WHEN l.owner = excluded.owner THEN l.acquired_at ELSE excluded.acquired_at END,
          data = CASE WHEN l.owner = excluded.owner THEN coalesce(excluded.data, l.data) ELSE excluded.data END,
          owner = excluded.owner, expires_at = excluded.expires_at
        WHERE l.owner = excluded.owner OR l.expires_at <= excluded.acquired_at
        RETURNING row_to_json(l.*)::text INTO lease_row;
      lease_taken := lease_row IS NOT NULL;
      EXIT WHEN lease_taken;
      SELECT row_to_json(l.*)::text INTO lease_row FROM ${s}.leases l WHERE l.name = p_lease_name;
      -- Released in between: try again.
      EXIT WHEN lease_row IS NOT NULL;
    END LOOP;
    IF NOT lease_taken THEN
      p_run := p_run_queued;
      p_status := 'queued';
    END IF;
  END IF;
  UPDATE ${s}.entries e SET updated_at = p_now, data = ${s}.json_with(e.data, jsonb_build_object('updatedAt', p_now))
    WHERE e.key = p_key RETURNING e.data INTO entry_data;
  run_id := p_run_id;
  IF run_id IS NULL AND p_preferred IS NOT NULL THEN
    PERFORM ${s}.lock_record(space, 'r:' || p_preferred);
    IF NOT EXISTS (SELECT 1 FROM ${s}.runs r WHERE r.run_id = p_preferred) THEN
      run_id := p_preferred;
    END IF;
  END IF;
  run_id := coalesce(run_id, p_fresh);
  -- The input is the caller's message with the run's id last (a key it had is overridden, as a spread would).
  v_head := left(p_input, -1) || CASE WHEN p_input = '{}' THEN '' ELSE ',' END;
  seq := ${s}.append_message(p_key, v_head || '"runId":' || to_json(run_id)::text || '}');
  run_data := '{"runId":' || to_json(run_id)::text || ',' || substr(p_run, 2, length(p_run) - 2)
    || CASE WHEN p_idem IS NULL THEN '' ELSE ',"idempotencyKey":' || to_json(p_idem)::text END
    || ',"inputSeq":' || seq || '}';
  PERFORM ${s}.lock_record(space, 'r:' || run_id);
  INSERT INTO ${s}.runs AS r (run_id, status, idempotency_key, follow_up_pending, owner, data)
    VALUES (run_id, p_status, p_idem, p_follow_up, p_owner, run_data)
    ON CONFLICT ON CONSTRAINT runs_pkey DO UPDATE SET status = excluded.status,
      idempotency_key = excluded.idempotency_key, follow_up_pending = excluded.follow_up_pending,
      owner = excluded.owner, data = excluded.data;
END
$$;

CREATE FUNCTION ${s}.run_end(
  space text, p_key text, p_run_id text, p_fence_owner text, p_status text, p_follow_up boolean, p_owner text,
  p_run text, p_reply text, p_delta jsonb,
  p_delivery_id text, p_delivery_key text, p_delivery_session text, p_delivery_run text, p_delivery_status text, p_delivery_next bigint, p_delivery_created bigint,
  p_delivery_lease_owner text, p_delivery_lease_until bigint, p_delivery text, p_lease_name text, p_lease_owner text,
  OUT declined boolean, OUT ended boolean, OUT entry_put boolean, OUT delivery_created boolean, OUT delivery_data text,
  OUT delivery_lease_owner text, OUT delivery_lease_until bigint
) LANGUAGE plpgsql AS $$
DECLARE
  v_entry text;
  v_doc json;
  v_fields jsonb;
  v_token text;
BEGIN
  declined := false;
  -- The locks the same unit through a transaction takes, in its order: session, delivery key, run.
  PERFORM ${s}.lock_record(space, 's:' || p_key);
  IF p_delivery_key IS NOT NULL THEN
    PERFORM ${s}.lock_record(space, 'k:' || p_delivery_key);
  END IF;
  PERFORM ${s}.lock_record(space, 'r:' || p_run_id);
  -- Fenced: a run ended elsewhere, or another owner's, keeps its record, and nothing of this end is written.
  ended := EXISTS (SELECT 1 FROM ${s}.runs r WHERE r.run_id = p_run_id AND r.status IN ('queued', 'running')
    AND r.owner IS NOT DISTINCT FROM p_fence_owner);
  IF NOT ended THEN
    RETURN;
  END IF;
  SELECT e.data INTO v_entry FROM ${s}.entries e WHERE e.key = p_key;
  entry_put := FOUND;
  IF entry_put AND v_entry ~ ${UNREADABLE} THEN
    declined := true;
    RETURN;
  END IF;
  IF p_reply IS NOT NULL THEN
    PERFORM ${s}.append_message(p_key, p_reply);
  END IF;
  IF entry_put THEN
    v_doc := v_entry::json;
    v_fields := jsonb_build_object('updatedAt', p_delta->'updatedAt');
    FOREACH v_token IN ARRAY ARRAY['inputTokens', 'outputTokens', 'totalTokens'] LOOP
      IF p_delta->'tokens' ? v_token THEN
        v_fields := v_fields || jsonb_build_object(v_token,
          coalesce((v_doc->>v_token)::numeric, 0) + (p_delta->'tokens'->>v_token)::numeric);
      END IF;
    END LOOP;
    IF (p_delta->>'systemSent')::boolean THEN
      v_fields := v_fields || '{"systemSent": true}';
    END IF;
    IF (p_delta->>'abortedLastRun')::boolean THEN
      v_fields := v_fields || '{"abortedLastRun": true}';
    ELSIF p_delta ? 'abortedLastRun' AND v_doc->'abortedLastRun' IS NOT NULL THEN
      v_fields := v_fields || '{"abortedLastRun": false}';
    END IF;
    UPDATE ${s}.entries e SET updated_at = (p_delta->>'updatedAt')::bigint, data = ${s}.json_with(v_entry, v_fields)
      WHERE e.key = p_key;
  END IF;
  IF p_delivery_key IS NOT NULL THEN
    INSERT INTO ${s}.deliveries (id, idempotency_key, session_key, run_id, status, next_attempt_at, created_at,
      lease_owner, lease_until, data)
      VALUES (p_delivery_id, p_delivery_key, p_delivery_session, p_delivery_run, p_delivery_status, p_delivery_next, p_delivery_created,
        p_delivery_lease_owner, p_delivery_lease_until, p_delivery)
      ON CONFLICT (idempotency_key) DO NOTHING;
    delivery_created := FOUND;
    IF NOT delivery_created THEN
      SELECT d.data, d.lease_owner, d.lease_until INTO delivery_data, delivery_lease_owner, delivery_lease_until
        FROM ${s}.deliveries d WHERE d.idempotency_key = p_delivery_key;
    END IF;
  END IF;
  UPDATE ${s}.runs r SET status = p_status, follow_up_pending = p_follow_up, owner = p_owner, data = p_run
    WHERE r.run_id = p_run_id;
  IF p_lease_name IS NOT NULL THEN
    DELETE FROM ${s}.leases l WHERE l.name = p_lease_name AND l.owner = p_lease_owner;
  END IF;
END
$$;
`;

// Full-text search (see search.ts). A message's searched text (`searchableText` of @sessions/core) is read from its
// JSON text by an immutable function, stored as a generated tsvector (so every write path, the run_start and run_end
// functions too, keeps it in step without a change) and indexed with GIN. Escaped NULs and lone surrogates, which
// Postgres's JSON cannot read, become spaces first (UNREADABLE_ESCAPE).
const VERSION_4 = (s: string) => `
CREATE FUNCTION ${s}.message_search_text(doc text) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT CASE
    WHEN j->>'role' IN ('toolResult', 'tool') THEN NULL
    WHEN json_typeof(j->'content') = 'string' THEN j->>'content'
    WHEN json_typeof(j->'content') = 'array' THEN (
      SELECT string_agg(p.value->>'text', chr(10) ORDER BY p.i)
      FROM json_array_elements(j->'content') WITH ORDINALITY AS p(value, i)
      WHERE json_typeof(p.value) = 'object' AND p.value->>'type' = 'text' AND json_typeof(p.value->'text') = 'string')
  END
  FROM (SELECT regexp_replace(doc, ${UNREADABLE_ESCAPE}, '\\1 ', 'g')::json AS j) d
$$;
ALTER TABLE ${s}.messages ADD COLUMN search tsvector
  GENERATED ALWAYS AS (${searchVector(`coalesce(${s}.message_search_text(data), '')`)}) STORED;
CREATE INDEX messages_search ON ${s}.messages USING gin (search);
CREATE INDEX entries_search ON ${s}.entries USING gin ((${SESSION_SEARCH_TEXT}));
`;

/** Every run_start and run_end of the schema set to plan without sequential scans (migration 9; again after 10). */
const planWithoutSeqScans = (s: string) => `DO $do$
DECLARE
  f regprocedure;
BEGIN
  FOR f IN SELECT p.oid::regprocedure FROM pg_proc p
      WHERE p.pronamespace = '${s}'::regnamespace AND p.proname IN ('run_start', 'run_end') LOOP
    EXECUTE format('ALTER FUNCTION %s SET enable_seqscan = off', f);
  END LOOP;
END
$do$;
`;

// The index of the runs under way, in place of one on every run's status (runs_status). A run is found by its id and
// its status together (`run_id = $1 AND status IN ('queued', 'running')`, the fence of a run's end and of a lane's
// next run). Once ANALYZE had seen no queued runs, Postgres judged `status = 'queued'` the more selective of the two,
// and a plan cached that way read every queued run's index entry to find one: with a backlog of 4,000 runs, ten
// million index entries for 4,000 run ends (pg_stat_user_indexes, serve bench). Indexed only while under way, a run
// is reached by its id whichever index the planner takes, the index holds the few runs under way (a run that ends
// leaves it), and the readers of runs by status, all of which ask for runs under way (recovery, runs.list,
// interrupts, absorbing), read it in run id order.
// The same family: a lease is found by its name, and the leases table is all but empty whenever few lanes are held,
// so a vacuum then leaves it a page and statistics of a few rows; a plan made from those scans the whole table, and
// kept, it scans it for every run's start and end while thousands of lanes are held (1,305 sequential scans of the
// leases in one backlog row). run_start and run_end only ever look rows up by key, so they plan without sequential
// scans (a migration that replaces one of them sets this again).
const VERSION_9 = (s: string) => `
DROP INDEX ${s}.runs_status;
CREATE INDEX runs_active ON ${s}.runs (run_id) WHERE status IN ('queued', 'running');
${planWithoutSeqScans(s)}`;

/** Every schema version in order. Append only: a released migration never changes. */
export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    description:
      "entries, transcripts with per-session sequence counters, runs, outbox, routes, sub-agents, thread bindings, leases",
    up: VERSION_1,
  },
  {
    version: 2,
    description: "a run's start and end as one statement each (run_start, run_end)",
    up: VERSION_2,
  },
  {
    version: 3,
    description: "the runs of a tree by their root (runs_root)",
    up: (s) => `CREATE INDEX runs_root ON ${s}.runs (${ROOT_OF_RUN}) WHERE ${HAS_ROOT};`,
  },
  {
    version: 4,
    description:
      "full-text search of transcripts and session keys, labels and display names (messages.search, GIN)",
    up: VERSION_4,
  },
  {
    version: 5,
    description: "a run's end fenced by the session's lane it executed under (run_end with the lane)",
    up: VERSION_5,
  },
  {
    version: 6,
    description:
      "a run's end starts the next run of its session on the same gateway (run_end with the next run)",
    up: VERSION_6,
  },
  {
    version: 7,
    description:
      "a run's start moves its session's updated_at only when it is a second or more behind (run_start)",
    up: (s) => startTouchingOncePerSecond(VERSION_2(s), s),
  },
  {
    version: 8,
    description:
      "the functions run for every message and entry written (message_search_text, json_with) in PL/pgSQL, planned once per connection",
    up: VERSION_8,
  },
  {
    version: 9,
    description:
      "the runs queued or running indexed apart (runs_active), and run_start and run_end planned without sequential scans, so finding one run or lease never walks a backlog",
    up: VERSION_9,
  },
  {
    version: 10,
    description:
      "a run's end moves its session's updated_at only when it is a second or more behind, and writes the entry only when it changes it (run_end)",
    up: (s) => `${endTouchingOncePerSecond(VERSION_2(s), s)}\n${planWithoutSeqScans(s)}`,
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
