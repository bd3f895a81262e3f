import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { eventually as waitFor } from "../../test-kit.js";
import { entry } from "../contract-records.js";
import { createSqliteStore } from "../sqlite.js";
import { searchFileOf } from "./search-index.js";

const dir = mkdtempSync(join(tmpdir(), "sessions-search-index-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** What second connections see: the store's tables of the index (none), and the rows of the index's file. */
function look(path: string): { storeTables: string[]; indexed: number } {
  const store = new Database(path, { readonly: true });
  const index = new Database(searchFileOf(path), { readonly: true });
  try {
    const storeTables = (
      store
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'messages_search%'")
        .all() as {
        name: string;
      }[]
    ).map((row) => row.name);
    const indexed = (index.prepare("SELECT count(*) AS n FROM messages_search").get() as { n: number }).n;
    return { storeTables, indexed };
  } finally {
    store.close();
    index.close();
  }
}

const say = (text: string, ts = 1) => ({ role: "user" as const, content: text, ts });

describe("SQLite search index: a file of its own, written by an indexer thread", () => {
  it("indexes committed messages on its own, in its file, and a search sees every one committed before it", async () => {
    const path = join(dir, "own-file.db");
    const store = createSqliteStore({ path });
    await store.putEntry(entry("agent:main:a", 1));
    await store.appendMessage("agent:main:a", say("the comet returns"));
    await store.appendMessage("agent:main:a", say("nothing to see"));
    // Nothing of the index is in the store's file; the indexer takes the messages up without a search.
    await waitFor(() => expect(look(path)).toEqual({ storeTables: [], indexed: 2 }), "the indexer's batch");
    await store.appendMessage("agent:main:a", say("another comet, at once"));
    const page = await store.searchSessions({ text: "comet", limit: 10, messagesPerSession: 5 });
    expect(page.hits.map((h) => [h.entry.key, h.messages.map((m) => m.seq).sort()])).toEqual([
      ["agent:main:a", [1, 3]],
    ]);
    await store.close();
  });

  it("drops a deleted session's messages; a session made again under its key is found by its new ones only", async () => {
    const path = join(dir, "deleted.db");
    const store = createSqliteStore({ path });
    await store.putEntry(entry("agent:main:b", 1));
    for (let i = 0; i < 5; i++) await store.appendMessage("agent:main:b", say(`beta ${i}`));
    expect((await store.searchSessions({ text: "beta", limit: 10 })).hits[0]?.matchedMessages).toBe(5);
    await store.deleteEntry("agent:main:b");
    expect((await store.searchSessions({ text: "beta", limit: 10 })).hits).toEqual([]);
    await store.putEntry(entry("agent:main:b", 2));
    await store.appendMessage("agent:main:b", say("gamma then beta"));
    const page = await store.searchSessions({ text: "beta", limit: 10 });
    expect(page.hits.map((h) => [h.matchedMessages, h.messages[0]?.seq])).toEqual([[1, 1]]);
    await waitFor(() => expect(look(path).indexed).toBe(1), "the old rows dropped");
    await store.close();
  });

  it("rebuilds a missing index file from the transcripts when the store opens", async () => {
    const path = join(dir, "rebuilt.db");
    const first = createSqliteStore({ path });
    await first.putEntry(entry("agent:main:c", 1));
    for (let i = 0; i < 3; i++) await first.appendMessage("agent:main:c", say(`delta ${i}`));
    expect((await first.searchSessions({ text: "delta", limit: 10 })).hits[0]?.matchedMessages).toBe(3);
    await first.close();
    for (const suffix of ["", "-wal", "-shm"]) rmSync(`${searchFileOf(path)}${suffix}`, { force: true });
    expect(existsSync(searchFileOf(path))).toBe(false);
    const again = createSqliteStore({ path });
    expect((await again.searchSessions({ text: "delta", limit: 10 })).hits[0]?.matchedMessages).toBe(3);
    await again.close();
  });

  it("has no index with search off: no index file, and a search refused saying so", async () => {
    const path = join(dir, "off.db");
    const store = createSqliteStore({ path, search: false });
    await store.putEntry(entry("agent:main:o", 1));
    await store.appendMessage("agent:main:o", say("zeta"));
    await expect(store.searchSessions({ text: "zeta", limit: 10 })).rejects.toMatchObject({
      code: "unavailable",
      field: "search",
    });
    expect(await store.listAgentIds()).toEqual(["main"]);
    expect(existsSync(searchFileOf(path))).toBe(false);
    await store.close();
  });

  it("indexes an in-memory store on the store's own thread, before each search", async () => {
    const store = createSqliteStore({ path: ":memory:" });
    await store.putEntry(entry("agent:main:m", 1));
    await store.appendMessage("agent:main:m", say("epsilon here"));
    expect((await store.searchSessions({ text: "epsilon", limit: 10 })).hits[0]?.entry.key).toBe(
      "agent:main:m",
    );
    await store.deleteEntry("agent:main:m");
    expect((await store.searchSessions({ text: "epsilon", limit: 10 })).hits).toEqual([]);
    await store.close();
  });
});
