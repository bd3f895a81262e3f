import type { SessionsConfigInput } from "@sessions/core";
import { type AgentRunner, createGateway, type Gateway, type SessionStore } from "@sessions/gateway";
import { eventually as waitFor } from "@sessions/testing/eventually";
import pg from "pg";
import { createPostgresStore, type PostgresStoreOptions } from "../store.js";

let counter = 0;

/** A schema name no other test uses. */
export const freshSchema = (prefix: string) => `${prefix}_${process.pid}_${++counter}`;

/** Opens stores and closes every one of them at the end of the file. */
export function storeOpener(url: string) {
  const open: SessionStore[] = [];
  return {
    async open(schema: string, extra: Partial<PostgresStoreOptions> = {}): Promise<SessionStore> {
      const store = await createPostgresStore({ connectionString: url, schema, ...extra });
      open.push(store);
      return store;
    },
    async closeAll(): Promise<void> {
      await Promise.all(open.splice(0).map((store) => store.close()));
    },
  };
}

/**
 * Two gateways on one fresh schema, each with its own pool and LISTEN connection, as two processes would have.
 * Leases outlast a stall of a busy machine (the tests using it are not about one lapsing); `opened` hears each
 * gateway, to close it after the test.
 */
export async function twoGateways(options: {
  url: string;
  prefix: string;
  runner: AgentRunner;
  config?: SessionsConfigInput | undefined;
  opened: (gateway: Gateway) => void;
}): Promise<[Gateway, Gateway]> {
  const schema = freshSchema(options.prefix);
  const gateways: Gateway[] = [];
  for (let i = 0; i < 2; i++) {
    const store = await createPostgresStore({ connectionString: options.url, schema });
    const gateway = createGateway({
      store,
      runner: options.runner,
      ...(options.config === undefined ? {} : { config: options.config }),
      cluster: { leaseTtlMs: 10_000, recoveryIntervalMs: 200 },
    });
    await gateway.ready;
    options.opened(gateway);
    gateways.push(gateway);
  }
  return gateways as [Gateway, Gateway];
}

/** Runs `sql` on a connection of its own (for looking behind the store's back). */
export async function sql<R extends pg.QueryResultRow>(
  url: string,
  text: string,
  values: unknown[] = [],
): Promise<R[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<R>(text, values)).rows;
  } finally {
    await client.end();
  }
}

/** Resolves once `check` holds, polling; rejects naming `what` after the shared 60 s bound. */
export async function eventually(
  check: () => boolean | Promise<boolean>,
  what: string | (() => string) = "condition",
): Promise<void> {
  await waitFor(check, what, { intervalMs: 10 });
}
