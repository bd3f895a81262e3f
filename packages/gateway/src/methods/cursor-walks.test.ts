import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import type { ChatHistoryPayload, SessionsListPayload } from "../gateway.js";
import type { StoredEntry } from "../store/types.js";
import { cleanupDirs, type Harness, harness, STORE_KINDS, type StoreKind } from "../test-kit.js";

/**
 * Walks by cursor while the store is written between pages (issue 25): `sessions.list` by key and `chat.history`
 * back from the newest message never skip or repeat a row that exists for the whole walk.
 */
afterAll(cleanupDirs);

const RUNS = 100;

async function withGateway(kind: StoreKind, work: (h: Harness) => Promise<void>): Promise<void> {
  const h = await harness(kind, {});
  try {
    await work(h);
  } finally {
    await h.close();
  }
}

const stored = (key: string, updatedAt: number, extra: Partial<StoredEntry> = {}): StoredEntry => ({
  key,
  sessionId: `sid-${key}-${updatedAt}`,
  agentId: key.startsWith("agent:") ? (key.split(":")[1] as string) : "main",
  kind: "other",
  createdAt: updatedAt,
  updatedAt,
  ...extra,
});

// ---------------------------------------------------------------- sessions.list

const KEYS = [
  "global",
  "unknown",
  "agent:main:a",
  "agent:main:b",
  "agent:main:c",
  "agent:main:d",
  "agent:main:e",
  "agent:main:f",
  "agent:main:g",
  "agent:ops:a",
  "agent:ops:b",
  "agent:ops:c",
  "agent:ops:d",
  "agent:zed:a",
];

type ListStep =
  | { op: "page"; limit: number }
  | { op: "put"; key: string; updatedAt: number }
  | { op: "delete"; key: string };

const listStep: fc.Arbitrary<ListStep> = fc.oneof(
  fc.record({ op: fc.constant("page" as const), limit: fc.integer({ min: 1, max: 4 }) }),
  fc.record({
    op: fc.constant("put" as const),
    key: fc.constantFrom(...KEYS),
    updatedAt: fc.integer({ min: 1, max: 1_000 }),
  }),
  fc.record({ op: fc.constant("delete" as const), key: fc.constantFrom(...KEYS) }),
);

const listWalk = fc.record({
  initial: fc.uniqueArray(
    fc.record({ key: fc.constantFrom(...KEYS), updatedAt: fc.integer({ min: 1, max: 1_000 }) }),
    {
      selector: (e) => e.key,
      maxLength: KEYS.length,
    },
  ),
  filters: fc.record(
    {
      agentId: fc.constantFrom("main", "ops"),
      includeGlobal: fc.boolean(),
      includeUnknown: fc.boolean(),
    },
    { requiredKeys: [] },
  ),
  firstLimit: fc.integer({ min: 1, max: 4 }),
  steps: fc.array(listStep, { maxLength: 30 }),
});

function matches(key: string, f: { agentId?: string; includeGlobal?: boolean; includeUnknown?: boolean }) {
  if (key === "global" && !f.includeGlobal) return false;
  if (key === "unknown" && !f.includeUnknown) return false;
  return f.agentId === undefined || stored(key, 0).agentId === f.agentId;
}

// ---------------------------------------------------------------- chat.history

type HistoryStep =
  | { op: "page"; limit: number }
  | { op: "append"; count: number }
  | { op: "touch" }
  | { op: "reset"; keepTranscript: boolean; recreate: boolean };

const historyStep: fc.Arbitrary<HistoryStep> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({ op: fc.constant("page" as const), limit: fc.integer({ min: 1, max: 6 }) }),
  },
  {
    weight: 3,
    arbitrary: fc.record({ op: fc.constant("append" as const), count: fc.integer({ min: 1, max: 3 }) }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("touch" as const) }) },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant("reset" as const),
      keepTranscript: fc.boolean(),
      recreate: fc.boolean(),
    }),
  },
);

const historyWalk = fc.record({
  initial: fc.integer({ min: 0, max: 25 }),
  firstLimit: fc.integer({ min: 1, max: 6 }),
  steps: fc.array(historyStep, { maxLength: 25 }),
});

const KEY = "agent:main:main";

describe.each(STORE_KINDS)("cursor walks on the %s store", (kind) => {
  it("sessions.list by key returns each session that exists throughout exactly once, however sessions are written between pages", async () => {
    await fc.assert(
      fc.asyncProperty(listWalk, ({ initial, filters, firstLimit, steps }) =>
        withGateway(kind, async (h) => {
          for (const e of initial) await h.store.putEntry(stored(e.key, e.updatedAt));
          const existed = new Set(initial.map((e) => e.key));
          const touched = new Set<string>(); // deleted (or deleted and created again) during the walk
          const returned: string[] = [];
          const read = (page: SessionsListPayload) => {
            returned.push(...page.sessions.map((s) => s.key));
            expect(page.count).toBe(page.sessions.length);
            expect(page.hasMore).toBe(page.nextCursor !== null);
            return page.nextCursor ?? null;
          };
          let cursor = read(await h.gateway.sessions.list({ ...filters, sortBy: "key", limit: firstLimit }));
          const next = async (limit: number) => {
            if (cursor !== null) cursor = read(await h.gateway.sessions.list({ cursor, limit }));
          };
          for (const step of steps) {
            if (step.op === "page") await next(step.limit);
            else if (step.op === "put") {
              const current = await h.store.getEntry(step.key);
              await h.store.putEntry(
                current === undefined
                  ? stored(step.key, step.updatedAt)
                  : { ...current, updatedAt: step.updatedAt, label: `v${step.updatedAt}` },
              );
            } else if (await h.store.deleteEntry(step.key)) touched.add(step.key);
          }
          while (cursor !== null) await next(3);

          // Never twice, in key order, and only sessions that match the walk's filters.
          expect(returned).toEqual([...new Set(returned)].sort());
          for (const key of returned) expect(matches(key, filters)).toBe(true);
          // Every matching session that was there from the first page to the last was returned.
          for (const key of existed) {
            if (!touched.has(key) && matches(key, filters)) expect(returned).toContain(key);
          }
        }),
      ),
      { numRuns: RUNS },
    );
  });

  it("chat.history by cursor returns each message that exists throughout exactly once, or stops at a reset with CURSOR_STALE", async () => {
    await fc.assert(
      fc.asyncProperty(historyWalk, ({ initial, firstLimit, steps }) =>
        withGateway(kind, async (h) => {
          let sessionNo = 0;
          const create = async () => {
            sessionNo += 1;
            await h.store.putEntry(stored(KEY, sessionNo, { sessionId: `sid-${sessionNo}` }));
          };
          const append = async (n: number) => {
            for (let i = 0; i < n; i++)
              await h.store.appendMessage(KEY, { role: "user", content: "m", ts: 1 });
          };
          await create();
          await append(initial);
          const pages: number[][] = [];
          let reset = false;
          let stale = false;
          const first = await h.gateway.chat.history({ sessionKey: "main", limit: firstLimit });
          const read = (page: ChatHistoryPayload) => {
            expect(page.sessionId).toBe("sid-1");
            expect(page.hasMore).toBe(page.nextCursor !== null);
            pages.push(page.messages.map((m) => m.seq));
            return page.nextCursor;
          };
          let cursor = read(first);
          const next = async (limit: number) => {
            if (cursor === null || stale) return;
            const call = h.gateway.chat.history({ sessionKey: "main", cursor, limit });
            if (!reset) cursor = read(await call);
            else {
              await expect(call).rejects.toMatchObject({
                code: "invalid_params",
                field: "cursor",
                details: { code: "CURSOR_STALE" },
              });
              stale = true;
            }
          };
          for (const step of steps) {
            if (step.op === "page") await next(step.limit);
            else if (step.op === "append") await append(step.count);
            else if (step.op === "touch") {
              const current = await h.store.getEntry(KEY);
              if (current !== undefined)
                await h.store.putEntry({ ...current, updatedAt: current.updatedAt + 1, label: "touched" });
            } else {
              // Deleted, or deleted and created again (a new sessionId), its transcript kept or not.
              await h.store.deleteEntry(KEY, { transcript: !step.keepTranscript });
              if (step.recreate) {
                await create();
                await append(1);
              }
              reset = true;
            }
          }
          while (cursor !== null && !stale) await next(4);

          // Pages come newest first, each oldest first: together, one descending run without repeats.
          const seqs = pages.reverse().flat();
          expect(seqs).toEqual([...new Set(seqs)].sort((a, b) => a - b));
          // Without a reset, the walk ends at the oldest: every message there at the first page, once.
          if (!stale) expect(seqs).toEqual(Array.from({ length: initial }, (_, i) => i + 1));
          else expect(seqs.every((seq) => seq <= initial)).toBe(true);
        }),
      ),
      { numRuns: RUNS },
    );
  });
});

describe.each(STORE_KINDS)("cursors and offsets on the %s store", (kind) => {
  it("chat.history: appends between pages shift an offset page (a repeat), never a cursor page", async () => {
    await withGateway(kind, async (h) => {
      await h.store.putEntry(stored(KEY, 1));
      for (let i = 1; i <= 5; i++)
        await h.store.appendMessage(KEY, { role: "user", content: `m${i}`, ts: i });
      const first = await h.gateway.chat.history({ sessionKey: "main", limit: 2 });
      expect(first.messages.map((m) => m.seq)).toEqual([4, 5]);
      expect(first).toMatchObject({ hasMore: true, nextOffset: 2, totalMessages: 5 });
      await h.store.appendMessage(KEY, { role: "assistant", content: "m6", ts: 6 });
      const byOffset = await h.gateway.chat.history({ sessionKey: "main", limit: 2, offset: 2 });
      expect(byOffset.messages.map((m) => m.seq)).toEqual([3, 4]);
      const byCursor = await h.gateway.chat.history({
        sessionKey: "main",
        limit: 2,
        cursor: first.nextCursor as string,
      });
      expect(byCursor.messages.map((m) => m.seq)).toEqual([2, 3]);
      // Its offset is where the same page starts counted from the newest now (6 messages).
      expect(byCursor).toMatchObject({
        sessionId: first.sessionId,
        hasMore: true,
        nextOffset: 5,
        totalMessages: 6,
      });
      const last = await h.gateway.chat.history({
        sessionKey: "main",
        limit: 2,
        cursor: byCursor.nextCursor as string,
      });
      expect(last.messages.map((m) => m.seq)).toEqual([1]);
      expect(last).toMatchObject({ hasMore: false, nextOffset: null, nextCursor: null });
      // An offset page gives a cursor too, so a client can switch to cursors at any page.
      const fromOffset = await h.gateway.chat.history({
        sessionKey: "main",
        limit: 2,
        cursor: byOffset.nextCursor as string,
      });
      expect(fromOffset.messages.map((m) => m.seq)).toEqual([1, 2]);
    });
  });

  it("sessions.list: an update between pages makes newest-first offsets skip a session, never a walk by key", async () => {
    await withGateway(kind, async (h) => {
      for (const [i, key] of ["agent:main:a", "agent:main:b", "agent:main:c", "agent:main:d"].entries())
        await h.store.putEntry(stored(key, 10 - i));
      const first = await h.gateway.sessions.list({ limit: 2 });
      expect(first.sessions.map((s) => s.key)).toEqual(["agent:main:a", "agent:main:b"]);
      expect(first).not.toHaveProperty("nextCursor");
      const walk = await h.gateway.sessions.list({ limit: 2, sortBy: "key" });
      expect(walk.sessions.map((s) => s.key)).toEqual(["agent:main:a", "agent:main:b"]);
      expect(walk).toMatchObject({ hasMore: true, nextOffset: 2, nextCursor: expect.any(String) });
      // c becomes the newest session.
      await h.store.putEntry(stored("agent:main:c", 20));
      const byOffset = await h.gateway.sessions.list({ limit: 2, offset: 2 });
      expect(byOffset.sessions.map((s) => s.key)).toEqual(["agent:main:b", "agent:main:d"]);
      const byCursor = await h.gateway.sessions.list({ limit: 2, cursor: walk.nextCursor as string });
      expect(byCursor.sessions.map((s) => s.key)).toEqual(["agent:main:c", "agent:main:d"]);
      expect(byCursor).toMatchObject({ hasMore: false, nextOffset: null, nextCursor: null });
    });
  });

  it("sessions.list: offset pages never repeat the row after a hidden global session", async () => {
    await withGateway(kind, async (h) => {
      await h.store.putEntry(stored("global", 40));
      for (const [i, key] of ["agent:main:a", "agent:main:b", "agent:main:c"].entries())
        await h.store.putEntry(stored(key, 30 - i));
      const first = await h.gateway.sessions.list({ limit: 2 });
      const second = await h.gateway.sessions.list({ limit: 2, offset: first.nextOffset as number });
      expect([...first.sessions, ...second.sessions].map((s) => s.key)).toEqual([
        "agent:main:a",
        "agent:main:b",
        "agent:main:c",
      ]);
      expect(first).toMatchObject({ count: 1, hasMore: true, nextOffset: 2 });
    });
  });

  it("sessions.list: a walk keeps its filters and the time activeMinutes counted from", async () => {
    await withGateway(kind, async (h) => {
      const now = h.clock.now();
      await h.store.putEntry(stored("global", now));
      await h.store.putEntry(stored("agent:main:a", now - 50 * 60_000));
      await h.store.putEntry(stored("agent:main:b", now - 55 * 60_000));
      await h.store.putEntry(stored("agent:main:old", now - 90 * 60_000));
      await h.store.putEntry(stored("agent:ops:c", now));
      await h.store.putEntry(stored("agent:main:z", now, { archivedAt: now }));
      const first = await h.gateway.sessions.list({
        agentId: "main",
        activeMinutes: 60,
        includeGlobal: true,
        sortBy: "key",
        limit: 1,
      });
      expect(first.sessions.map((s) => s.key)).toEqual(["agent:main:a"]);
      // Ten minutes later, b is 65 minutes old: still in the walk that started when it was 55.
      await h.clock.advance(10 * 60_000);
      const rest: string[] = [];
      for (let cursor = first.nextCursor; cursor; ) {
        const page = await h.gateway.sessions.list({ cursor, limit: 1, includeGlobal: true });
        rest.push(...page.sessions.map((s) => s.key));
        cursor = page.nextCursor;
      }
      expect(rest).toEqual(["agent:main:b", "global"]);
      await expect(
        h.gateway.sessions.list({ cursor: first.nextCursor as string, agentId: "ops" }),
      ).rejects.toMatchObject({ code: "invalid_params", field: "cursor", details: { filter: "agentId" } });
    });
  });

  it("refuses a cursor it did not issue, for another method or session, with an offset, or gone stale", async () => {
    await withGateway(kind, async (h) => {
      await h.store.putEntry(stored(KEY, 1));
      await h.store.putEntry(stored("agent:main:other", 1));
      for (let i = 1; i <= 3; i++) {
        await h.store.appendMessage(KEY, { role: "user", content: `m${i}`, ts: i });
        await h.store.appendMessage("agent:main:other", { role: "user", content: `o${i}`, ts: i });
      }
      const page = await h.gateway.chat.history({ sessionKey: "main", limit: 1 });
      const cursor = page.nextCursor as string;
      const list = (await h.gateway.sessions.list({ sortBy: "key", limit: 1 })).nextCursor as string;
      const refused = { code: "invalid_params", field: "cursor" };
      for (const bad of [list, "", "not a cursor", `${cursor}x`, cursor.slice(1), "eyJ2IjoxfQ"]) {
        await expect(h.gateway.chat.history({ sessionKey: "main", cursor: bad })).rejects.toMatchObject(
          refused,
        );
      }
      await expect(h.gateway.sessions.list({ cursor })).rejects.toMatchObject(refused);
      await expect(h.gateway.sessions.list({ cursor: list, offset: 1 })).rejects.toMatchObject(refused);
      await expect(h.gateway.sessions.list({ cursor: list, sortBy: "updatedAt" })).rejects.toMatchObject(
        refused,
      );
      await expect(h.gateway.chat.history({ sessionKey: "main", cursor, offset: 1 })).rejects.toMatchObject(
        refused,
      );
      // Another session's cursor is a mistake, not a stale cursor.
      const other = await h.gateway.chat.history({ sessionKey: "other", cursor }).catch((e: unknown) => e);
      expect(other).toMatchObject({ ...refused, message: expect.stringContaining(KEY) });
      expect(other).not.toMatchObject({ details: { code: "CURSOR_STALE" } });
      // The session is deleted and created again under the same key: its old cursor is stale.
      await h.store.deleteEntry(KEY);
      const stale = { ...refused, details: { code: "CURSOR_STALE" } };
      await expect(h.gateway.chat.history({ sessionKey: "main", cursor })).rejects.toMatchObject(stale);
      await h.store.putEntry(stored(KEY, 2));
      await h.store.appendMessage(KEY, { role: "user", content: "new", ts: 9 });
      await expect(h.gateway.chat.history({ sessionKey: "main", cursor })).rejects.toMatchObject(stale);
      // Through `call`, as the wire does: params validated, the same typed errors.
      await expect(h.gateway.call("chat.history", { sessionKey: "main", cursor: 5 })).rejects.toMatchObject(
        refused,
      );
    });
  });
});
