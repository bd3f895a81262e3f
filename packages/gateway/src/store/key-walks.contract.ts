import { describe, expect, it } from "vitest";
import { entry } from "./contract-records.js";
import type { SessionStore, StoredEntry } from "./types.js";

const keys = (rows: StoredEntry[]) => rows.map((r) => r.key);

/**
 * Walks that writes between pages cannot disturb: entries in key order paged by `afterKey` (the `sessions.list`
 * cursor), a transcript paged back by `beforeSeq` (the `chat.history` cursor).
 */
export function describeKeyWalkContract(open: () => SessionStore | Promise<SessionStore>): void {
  describe("walks in key order", () => {
    it("lists by key in code point order, filters before the limit, pages by afterKey and by offset", async () => {
      const store = await open();
      // Code point order (UTF-8 byte order): upper case before lower case, U+FFFF before an emoji (U+1F600).
      await store.putEntry(entry("agent:main:b", 10, { kind: "group" }));
      await store.putEntry(entry("agent:main:a\u{1F600}", 50));
      await store.putEntry(entry("agent:main:a\uFFFF", 40, { kind: "group" }));
      await store.putEntry(entry("agent:main:B", 30));
      await store.putEntry(entry("agent:ops:a", 20, { kind: "group" }));
      await store.putEntry(entry("agent:main:c", 60, { archivedAt: 5 }));
      const all = [
        "agent:main:B",
        "agent:main:a\uFFFF",
        "agent:main:a\u{1F600}",
        "agent:main:b",
        "agent:ops:a",
      ];
      expect(keys(await store.listEntries({ order: "key", limit: 10 }))).toEqual(all);
      expect(keys(await store.listEntries({ order: "key", limit: 2 }))).toEqual(all.slice(0, 2));
      expect(
        keys(await store.listEntries({ order: "key", limit: 2, afterKey: "agent:main:a\uFFFF" })),
      ).toEqual(all.slice(2, 4));
      // The cursor need not be a stored key.
      expect(keys(await store.listEntries({ order: "key", limit: 10, afterKey: "agent:main:a" }))).toEqual(
        all.slice(1),
      );
      expect(keys(await store.listEntries({ order: "key", limit: 10, afterKey: "agent:ops:a" }))).toEqual([]);
      expect(keys(await store.listEntries({ order: "key", limit: 2, offset: 3 }))).toEqual(all.slice(3));
      expect(
        keys(await store.listEntries({ order: "key", limit: 1, kinds: ["group"], afterKey: "agent:main:B" })),
      ).toEqual(["agent:main:a\uFFFF"]);
      expect(
        keys(await store.listEntries({ order: "key", limit: 10, agentIds: ["main"], includeArchived: true })),
      ).toEqual([...all.slice(0, 4), "agent:main:c"]);
      // `afterKey` is a filter in the default order too: newest first among the keys after it.
      expect(keys(await store.listEntries({ limit: 10, afterKey: "agent:main:a\uFFFF" }))).toEqual([
        "agent:main:a\u{1F600}",
        "agent:ops:a",
        "agent:main:b",
      ]);
      await store.close();
    });

    it("returns every entry that exists throughout a walk by key exactly once, whatever is written between pages", async () => {
      const store = await open();
      const key = (i: number) => `agent:main:s${String(i).padStart(2, "0")}`;
      for (let i = 0; i < 12; i += 1) await store.putEntry(entry(key(i), 100 + i));
      const seen: string[] = [];
      const page = async () => {
        const rows = await store.listEntries({
          order: "key",
          limit: 3,
          ...(seen.length > 0 ? { afterKey: seen[seen.length - 1] } : {}),
        });
        seen.push(...keys(rows));
        return rows.length;
      };
      await page(); // s00 s01 s02
      // Updated: one already read and one ahead of the walk both jump to the top of the newest-first order.
      await store.putEntry(entry(key(1), 500, { label: "moved" }));
      await store.putEntry(entry(key(7), 501, { label: "moved" }));
      // Created behind the walk (never returned) and ahead of it (returned once).
      await store.putEntry(entry("agent:main:s00a", 502));
      await store.putEntry(entry("agent:main:s05a", 503));
      await page(); // s03 s04 s05
      // Deleted ahead of the walk (not returned) and behind it.
      await store.deleteEntry(key(9));
      await store.deleteEntry(key(2));
      while ((await page()) > 0);
      expect(seen).toEqual([
        key(0),
        key(1),
        key(2),
        key(3),
        key(4),
        key(5),
        "agent:main:s05a",
        key(6),
        key(7),
        key(8),
        key(10),
        key(11),
      ]);
      await store.close();
    });

    it("pages a transcript back by beforeSeq without skipping or repeating while messages are appended", async () => {
      const store = await open();
      for (let i = 1; i <= 7; i += 1)
        await store.appendMessage("s", { role: "user", content: `m${i}`, ts: i });
      const seen: number[] = [];
      let before: number | undefined;
      for (;;) {
        const page = await store.readMessages("s", {
          limit: 3,
          ...(before === undefined ? {} : { beforeSeq: before }),
        });
        if (page.length === 0) break;
        seen.unshift(...page.map((m) => m.seq));
        before = page[0]?.seq;
        await store.appendMessage("s", { role: "assistant", content: "later", ts: 100 });
      }
      expect(seen).toEqual([1, 2, 3, 4, 5, 6, 7]);
      expect(await store.countMessages("s")).toBe(10);
      await store.close();
    });
  });
}
