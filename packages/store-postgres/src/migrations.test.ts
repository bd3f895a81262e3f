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

  it("indexes the transcripts a version 3 schema already holds when it migrates to search (version 4)", async () => {
    const schema = freshSchema("search");
    const s = `"${schema}"`;
    const steps = MIGRATIONS.filter((m) => m.version <= 3)
      .map(
        (m) =>
          `${m.up(s)};\nINSERT INTO ${s}.schema_migrations (version, description) VALUES (${m.version}, 'old');`,
      )
      .join("\n");
    const key = "agent:main:discord:group:g1";
    const message = (content: unknown, role = "user") => JSON.stringify({ role, content, ts: 1 });
    await sql(
      url,
      `CREATE SCHEMA ${s};
       CREATE TABLE ${s}.schema_migrations (version integer PRIMARY KEY, description text NOT NULL,
         applied_at timestamptz NOT NULL DEFAULT now());
       ${steps}`,
    );
    const e = entry(key, 10, { kind: "group", label: "Launch team" });
    await sql(
      url,
      `INSERT INTO ${s}.entries (key, session_id, agent_id, kind, updated_at, label, data) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
      [e.key, e.sessionId, e.agentId, e.kind, e.updatedAt, e.label, JSON.stringify(e)],
    );
    for (const data of [
      message("when is the rocket launch?"),
      message("rocket telemetry", "toolResult"),
      message([{ type: "text", text: "The rocket flies at noon \u0000 sharp" }], "assistant"),
      // Escapes Postgres's JSON cannot read: a NUL and a lone surrogate.
      message("rocket \u0000 \ud800 fuel"),
    ]) {
      await sql(url, `SELECT ${s}.append_message($1, $2)`, [key, data]);
    }
    const store = await stores.open(schema);
    const page = await store.searchSessions({ text: "rocket", limit: 10, messagesPerSession: 5 });
    expect(page.hits).toMatchObject([{ entry: { key }, matchedMessages: 3 }]);
    expect(page.hits[0]?.messages.map((m) => m.seq).sort()).toEqual([1, 3, 4]);
    expect((await store.searchSessions({ text: "sharp fuel", limit: 10 })).hits).toEqual([]);
    expect((await store.searchSessions({ text: "fuel", limit: 10 })).hits).toHaveLength(1);
    expect(
      (await store.searchSessions({ text: "launch team", limit: 10 })).hits[0]?.score,
    ).toBeGreaterThanOrEqual(1);
    expect((await store.searchSessions({ text: "telemetry", limit: 10 })).hits).toEqual([]);
    await store.appendMessage(key, { role: "user", content: "a new rocket", ts: 2 });
    expect((await store.searchSessions({ text: "new rocket", limit: 10 })).hits[0]?.messages[0]?.seq).toBe(5);
    const versions = await sql<{ version: number }>(
      url,
      `SELECT version FROM ${s}.schema_migrations ORDER BY version`,
    );
    expect(versions.map((r) => r.version)).toEqual(MIGRATIONS.map((m) => m.version));
  });

  it("keeps schemas in one database apart", async () => {
    const one = await stores.open(freshSchema("apart"));
    const two = await stores.open(freshSchema("apart"));
    await one.putEntry(entry("agent:main:main", 1));
    expect(await two.getEntry("agent:main:main")).toBeUndefined();
  });
});
