import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { entry } from "../contract-records.js";
import { createSqliteStore } from "../sqlite.js";

const dir = mkdtempSync(join(tmpdir(), "sessions-search-pending-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Rows waiting to be indexed, and rows in the index, as a second connection to the file sees them. */
function counts(path: string): { pending: number; indexed: number } {
  const db = new Database(path, { readonly: true });
  try {
    const pending = (db.prepare("SELECT count(*) AS n FROM messages_search_pending").get() as { n: number })
      .n;
    const indexed = (db.prepare("SELECT count(*) AS n FROM messages_search").get() as { n: number }).n;
    return { pending, indexed };
  } finally {
    db.close();
  }
}

const say = (text: string, ts = 1) => ({ role: "user" as const, content: text, ts });

describe("SQLite search index: messages wait, then go in by batch", () => {
  it("indexes waiting messages before a search, so a search sees every committed one", async () => {
    const path = join(dir, "before-search.db");
    const store = createSqliteStore({ path });
    await store.putEntry(entry("agent:main:a", 1));
    await store.appendMessage("agent:main:a", say("the comet returns"));
    await store.appendMessage("agent:main:a", say("nothing to see"));
    expect(counts(path)).toEqual({ pending: 2, indexed: 0 });
    const page = await store.searchSessions({ text: "comet", limit: 10 });
    expect(page.hits.map((h) => [h.entry.key, h.messages[0]?.seq])).toEqual([["agent:main:a", 1]]);
    expect(counts(path)).toEqual({ pending: 0, indexed: 2 });
    await store.close();
  });

  it("moves a batch in on its own once enough messages wait, and forgets a deleted session's waiting ones", async () => {
    const path = join(dir, "batches.db");
    const store = createSqliteStore({ path });
    await store.putEntry(entry("agent:main:a", 1));
    await store.putEntry(entry("agent:main:b", 2));
    await Promise.all(
      Array.from({ length: 300 }, (_, i) => store.appendMessage("agent:main:a", say(`note ${i} alpha`))),
    );
    await store.appendMessage("agent:main:b", say("beta only here"));
    // A batch went in without a search; what came after it still waits.
    const after = counts(path);
    expect(after.indexed).toBeGreaterThanOrEqual(256);
    expect(after.pending + after.indexed).toBe(301);
    await store.deleteEntry("agent:main:b");
    expect((await store.searchSessions({ text: "beta", limit: 10 })).hits).toEqual([]);
    expect((await store.searchSessions({ text: "alpha", limit: 10 })).hits[0]?.matchedMessages).toBe(300);
    expect(counts(path)).toEqual({ pending: 0, indexed: 300 });
    await store.close();
  });
});
