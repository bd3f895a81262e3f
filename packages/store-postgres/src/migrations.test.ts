import { entry } from "@sessions/gateway/store-contract";
import { afterAll, describe, expect, inject, it } from "vitest";
import { MIGRATIONS, SCHEMA_VERSION } from "./migrations.js";
import { freshSchema, sql, storeOpener } from "./testing/helpers.js";

const url = inject("postgresUrl");
const stores = storeOpener(url);
afterAll(() => stores.closeAll());

describe("schema migrations", () => {
  it("migrates a new schema once when three gateways open it at the same moment", async () => {
    const schema = freshSchema("migrate");
    const [a, b, c] = await Promise.all([stores.open(schema), stores.open(schema), stores.open(schema)]);
    const rows = await sql<{ version: number }>(
      url,
      `SELECT version FROM "${schema}".schema_migrations ORDER BY version`,
    );
    expect(rows.map((r) => r.version)).toEqual(MIGRATIONS.map((m) => m.version));
    expect(SCHEMA_VERSION).toBe(MIGRATIONS[MIGRATIONS.length - 1]?.version);
    await a?.putEntry(entry("agent:main:main", 1));
    expect(await b?.getEntry("agent:main:main")).toBeDefined();
    expect(await c?.countEntries()).toBe(1);
  });

  it("keeps the data and changes nothing when a schema at the current version is opened again", async () => {
    const schema = freshSchema("reopen");
    const first = await stores.open(schema);
    await first.appendMessage("s", { role: "user", content: "kept", ts: 1 });
    await first.close();
    const second = await stores.open(schema);
    expect(await second.readMessages("s", { limit: 5 })).toMatchObject([{ content: "kept", seq: 1 }]);
    const rows = await sql(url, `SELECT version FROM "${schema}".schema_migrations`);
    expect(rows).toHaveLength(MIGRATIONS.length);
  });

  it("refuses a schema written by a newer version, naming the schema option", async () => {
    const schema = freshSchema("newer");
    await (await stores.open(schema)).close();
    await sql(
      url,
      `INSERT INTO "${schema}".schema_migrations (version, description) VALUES ($1, 'from the future')`,
      [SCHEMA_VERSION + 1],
    );
    await expect(stores.open(schema)).rejects.toMatchObject({
      code: "unavailable",
      field: "schema",
      message: expect.stringContaining(`version ${SCHEMA_VERSION + 1}`),
    });
  });

  it("keeps schemas in one database apart", async () => {
    const one = await stores.open(freshSchema("apart"));
    const two = await stores.open(freshSchema("apart"));
    await one.putEntry(entry("agent:main:main", 1));
    expect(await two.getEntry("agent:main:main")).toBeUndefined();
  });
});
