import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SessionsError } from "@sessions/core";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { createSqliteStore } from "../sqlite.js";
import { MIGRATIONS, SCHEMA_VERSION } from "./schema.js";
import { HISTORICAL_SCHEMAS } from "./schema-history.fixture.js";

const dir = mkdtempSync(join(tmpdir(), "sessions-migrations-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const versionOf = (path: string) => {
  const db = new Database(path, { readonly: true });
  try {
    return (db.prepare("SELECT value FROM meta WHERE key = 'schema_version'").get() as { value: string })
      .value;
  } finally {
    db.close();
  }
};
const columnsOf = (path: string, table: string) => {
  const db = new Database(path, { readonly: true });
  try {
    return (db.prepare(`PRAGMA table_info(${table})`).all() as { name: string }[]).map((c) => c.name);
  } finally {
    db.close();
  }
};

describe("SQLite schema migrations", () => {
  it("numbers migrations 1..N without gaps", () => {
    expect(MIGRATIONS.map((m) => m.version)).toEqual(MIGRATIONS.map((_, i) => i + 1));
    expect(SCHEMA_VERSION).toBe(MIGRATIONS.length);
  });

  it("creates a new file at the current version", async () => {
    const path = join(dir, "fresh.db");
    const store = createSqliteStore({ path });
    await store.putRun({
      runId: "r",
      sessionKey: "s",
      agentId: "main",
      kind: "chat",
      status: "running",
      createdAt: 1,
      owner: "gw-1",
    });
    expect(await store.getRun("r")).toMatchObject({ owner: "gw-1" });
    await store.close();
    expect(versionOf(path)).toBe(String(SCHEMA_VERSION));
  });

  for (const [i, historical] of HISTORICAL_SCHEMAS.entries()) {
    it(`upgrades a file at ${historical.name} (${historical.commits.join(", ")}) keeping its data`, async () => {
      const path = join(dir, `history-${i}.db`);
      const old = new Database(path);
      old.pragma("journal_mode = WAL");
      old.exec(historical.sql);
      old.close();

      const store = createSqliteStore({ path });
      const key = "agent:main:discord:group:g1";
      expect(await store.getEntry(key)).toMatchObject({ label: "team", kind: "group", updatedAt: 2000 });
      expect((await store.listEntries({ limit: 10, kinds: ["group"] })).map((e) => e.key)).toEqual([key]);
      expect((await store.readMessages(key, { limit: 10 })).map((m) => m.content)).toEqual([
        "m1",
        "m2",
        "m3",
      ]);
      expect(await store.findRunByIdempotencyKey("idem-1")).toMatchObject({ runId: "run-1", reply: "m2" });
      expect((await store.listRunsByStatus(["ok"])).map((r) => r.runId).sort()).toEqual(
        ["run-1", ...historical.pendingFollowUps].sort(),
      );
      expect((await store.listPendingFollowUps()).map((r) => r.runId)).toEqual(historical.pendingFollowUps);
      expect(await store.listQueuedDeliveries(10)).toMatchObject([{ id: "del-1", attempts: 1 }]);
      expect(await store.listRoutes(key)).toMatchObject([{ to: "channel:g1" }]);
      expect((await store.listArchiveDue(6000)).map((s) => s.childKey)).toEqual(["agent:main:subagent:c1"]);
      expect(await store.getThreadBinding("discord", "default", "t1")).toMatchObject({ to: "channel:t1" });

      // What the new schema adds works on the old data.
      expect((await store.appendMessage(key, { role: "user", content: "m4", ts: 2000 })).seq).toBe(4);
      const run1 = await store.getRun("run-1");
      await store.putRun({ ...(run1 as NonNullable<typeof run1>), status: "running", owner: "gw-2" });
      expect(await store.getRun("run-1")).toMatchObject({ owner: "gw-2", status: "running" });
      expect(
        await store.acquireLease({ name: "runs:gw-2", owner: "gw-2", ttlMs: 1000, now: 10_000 }),
      ).toMatchObject({ acquired: true });
      expect((await store.listLeases("runs:")).map((l) => l.owner)).toEqual(["gw-2"]);
      const claimed = await store.claimDeliveries({ owner: "gw-2", now: 3000, ttlMs: 500, limit: 5 });
      expect(claimed).toMatchObject([{ id: "del-1", leaseOwner: "gw-2", leaseUntil: 3500, text: "m2" }]);
      expect(await store.claimDeliveries({ owner: "gw-3", now: 3100, ttlMs: 500, limit: 5 })).toEqual([]);
      await store.close();

      expect(versionOf(path)).toBe(String(SCHEMA_VERSION));
      expect(columnsOf(path, "runs")).toEqual(
        expect.arrayContaining(["follow_up_pending", "owner", "idempotency_key"]),
      );
      expect(columnsOf(path, "deliveries")).toEqual(expect.arrayContaining(["lease_owner", "lease_until"]));

      // A second open finds nothing to migrate and the same data.
      const again = createSqliteStore({ path });
      expect(await again.countMessages(key)).toBe(4);
      expect(await again.getDelivery("del-1")).toMatchObject({ leaseOwner: "gw-2" });
      await again.close();
    });
  }

  it("refuses a file from a newer gateway with a typed error and leaves it untouched", async () => {
    const path = join(dir, "newer.db");
    const store = createSqliteStore({ path });
    await store.close();
    const db = new Database(path);
    db.prepare("UPDATE meta SET value = '99' WHERE key = 'schema_version'").run();
    db.close();
    let caught: unknown;
    try {
      createSqliteStore({ path });
    } catch (error) {
      caught = error;
    }
    expect(SessionsError.isInstance(caught)).toBe(true);
    expect(caught).toMatchObject({ code: "unavailable", field: "path" });
    expect((caught as Error).message).toContain(
      `has schema version 99; this @sessions/gateway understands up to ${SCHEMA_VERSION}`,
    );
    expect(versionOf(path)).toBe("99");
  });
});
