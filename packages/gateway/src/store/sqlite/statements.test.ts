import { describe, expect, it } from "vitest";
import { createSqliteStore } from "../sqlite.js";
import type { StoredEntry } from "../types.js";
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
});
