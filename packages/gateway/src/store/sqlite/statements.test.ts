import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { createSqliteStore } from "../sqlite.js";
import type { ListEntriesQuery, StoredEntry } from "../types.js";
import { createListStatements } from "./statements.js";
import { sqliteStatementCount } from "./store.js";

const entry = (key: string, kind: StoredEntry["kind"], updatedAt: number): StoredEntry => ({
  key,
  sessionId: `sid-${key}`,
  agentId: "main",
  kind,
  createdAt: 1,
  updatedAt,
});

describe("SQLite prepared statements", () => {
  it("stay bounded whatever the length of array filters", async () => {
    const store = createSqliteStore({ path: ":memory:" });
    await store.putEntry(entry("agent:main:main", "main", 3));
    await store.putEntry(entry("agent:main:discord:group:g", "group", 2));
    await store.listEntries({ limit: 10, kinds: ["group"] });
    await store.listRunsByStatus(["queued"]);
    await store.listSubagents({ statuses: ["running"] });
    const before = sqliteStatementCount(store);
    expect(before).toBeGreaterThan(0);
    for (let n = 1; n <= 2_000; n++) {
      const kinds = Array.from({ length: n }, (_, i) =>
        i === 0 ? "group" : `k${i}`,
      ) as StoredEntry["kind"][];
      const rows = await store.listEntries({ limit: 10, kinds });
      expect(rows).toHaveLength(1);
      if (n % 100 === 0) {
        await store.listRunsByStatus(Array(n).fill("queued"));
        await store.listSubagents({ statuses: Array(n).fill("running") });
        await store.listEntries({ limit: 10, agentIds: Array(n).fill("main") });
      }
    }
    // The agentIds filter adds one statement shape; the array lengths add none.
    expect(sqliteStatementCount(store)).toBe(before + 1);
    await store.close();
  });

  it("takes 40,000 kinds in one call (no 'too many SQL variables')", async () => {
    const store = createSqliteStore({ path: ":memory:" });
    await store.putEntry(entry("agent:main:discord:group:g", "group", 2));
    await store.putEntry(entry("agent:main:cron:c", "cron", 1));
    const kinds = [
      ...Array.from({ length: 39_998 }, (_, i) => `unknown-${i}`),
      "group",
      "cron",
    ] as StoredEntry["kind"][];
    expect(kinds).toHaveLength(40_000);
    const rows = await store.listEntries({ limit: 10, kinds });
    expect(rows.map((r) => r.key)).toEqual(["agent:main:discord:group:g", "agent:main:cron:c"]);
    await store.close();
  });

  it("walks in key order through the primary key's index from the cursor, with or without statistics", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sessions-walk-plan-"));
    try {
      const path = join(dir, "walk.db");
      const store = createSqliteStore({ path });
      for (let i = 0; i < 500; i++)
        await store.putEntry(entry(`agent:main:s${i}`, i % 3 ? "group" : "main", i));
      await store.close();
      const db = new Database(path);
      const lists = createListStatements(db);
      const plan = (query: ListEntriesQuery) => {
        const { stmt, params } = lists.entries(query);
        return (db.prepare(`EXPLAIN QUERY PLAN ${stmt.source}`).all(...params) as { detail: string }[]).map(
          (row) => row.detail,
        );
      };
      const walk = { order: "key", afterKey: "agent:main:s250", limit: 50 } as const;
      // A young database has no statistics (ANALYZE never ran); an old one may have them.
      for (const analyzed of [false, true]) {
        if (analyzed) db.exec("ANALYZE");
        expect(plan(walk), `analyzed: ${analyzed}`).toEqual([
          "SEARCH entries USING INDEX sqlite_autoindex_entries_1 (key>?)",
        ]);
        expect(plan({ ...walk, afterKey: undefined }).join(" ")).not.toContain("TEMP B-TREE");
      }
      db.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
