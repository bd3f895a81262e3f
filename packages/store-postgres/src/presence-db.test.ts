import type { StoreChange } from "@sessions/gateway";
import { entry } from "@sessions/gateway/store-contract";
import pg from "pg";
import { afterAll, describe, expect, inject, it } from "vitest";
import { eventually, freshSchema, storeOpener } from "./testing/helpers.js";

const url = inject("postgresUrl");
const stores = storeOpener(url);
afterAll(() => stores.closeAll());

/**
 * A plain connection LISTENing on the schema's change channel: what it hears. `reading`: it then reads the schema's
 * tables, as a gateway does all the time.
 */
async function listener(schema: string, { reading }: { reading: boolean }) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const heard: string[] = [];
  client.on("notification", (message) => heard.push(message.payload ?? ""));
  await client.query(`LISTEN "${schema}_changes"`);
  if (reading) await client.query(`SELECT count(*) FROM "${schema}".entries`);
  return { heard, close: () => client.end() };
}

/**
 * Commits a change named `label-n` and gives `listener` a moment to hear it, until `done` says the listener's answer
 * is the awaited one. Resolves with the last change's key.
 */
async function commitUntil(
  store: Awaited<ReturnType<typeof stores.open>>,
  heard: string[],
  label: string,
  done: (wasHeard: boolean) => boolean,
): Promise<string> {
  let n = 0;
  let key = "";
  await eventually(async () => {
    key = `agent:main:${label}-${++n}`;
    await store.putEntry(entry(key, 1));
    // NOTIFY reaches a listener on the same server in well under this.
    await new Promise((resolve) => setTimeout(resolve, 150));
    return done(heard.some((payload) => payload.includes(key)));
  }, `the change feed to be ${label}`);
  return key;
}

describe("a gateway alone on its schema announces nothing, and one that joins is heard from at once", () => {
  it("stops announcing when alone, and announces the first change committed after another store opened", async () => {
    const schema = freshSchema("presence");
    const a = await stores.open(schema);
    // Not a gateway (no hello, no statement on the schema's tables): it overhears the NOTIFYs without counting.
    const outsider = await listener(schema, { reading: false });
    try {
      await commitUntil(a, outsider.heard, "silent", (wasHeard) => !wasHeard);
      const b = await stores.open(schema);
      const heardByB: StoreChange[] = [];
      b.watch((change) => heardByB.push(change));
      // One commit, no retry: had `a` not heard `b`'s hello while `b` opened, `b` would never hear of it.
      await a.putEntry(entry("agent:main:after-b-joined", 1));
      await eventually(
        () => heardByB.some((c) => c.type === "entry" && c.key === "agent:main:after-b-joined"),
        "b to hear a's first change after b opened",
      );
      expect(outsider.heard.some((payload) => payload.includes("agent:main:after-b-joined"))).toBe(true);
    } finally {
      await outsider.close();
    }
  });

  it("counts only clients' backends: one of Postgres' own on its schema (as autovacuum's) is not a gateway", async () => {
    const schema = freshSchema("presence_worker");
    const a = await stores.open(schema);
    const outsider = await listener(schema, { reading: false });
    // A walsender (a logical replication connection) is a backend of its own type, as an autovacuum worker is, and
    // can be made to name the schema at will: it stands in for autovacuum's `VACUUM "<schema>".runs`.
    const walsenderUrl = new URL(url);
    walsenderUrl.searchParams.set("replication", "database");
    const walsender = new pg.Client({ connectionString: walsenderUrl.toString() });
    await walsender.connect();
    try {
      await commitUntil(a, outsider.heard, "silent", (wasHeard) => !wasHeard);
      await walsender.query(`SELECT count(*) FROM "${schema}".entries`);
      // Commits over two of the store's looks at pg_stat_activity (every 2 s): none announced.
      const keys: string[] = [];
      for (const until = Date.now() + 4_500; Date.now() < until; ) {
        const key = `agent:main:beside-walsender-${keys.length}`;
        keys.push(key);
        await a.putEntry(entry(key, 1));
        await new Promise((resolve) => setTimeout(resolve, 150));
      }
      expect(outsider.heard.filter((payload) => keys.some((key) => payload.includes(key)))).toEqual([]);
      // The same statement from a client's backend is a sign of another gateway.
      const client = await listener(schema, { reading: true });
      try {
        await commitUntil(a, client.heard, "heard", (wasHeard) => wasHeard);
      } finally {
        await client.close();
      }
    } finally {
      await walsender.end();
      await outsider.close();
    }
  });

  it("announces again when another backend works on its schema (a gateway of a release without hellos)", async () => {
    const schema = freshSchema("presence_old");
    const a = await stores.open(schema);
    const outsider = await listener(schema, { reading: false });
    try {
      await commitUntil(a, outsider.heard, "silent", (wasHeard) => !wasHeard);
      const older = await listener(schema, { reading: true });
      try {
        const key = await commitUntil(a, older.heard, "heard", (wasHeard) => wasHeard);
        expect(older.heard.some((payload) => payload.includes(key))).toBe(true);
      } finally {
        await older.close();
      }
    } finally {
      await outsider.close();
    }
  });
});
