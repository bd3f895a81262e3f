import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { entry } from "./contract-records.js";
import { recordRunEnd, recordRunStart } from "./run-units.js";
import type { SearchSessionsQuery, SessionSearchPage, SessionStore, StoredEntry } from "./types.js";

const say = (content: string, ts = 1) => ({ role: "user" as const, content, ts });
const keysOf = (page: SessionSearchPage) => page.hits.map((hit) => hit.entry.key);
const search = (store: SessionStore, text: string, extra: Partial<SearchSessionsQuery> = {}) =>
  store.searchSessions({ text, limit: 20, ...extra });
/** The words a search result highlights. */
const marked = (page: SessionSearchPage) =>
  page.hits.flatMap((hit) =>
    hit.messages.flatMap((m) => m.highlights.map(([from, to]) => m.snippet.slice(from, to))),
  );

async function seeded(store: SessionStore, sessions: [StoredEntry, string[]][]) {
  for (const [e, messages] of sessions) {
    await store.putEntry(e);
    for (const text of messages) await store.appendMessage(e.key, say(text, e.updatedAt));
  }
}

/**
 * `searchSessions`: what a store's full-text search must find, how it ranks and pages, and that a session outside
 * the query's scope never matches, nor counts. Every store passes it (memory by scanning, SQLite FTS5, Postgres).
 */
export function describeSearchContract(open: () => SessionStore | Promise<SessionStore>): void {
  describe("searching sessions", () => {
    it("finds the words of a message, with the best message, a snippet marking them and a score", async () => {
      const store = await open();
      await seeded(store, [
        [
          entry("agent:main:a", 10),
          ["hello there", "We should DEPLOY the build on Friday", "deployment went fine"],
        ],
        [entry("agent:main:b", 20), ["nothing to see here"]],
      ]);
      const page = await search(store, "deploy friday");
      expect(page.hasMore).toBe(false);
      expect(page.hits).toHaveLength(1);
      const [hit] = page.hits;
      expect(hit?.entry).toEqual(entry("agent:main:a", 10));
      expect(hit?.matchedMessages).toBe(1);
      expect(hit?.messages).toMatchObject([{ seq: 2, role: "user", ts: 10 }]);
      expect(hit?.messages[0]?.snippet).toBe("We should DEPLOY the build on Friday");
      expect(marked(page)).toEqual(["DEPLOY", "Friday"]);
      expect(hit?.score).toBeGreaterThan(0);
      expect(hit?.score).toBeLessThan(1);
      // A word of 3+ characters matches the words it starts; shorter ones only whole words.
      expect((await search(store, "deplo")).hits[0]?.matchedMessages).toBe(2);
      expect(keysOf(await search(store, "th"))).toEqual([]);
      expect(keysOf(await search(store, "to"))).toEqual(["agent:main:b"]);
      expect(await search(store, "   ")).toEqual({ hits: [], hasMore: false, truncated: false });
      expect(await search(store, "absent")).toEqual({ hits: [], hasMore: false, truncated: false });
      await store.close();
    });

    it("ranks sessions whose key, label or display name match first, then by their best message", async () => {
      const store = await open();
      await seeded(store, [
        [
          entry("agent:main:long", 50),
          ["we will deploy the new build to staging after the review of the release notes tomorrow morning"],
        ],
        [entry("agent:main:short", 10), ["deploy deploy now"]],
        [entry("agent:main:titled", 5, { label: "Deploy checklist" }), ["unrelated"]],
        [entry("agent:main:discord:group:deploys", 4), []],
        [entry("agent:main:tie-old", 30), ["release party"]],
        [entry("agent:main:tie-new", 40), ["release party"]],
      ]);
      const page = await search(store, "deploy");
      expect(keysOf(page)).toEqual([
        "agent:main:titled",
        "agent:main:discord:group:deploys",
        "agent:main:short",
        "agent:main:long",
      ]);
      const scores = page.hits.map((hit) => hit.score);
      expect(scores[0]).toBe(1);
      expect(scores[1]).toBe(1);
      expect(scores[2]).toBeGreaterThan(scores[3] as number);
      expect(scores[3]).toBeGreaterThan(0);
      expect(page.hits[0]?.messages).toEqual([]);
      // Equal scores: the newer session first.
      expect(keysOf(await search(store, "party"))).toEqual(["agent:main:tie-new", "agent:main:tie-old"]);
      // The agent prefix every key of an agent shares is not searched.
      expect(keysOf(await search(store, "agent"))).toEqual([]);
      await store.close();
    });

    it("pages by offset without repeats or gaps; hasMore says whether another page follows", async () => {
      const store = await open();
      for (let i = 0; i < 25; i++) {
        await seeded(store, [[entry(`agent:main:s${String(i).padStart(2, "0")}`, 100 + i), [`alpha ${i}`]]]);
      }
      const all = await search(store, "alpha", { limit: 100 });
      expect(all.hits).toHaveLength(25);
      const pages: SessionSearchPage[] = [];
      for (let offset = 0; offset < 30; offset += 10)
        pages.push(await search(store, "alpha", { limit: 10, offset }));
      expect(pages.map((p) => [p.hits.length, p.hasMore])).toEqual([
        [10, true],
        [10, true],
        [5, false],
      ]);
      expect(pages.flatMap(keysOf)).toEqual(keysOf(all));
      expect(new Set(pages.flatMap(keysOf)).size).toBe(25);
      expect(await search(store, "alpha", { limit: 10, offset: 25 })).toEqual({
        hits: [],
        hasMore: false,
        truncated: false,
      });
      expect(await search(store, "alpha", { limit: 0 })).toEqual({
        hits: [],
        hasMore: true,
        truncated: false,
      });
      await store.close();
    });

    it("never matches nor counts a session outside the query's scope", async () => {
      const store = await open();
      await seeded(store, [
        [entry("agent:main:a", 10), ["secret plan"]],
        [entry("agent:ops:b", 20), ["secret plan"]],
        [entry("agent:main:c", 30, { kind: "group" }), ["secret plan"]],
        [entry("agent:main:d", 40, { archivedAt: 41 }), ["secret plan"]],
        [entry("agent:main:e", 50), ["secret plan"]],
        [entry("agent:main:secret", 60), ["plan"]],
      ]);
      expect(keysOf(await search(store, "secret", { keys: ["agent:main:a", "agent:main:c"] }))).toEqual([
        "agent:main:c",
        "agent:main:a",
      ]);
      // Four other sessions match, yet none is counted: there is no more to see.
      expect(await search(store, "secret plan", { keys: ["agent:main:a"], limit: 1 })).toMatchObject({
        hasMore: false,
        hits: [{ entry: { key: "agent:main:a" } }],
      });
      expect(await search(store, "secret", { keys: [] })).toEqual({
        hits: [],
        hasMore: false,
        truncated: false,
      });
      expect(keysOf(await search(store, "secret", { agentIds: ["ops"] }))).toEqual(["agent:ops:b"]);
      expect(keysOf(await search(store, "secret", { agentIds: [] }))).toEqual([]);
      expect(keysOf(await search(store, "secret", { kinds: ["group"] }))).toEqual(["agent:main:c"]);
      expect(
        keysOf(
          await search(store, "secret", {
            agentIds: ["main"],
            excludeKeys: ["agent:main:e", "agent:main:secret"],
          }),
        ),
      ).toEqual(["agent:main:c", "agent:main:a"]);
      expect(
        keysOf(await search(store, "secret", { agentIds: ["main"], includeArchived: true, limit: 2 })),
      ).toEqual(["agent:main:secret", "agent:main:e"]);
      expect(
        keysOf(await search(store, "plan", { agentIds: ["main"], includeArchived: true, offset: 4 })),
      ).toEqual(["agent:main:a"]);
      expect(keysOf(await search(store, "secret", { updatedSince: 45 }))).toEqual([
        "agent:main:secret",
        "agent:main:e",
      ]);
      await store.close();
    });

    it("ranks at most maxMessages matching messages, the most recent sessions' first, and says so", async () => {
      const store = await open();
      for (const [i, key] of ["agent:main:a", "agent:main:b", "agent:main:c"].entries()) {
        await store.putEntry(entry(key, 10 + i));
        await store.appendMessage(key, say("kiwi one"));
        await store.appendMessage(key, say("kiwi two"));
      }
      const capped = await search(store, "kiwi", { maxMessages: 3 });
      expect(capped.truncated).toBe(true);
      expect(capped.hits.map((h) => [h.entry.key, h.matchedMessages])).toEqual([
        ["agent:main:c", 2],
        ["agent:main:b", 1],
      ]);
      // The cap counts messages in scope only: a session outside it never takes a place.
      expect(await search(store, "kiwi", { maxMessages: 2, keys: ["agent:main:a"] })).toMatchObject({
        truncated: false,
        hits: [{ entry: { key: "agent:main:a" }, matchedMessages: 2 }],
      });
      expect(await search(store, "kiwi", { maxMessages: 6 })).toMatchObject({ truncated: false });
      expect(await search(store, "kiwi", { maxMessages: 5, offset: 10 })).toEqual({
        hits: [],
        hasMore: false,
        truncated: true,
      });
      await store.close();
    });

    it("follows every write: labels, deletions, rolled-back units, a run's start and end", async () => {
      const store = await open();
      const key = "agent:main:w";
      await store.putEntry(entry(key, 1, { label: "orange" }));
      expect(keysOf(await search(store, "orange"))).toEqual([key]);
      await store.putEntry(entry(key, 2, { label: "banana", displayName: "Fruit Room" }));
      expect(keysOf(await search(store, "orange"))).toEqual([]);
      expect(keysOf(await search(store, "banana room"))).toEqual([key]);
      await store.appendMessage(key, say("kiwi smoothie"));
      await expect(
        store.transaction(async (tx) => {
          await tx.appendMessage(key, say("papaya salad"));
          throw new Error("undo");
        }),
      ).rejects.toThrow("undo");
      expect(keysOf(await search(store, "papaya"))).toEqual([]);
      expect(await store.deleteEntry(key)).toBe(true);
      expect(keysOf(await search(store, "kiwi"))).toEqual([]);
      expect(keysOf(await search(store, "banana"))).toEqual([]);
      await store.putEntry(entry(key, 3));
      expect(keysOf(await search(store, "kiwi"))).toEqual([]);
      await store.appendMessage(key, say("kiwi again"));
      expect(await search(store, "kiwi")).toMatchObject({ hits: [{ messages: [{ seq: 1 }] }] });

      // The entry gone but its transcript kept: no session, no match; the entry back, its messages match again.
      const kept = "agent:main:kept";
      await store.putEntry(entry(kept, 4));
      await store.appendMessage(kept, say("mango lassi"));
      await store.deleteEntry(kept, { transcript: false });
      expect(keysOf(await search(store, "mango"))).toEqual([]);
      await store.putEntry(entry(kept, 5));
      expect(keysOf(await search(store, "mango"))).toEqual([kept]);
      // A transcript without a session entry is no session.
      await store.appendMessage("agent:main:nobody", say("lychee"));
      expect(keysOf(await search(store, "lychee"))).toEqual([]);

      const runKey = "agent:main:runs";
      await store.putEntry(entry(runKey, 6));
      const started = await recordRunStart(store, {
        sessionKey: runKey,
        freshRunId: "run-1",
        now: 7,
        input: say("quince jam", 7),
        run: {
          sessionKey: runKey,
          agentId: "main",
          kind: "chat",
          status: "running",
          createdAt: 7,
          owner: "gw",
        },
      });
      expect(started.created).toBe(true);
      await recordRunEnd(store, {
        run: { ...started.run, status: "ok", endedAt: 8 },
        owner: "gw",
        reply: { role: "assistant", content: "rhubarb pie", ts: 8, runId: "run-1" },
        entry: { updatedAt: 2_000 },
      });
      expect(await search(store, "quince")).toMatchObject({ hits: [{ messages: [{ seq: 1 }] }] });
      expect(await search(store, "rhubarb")).toMatchObject({
        hits: [{ entry: { key: runKey, updatedAt: 2_000 }, messages: [{ seq: 2, role: "assistant" }] }],
      });
      await store.close();
    });

    it("searches the text of user and assistant messages, never tool results or tool calls", async () => {
      const store = await open();
      const key = "agent:main:tools";
      await store.putEntry(entry(key, 1));
      await store.appendMessage(key, { role: "toolResult", content: "zucchini", ts: 1, toolCallId: "t" });
      await store.appendMessage(key, {
        role: "assistant",
        content: [
          { type: "text", text: "walnut" },
          { type: "tool-call", toolCallId: "t", toolName: "x", input: { q: "yam" } },
          { type: "text", text: "pecan" },
        ],
        ts: 2,
      });
      expect(keysOf(await search(store, "zucchini"))).toEqual([]);
      expect(keysOf(await search(store, "yam"))).toEqual([]);
      const page = await search(store, "walnut pecan");
      expect(page.hits[0]?.messages).toMatchObject([{ seq: 2, role: "assistant", snippet: "walnut pecan" }]);
      await store.close();
    });

    it("returns up to messagesPerSession best messages per session and counts them all", async () => {
      const store = await open();
      await seeded(store, [
        [
          entry("agent:main:m", 1),
          ["cherry", "a long message that mentions cherry once among many other words here", "cherry cherry"],
        ],
      ]);
      const two = await search(store, "cherry", { messagesPerSession: 2 });
      expect(two.hits[0]?.matchedMessages).toBe(3);
      expect(two.hits[0]?.messages.map((m) => m.seq)).toHaveLength(2);
      expect(two.hits[0]?.messages.map((m) => m.seq)).not.toContain(2);
      expect((await search(store, "cherry", { messagesPerSession: 0 })).hits[0]?.messages).toEqual([]);
      await store.close();
    });

    it("finds words in any script and between any punctuation; odd text never breaks a write or a search", async () => {
      const store = await open();
      const odd = [
        "Die größe zählt",
        "crème brûlée",
        "москва слезам не верит",
        "東京 に 行く",
        "emoji 🚀 launch",
        "nul\u0000byte",
        "lone \ud800 surrogate",
        "quotes \" and ' and \\ backslash",
        "تاریخ جلسه",
        "see x.org/path, v1.2.3, a@b.com and snake_case",
      ];
      await seeded(store, [[entry("agent:main:u", 1), odd]]);
      for (const [query, seq] of [
        ["größe", 1],
        ["ZÄHLT", 1],
        ["crème", 2],
        ["москва", 3],
        ["東京", 4],
        ["launch", 5],
        ["byte", 6],
        ["surrogate", 7],
        ["backslash", 8],
        ["جلسه", 9],
        ["path", 10],
        ["V1", 10],
        ["com", 10],
        ["case snake", 10],
      ] as const) {
        const page = await search(store, query);
        expect({ query, seqs: page.hits.flatMap((h) => h.messages.map((m) => m.seq)) }).toEqual({
          query,
          seqs: [seq],
        });
      }
      expect((await store.readMessages("agent:main:u", { limit: 20 })).map((m) => m.content)).toEqual(odd);
      await store.close();
    });

    it("takes query syntax as plain words: quotes, stars, minus, OR, NEAR( never raise an error", async () => {
      const store = await open();
      await seeded(store, [
        [entry("agent:main:q", 1), ["should we deploy or plan first", "deploy near the plan"]],
      ]);
      const queries = [
        '"',
        '""',
        '"deploy',
        "*",
        "deploy*",
        "-",
        "-deploy",
        "deploy OR plan",
        "NEAR(deploy plan)",
        "NEAR(",
        "AND",
        "NOT deploy",
        "^deploy",
        "(",
        ")",
        "'",
        "\\",
        ":",
        "text:deploy",
        "{text}: deploy",
        "\u0000",
        "%",
        "_",
        "a & b | !c",
        "<->",
        ":*",
        "'deploy':*",
        "deploy:*",
        "\ud800",
      ];
      for (const query of queries) await expect(search(store, query)).resolves.toBeDefined();
      const or = await search(store, "deploy OR plan");
      expect(or.hits[0]?.messages.map((m) => m.seq)).toEqual([1]);
      expect(or.hits[0]?.matchedMessages).toBe(1);
      expect((await search(store, "NEAR(deploy")).hits[0]?.matchedMessages).toBe(1);
      expect((await search(store, '"deploy" -plan*')).hits[0]?.matchedMessages).toBe(2);
      await store.close();
    });

    it("never throws on any text, stored or searched", async () => {
      const store = await open();
      await store.putEntry(entry("agent:main:any", 1));
      const text = fc.oneof(fc.string(), fc.string({ unit: "grapheme" }), fc.string({ unit: "binary" }));
      await fc.assert(
        fc.asyncProperty(text, text, async (stored, query) => {
          await store.appendMessage("agent:main:any", say(stored));
          const page = await search(store, query, { limit: 5 });
          expect(page.hits.length).toBeLessThanOrEqual(1);
        }),
        { numRuns: 40 },
      );
      await store.close();
    });

    it("finds a word that is in exactly one visible message, and only there", async () => {
      const store = await open();
      const visible = "agent:main:visible";
      const hidden = "agent:main:hidden";
      await store.putEntry(entry(visible, 1));
      await store.putEntry(entry(hidden, 2));
      const noise = fc.array(
        fc.constantFrom("the", "plan", "déjà", "vu", "日本", "ok?", "—", "x", "42", "über", "alles"),
        { maxLength: 8 },
      );
      let n = 0;
      await fc.assert(
        fc.asyncProperty(fc.stringMatching(/^[a-z]{1,10}$/), noise, noise, async (letters, before, after) => {
          // Unique, and no word of another iteration starts with it: letters never follow its digits there.
          const word = `q${++n}${letters}`;
          await store.appendMessage(visible, say([...before, "and"].join(" ")));
          const stored = await store.appendMessage(visible, say([...before, word, ...after].join(" ")));
          await store.appendMessage(visible, { role: "toolResult", content: word, ts: 1 });
          await store.appendMessage(hidden, say(word));
          const page = await search(store, word.toUpperCase(), { excludeKeys: [hidden] });
          expect(page.hasMore).toBe(false);
          expect(page.hits).toHaveLength(1);
          expect(page.hits[0]).toMatchObject({
            entry: { key: visible },
            matchedMessages: 1,
            messages: [{ seq: stored.seq }],
          });
          expect(marked(page)).toEqual([word]);
        }),
        { numRuns: 25 },
      );
      await store.close();
    });

    it("lists the agent ids of stored sessions once each", async () => {
      const store = await open();
      expect(await store.listAgentIds()).toEqual([]);
      await store.putEntry(entry("agent:main:a", 1));
      await store.putEntry(entry("agent:ops:b", 1, { archivedAt: 2 }));
      await store.putEntry(entry("agent:main:c", 1));
      await store.putEntry(entry("agent:research:d", 1));
      expect((await store.listAgentIds()).sort()).toEqual(["main", "ops", "research"]);
      await store.deleteEntry("agent:research:d");
      expect((await store.listAgentIds()).sort()).toEqual(["main", "ops"]);
      await store.close();
    });
  });
}
