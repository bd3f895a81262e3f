import { randomUUID } from "node:crypto";
import { type Logger, SessionsError, silentLogger } from "@sessions/core";
import type { SessionStore, StoreChange, StoredEntry, StoreOps } from "@sessions/gateway";
import pg from "pg";
import { createBatcher } from "./batcher.js";
import { createPublisher, createReassembler } from "./broadcast.js";
import { listenForChanges, notifySql } from "./change-feed.js";
import { createEntryReads } from "./entry-reads.js";
import { toStoreError } from "./errors.js";
import { KnownTails } from "./known-tails.js";
import { createLeaseOperations } from "./leases.js";
import { migrate } from "./migrations.js";
import { ATOMIC_OPS, createOperations, type Operations } from "./operations.js";
import { createPresence } from "./presence.js";
import { createRunUnits, type Done, type UnitCalls } from "./run-units.js";
import { createUnits, type Db, type Unit } from "./units.js";

/** How the gateway asks a store to lend a run's history window (`LEND_MESSAGES` of @sessions/gateway's history). */
const LEND_MESSAGES: unique symbol = Symbol.for("@sessions/gateway.lendMessages");

/**
 * Where {@link createPostgresStore} connects and how. Invalid values fail with `SessionsError` `invalid_config`
 * naming the field (`connectionString`, `schema`, `maxConnections`, `connectTimeoutMs`).
 */
export interface PostgresStoreOptions {
  /** `postgres://user:password@host:5432/database` (libpq-style URL; `?sslmode=require` etc. work). */
  connectionString: string;
  /**
   * The schema that holds the tables, created and migrated on open (default: the URL's `?schema=` parameter, else
   * `sessions`). Several independent deployments can share one database under different schemas. Lowercase
   * letters, digits and `_`, at most 48 characters.
   */
  schema?: string | undefined;
  /** Most pooled connections for queries and transactions (default 10). One more is held for LISTEN. */
  maxConnections?: number | undefined;
  /** Connecting longer than this fails the call with a retryable `unavailable` (default 10,000 ms). */
  connectTimeoutMs?: number | undefined;
  /**
   * Where the LISTEN connection and migrations go, when `connectionString` points at a pooler in transaction mode
   * (both need a session of their own): usually the database's direct address. Default: `connectionString`.
   */
  listenConnectionString?: string | undefined;
  /** TLS settings passed to node-postgres as they are (e.g. `{ rejectUnauthorized: true, ca }`). */
  ssl?:
    | boolean
    | {
        rejectUnauthorized?: boolean | undefined;
        ca?: string | undefined;
        cert?: string | undefined;
        key?: string | undefined;
      }
    | undefined;
  /** Warnings (change feed reconnects, idle connection errors). Default: silent. */
  logger?: Logger | undefined;
}

const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,47}$/;

function invalid(field: string, message: string): never {
  throw new SessionsError("invalid_config", `createPostgresStore: ${message}`, { field });
}

/** The host and database of a URL, never its password: for error messages. */
function describeUrl(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.hostname}${parsed.port ? `:${parsed.port}` : ""}${parsed.pathname}`;
  } catch {
    return "the configured server";
  }
}

/** The URL's `?schema=` parameter, taken out (node-postgres does not know it). */
function schemaParam(url: string): { url: string; schema?: string | undefined } {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return { url };
  }
  const schema = parsed.searchParams.get("schema");
  if (schema === null) return { url };
  parsed.searchParams.delete("schema");
  return { url: parsed.toString(), schema };
}

function validate(options: PostgresStoreOptions): { schema: string; url: string } {
  if (options === null || typeof options !== "object") invalid("options", "options must be an object");
  if (typeof options.connectionString !== "string" || !/^postgres(ql)?:\/\//.test(options.connectionString)) {
    invalid("connectionString", "connectionString must be a postgres:// or postgresql:// URL");
  }
  const { url, schema: fromUrl } = schemaParam(options.connectionString);
  const schema = options.schema ?? fromUrl ?? "sessions";
  if (typeof schema !== "string" || !SCHEMA_NAME.test(schema)) {
    invalid("schema", `schema must match ${SCHEMA_NAME} (got ${JSON.stringify(schema)})`);
  }
  for (const field of ["maxConnections", "connectTimeoutMs"] as const) {
    const value = options[field];
    if (value !== undefined && (!Number.isInteger(value) || value < 1)) {
      invalid(field, `${field} must be a positive integer`);
    }
  }
  return { schema, url };
}

/**
 * A `SessionStore` on Postgres, for one gateway or several sharing the database. Opens a pool, migrates the
 * schema (versioned, once even when gateways start together) and starts listening for other processes' changes.
 * Units of work are transactions on their own connections, running side by side; units touching the same record
 * take turns on a transaction-scoped advisory lock. Errors are `SessionsError`s: `unavailable` (retryable),
 * `conflict`, `storage_full`, `invalid_config`.
 *
 * @throws SessionsError `invalid_config` naming the option for bad options; `unavailable` when the database cannot
 * be reached within `connectTimeoutMs` or its schema was written by a newer version of this package (field `schema`).
 * @example
 * ```ts
 * import { createGateway } from "@sessions/gateway";
 * import { createPostgresStore } from "@sessions/store-postgres";
 *
 * const store = await createPostgresStore({ connectionString: "postgres://sessions:secret@db:5432/sessions" });
 * const gateway = createGateway({ runner, store });
 * ```
 */
export async function createPostgresStore(options: PostgresStoreOptions): Promise<SessionStore> {
  const { schema, url } = validate(options);
  const where = `${describeUrl(url)} (schema ${schema})`;
  const logger = (options.logger ?? silentLogger).child("store-postgres");
  const base: pg.ClientConfig = {
    connectionString: url,
    connectionTimeoutMillis: options.connectTimeoutMs ?? 10_000,
    application_name: "sessions-gateway",
    ...(options.ssl === undefined ? {} : { ssl: options.ssl }),
  };
  const pool = new pg.Pool({ ...base, max: options.maxConnections ?? 10 });
  // An idle pooled connection that dies (server restart, network) must not crash the process.
  pool.on("error", (error) => logger.warn("idle Postgres connection failed", { error: error.message }));
  // Nor one that dies while checked out between two statements (the server restarting mid-unit): its next query
  // fails, and the pool discards it when it is released.
  // Each connection's backend pid is noted too: this store's own, told apart from other gateways' in pg_stat_activity.
  const ownPids = new Set<number>();
  const pidOf = (client: unknown) => (client as { processID?: number | null }).processID ?? undefined;
  pool.on("connect", (client) => {
    client.on("error", () => undefined);
    const pid = pidOf(client);
    if (pid !== undefined) ownPids.add(pid);
  });
  pool.on("remove", (client) => {
    const pid = pidOf(client);
    if (pid !== undefined) ownPids.delete(pid);
  });

  const s = `"${schema}"`;
  const channel = `${schema}_changes`;
  const origin = randomUUID();
  const listeners = new Set<(change: StoreChange) => void>();
  // The transcripts' tails this gateway knows (a run's history window without a round trip).
  const tails = new KnownTails();
  const publish = (changes: readonly StoreChange[]) => {
    for (const change of changes) {
      // A session deleted here or elsewhere: its transcript may start again at 1.
      if (change.type === "entry" && change.op === "delete") tails.forget(change.key);
      for (const listener of listeners) {
        try {
          listener(change);
        } catch {
          // A watcher's bug is its own: the write has committed and the other watchers still hear of it.
        }
      }
    }
  };

  // LISTEN and migrations (a session-level advisory lock) need a session of their own: never a transaction pooler.
  const session: pg.ClientConfig = { ...base, connectionString: options.listenConnectionString ?? url };
  try {
    const client = new pg.Client(session);
    client.on("error", () => undefined);
    await client.connect();
    try {
      await migrate(client, s, where);
    } finally {
      await client.end().catch(() => undefined);
    }
  } catch (error) {
    await pool.end().catch(() => undefined);
    throw toStoreError(error, where);
  }
  // Ephemeral messages (`publish`/`subscribe`): run events streamed to the gateways clients are connected to.
  const subscribers = new Set<(message: unknown) => void>();
  const hear = (json: string) => {
    for (const listener of subscribers) {
      try {
        listener(JSON.parse(json));
      } catch {
        // A subscriber's bug (or a message it cannot read) is its own.
      }
    }
  };
  const tellSubscribers = (message: unknown) => {
    for (const listener of subscribers) {
      try {
        listener(message);
      } catch {
        // A subscriber's bug is its own.
      }
    }
  };
  const messagesChannel = `${schema}_events`;
  const presence = createPresence({
    origin,
    now: () => performance.now(),
    sayHello: async (payload) => {
      await pool.query("SELECT pg_notify($1, $2)", [messagesChannel, payload]);
    },
    schemaBackends: async () => {
      // A gateway's last statement names its schema (`"sessions".runs`, `"sessions".run_end(…)`) but for a moment.
      // Only clients' backends: an autovacuum worker on the schema's tables names it too (`autovacuum: VACUUM …`).
      const { rows } = await pool.query<{ pid: number }>(
        `SELECT pid FROM pg_stat_activity
          WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'
            AND strpos(query, $1) > 0`,
        [`${s}.`],
      );
      return rows.map((row) => row.pid);
    },
    ownPids: () => {
      const listening = feed.pid();
      return listening === undefined ? ownPids : new Set([...ownPids, listening]);
    },
    logger,
  });
  const reassemble = createReassembler(origin, hear, logger);
  const feed = listenForChanges({
    config: session,
    channel,
    origin,
    onChanges: publish,
    messages: {
      channel: messagesChannel,
      onPayload: (payload) => {
        if (!presence.heard(payload)) reassemble(payload);
      },
    },
    logger,
  });
  const publisher = createPublisher({ origin, channel: messagesChannel, send: feed.send, logger });
  try {
    await feed.ready;
    await presence.start();
  } catch (error) {
    presence.stop();
    await feed.close();
    await pool.end().catch(() => undefined);
    throw toStoreError(error, where);
  }

  const units = createUnits({
    pool,
    where,
    lockSpace: schema,
    notifySql: (changes) => notifySql(channel, origin, changes),
    onNotifyError: (error) =>
      logger.warn("could not announce committed changes; other gateways see them on their next poll", {
        error: String(error),
      }),
    publish,
    othersListen: () => !presence.alone(),
  });
  const ops = createOperations(s, tails);
  const leases = createLeaseOperations(s);
  let closed = false;
  const check = () => {
    if (closed) throw new SessionsError("unavailable", `The Postgres store for ${where} is closed`);
  };

  // A transaction's operations: each bound to its unit on first use, as a transaction uses a few of the store's
  // many (binding all of them, twice, for every transaction was a twentieth of what a busy gateway allocated).
  const UNIT_OF = Symbol("unit");
  const txProto: object = {};
  for (const [name, fn] of Object.entries(ops) as [string, (db: Db, ...args: unknown[]) => unknown][]) {
    Object.defineProperty(txProto, name, {
      get(this: { [UNIT_OF]: Unit }) {
        const unit = this[UNIT_OF];
        const bound = async (...args: unknown[]) => {
          if (unit.done) throw new SessionsError("conflict", `tx.${name} called after its transaction ended`);
          try {
            return await fn(units.dbOf(unit), ...args);
          } catch (error) {
            throw toStoreError(error, where);
          }
        };
        Object.defineProperty(this, name, { value: bound, enumerable: true });
        return bound;
      },
    });
  }
  const txOps = (unit: Unit): StoreOps => Object.create(txProto, { [UNIT_OF]: { value: unit } }) as StoreOps;
  const transaction = async <T>(work: (tx: StoreOps) => Promise<T>): Promise<T> => {
    check();
    // What `work` throws passes unchanged; the store's own failures are already `SessionsError`s.
    return units.transaction((unit) => work(txOps(unit)));
  };

  // A store call joins the caller's unit; outside one, a write that must be atomic or publish a change runs as a
  // unit of its own, and anything else as a single statement on the pool.
  const direct: Record<string, unknown> = {};
  for (const [name, fn] of Object.entries(ops) as [
    keyof Operations,
    (db: Db, ...a: unknown[]) => unknown,
  ][]) {
    direct[name] = async (...args: unknown[]) => {
      check();
      if (units.current() === undefined && ATOMIC_OPS.has(name as never)) {
        return transaction((tx) => (tx[name] as (...a: unknown[]) => Promise<unknown>)(...args));
      }
      try {
        return await fn(units.db(), ...args);
      } catch (error) {
        throw toStoreError(error, where);
      }
    };
  }
  // An entry read outside a unit: those asked for together share a statement (`chat.send` and `agent` read the
  // session's entry before they start a run, so a busy gateway reads many at once).
  const entryReads = createEntryReads(s);
  const readEntry = createBatcher<string, StoredEntry | undefined>({
    one: (key) => entryReads.one(units.db(), key),
    many: (keys) => entryReads.many(units.db(), keys),
    concurrency: 2,
    maxBatch: 256,
  });
  const getEntryInUnit = direct.getEntry as StoreOps["getEntry"];
  direct.getEntry = async (key: string) => {
    if (units.current() !== undefined) return getEntryInUnit(key);
    check();
    try {
      return await readEntry(key);
    } catch (error) {
      throw toStoreError(error, where);
    }
  };
  // A run's start and end, one statement each: inside a caller's unit they join it (its commit announces them);
  // outside one, those that arrive together share a statement and a transaction (group commit), on up to half
  // the pool's connections.
  const runUnits = createRunUnits(s, schema);
  const batched = <U, R>({ one, many }: UnitCalls<U, R>) => {
    const group = createBatcher<U, Done<R>>({
      one: (unit) => one(units.db(), unit),
      many: (batch) => many(units.db(), batch),
      concurrency: Math.max(2, Math.floor(pool.options.max / 2)),
      maxBatch: 64,
      failed: (error, size) =>
        logger.warn("a batch of run starts or ends failed as a whole; doing each alone", {
          size,
          error: String((error as Error)?.message ?? error),
        }),
    });
    return async (unit: U): Promise<R> => {
      check();
      const inUnit = units.current() !== undefined;
      const db = units.db();
      let done: Done<R>;
      try {
        done = inUnit ? await one(db, unit) : await group(unit);
      } catch (error) {
        throw toStoreError(error, where);
      }
      if (inUnit) for (const change of done.changes) db.emit(change);
      else units.announce(done.changes);
      for (const { key, seq, text } of done.appended ?? []) db.afterCommit(() => tails.add(key, seq, text));
      return done.result;
    };
  };
  const leaseCalls: Record<string, unknown> = {};
  for (const [name, fn] of Object.entries(leases) as [
    string,
    (db: Db, ...a: unknown[]) => Promise<unknown>,
  ][]) {
    leaseCalls[name] = async (...args: unknown[]) => {
      check();
      // A lease read inside a unit fences its writes (see `SessionStore.getLease`): it holds the row.
      if (name === "getLease") args = [args[0], units.current() !== undefined];
      try {
        return await fn(units.db(), ...args);
      } catch (error) {
        throw toStoreError(error, where);
      }
    };
  }

  // A run's history window, lent (see `readHistory` in @sessions/gateway): from the known tail it is parsed only if
  // the runner reads it; otherwise read as `readMessages` reads it.
  const lending = {
    async [LEND_MESSAGES](key: string, options: { limit: number; beforeSeq?: number | undefined }) {
      check();
      const lent =
        options.beforeSeq === undefined ? undefined : tails.lend(key, options.limit, options.beforeSeq);
      if (lent !== undefined) return lent;
      const messages = await (direct.readMessages as StoreOps["readMessages"])(key, options);
      let first = true;
      return () => {
        if (!first) return structuredClone(messages);
        first = false;
        return messages;
      };
    },
  };

  return {
    kind: "postgres",
    ...(direct as unknown as StoreOps),
    ...(leaseCalls as unknown as Pick<
      SessionStore,
      "acquireLease" | "renewLease" | "releaseLease" | "getLease" | "listLeases" | "claimDeliveries"
    >),
    transaction,
    ...lending,
    recordRunStart: batched(runUnits.start),
    recordRunEnd: batched(runUnits.end),
    watch(listener) {
      const own = (change: StoreChange) => listener(change);
      listeners.add(own);
      return () => {
        listeners.delete(own);
      };
    },
    publish(message) {
      if (closed) return;
      // No other gateway shares the schema: this process's subscribers are all there is (and they get the object).
      if (presence.alone()) return tellSubscribers(message);
      let json: string;
      try {
        json = JSON.stringify(message);
      } catch (error) {
        throw new SessionsError("invalid_params", `publish: the message is not JSON (${String(error)})`, {
          field: "message",
        });
      }
      // This process's own subscribers get the message as it is (read-only), the others its JSON.
      tellSubscribers(message);
      publisher.publish(json);
    },
    subscribe(listener) {
      const own = (message: unknown) => listener(message);
      subscribers.add(own);
      return () => {
        subscribers.delete(own);
      };
    },
    async close() {
      if (closed) return;
      closed = true;
      presence.stop();
      // What was published before closing still goes out (a gateway's last run events, on a graceful stop).
      await publisher.flushed();
      await units.announced();
      await feed.close();
      await pool.end().catch(() => undefined);
    },
  };
}
