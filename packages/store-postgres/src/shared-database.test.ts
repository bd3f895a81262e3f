import type { RunRecord, StoreChange } from "@sessions/gateway";
import { delivery, entry, run } from "@sessions/gateway/store-contract";
import { afterAll, describe, expect, inject, it } from "vitest";
import { eventually, freshSchema, sql, storeOpener } from "./testing/helpers.js";

const url = inject("postgresUrl");
const stores = storeOpener(url);
afterAll(() => stores.closeAll());

/** Two stores on one schema stand for two gateway processes sharing the database. */
async function pair() {
  const schema = freshSchema("shared");
  return { schema, a: await stores.open(schema), b: await stores.open(schema) };
}

describe("several stores on one database", () => {
  it("tells every store on the schema of a commit, once, and no store on another schema", async () => {
    const { a, b } = await pair();
    const otherSchema = freshSchema("other");
    const other = await stores.open(otherSchema);
    const otherPeer = await stores.open(otherSchema);
    const heardB: StoreChange[] = [];
    const heardA: StoreChange[] = [];
    const heardOther: StoreChange[] = [];
    b.watch((change) => heardB.push(change));
    a.watch((change) => heardA.push(change));
    other.watch((change) => heardOther.push(change));
    await a.transaction(async (tx) => {
      await tx.putEntry(entry("agent:main:x", 1));
      await tx.putRun(run("r1", { status: "ok" }));
    });
    await expect(
      a.transaction(async (tx) => {
        await tx.putEntry(entry("agent:main:rolled-back", 1));
        throw new Error("no");
      }),
    ).rejects.toThrow("no");
    await a.putEntry(entry("agent:main:y", 1));
    const expected = [
      { type: "entry", key: "agent:main:x", op: "put" },
      { type: "run", runId: "r1", sessionKey: "s", status: "ok" },
      { type: "entry", key: "agent:main:y", op: "put" },
    ];
    const heard = (changes: StoreChange[], key: string) =>
      changes.some((change) => change.type === "entry" && change.key === key);
    // Then a change by another store of each schema: a store hears it through the database, after everything
    // committed before it that the store was going to hear (Postgres delivers notifications in commit order). A
    // store tells its own watchers of its own commits itself.
    await a.putEntry(entry("agent:main:from-a", 1));
    // A store tells its own watchers of its commits at once, and hears the others' through the database: b commits
    // only once it has heard a's, or its own could come first.
    await eventually(() => heard(heardB, "agent:main:from-a"), "b to hear a's commits");
    await b.putEntry(entry("agent:main:from-b", 1));
    await otherPeer.putEntry(entry("agent:main:from-peer", 1));
    await eventually(
      () =>
        heard(heardA, "agent:main:from-b") &&
        heard(heardB, "agent:main:from-a") &&
        heard(heardOther, "agent:main:from-peer"),
      "each store to hear the last change another store of its schema committed",
    );
    const last = (changes: StoreChange[]) =>
      changes.slice(expected.length).map((change) => (change.type === "entry" ? change.key : change.type));
    for (const changes of [heardA, heardB]) {
      expect(changes.slice(0, expected.length)).toEqual(expected);
      expect(last(changes).sort()).toEqual(["agent:main:from-a", "agent:main:from-b"]);
    }
    expect(heardOther).toEqual([{ type: "entry", key: "agent:main:from-peer", op: "put" }]);
  });

  it("keeps telling after its LISTEN connection is killed", async () => {
    const { schema, a, b } = await pair();
    const heard: StoreChange[] = [];
    b.watch((change) => heard.push(change));
    const killed = await sql<{ ok: boolean }>(
      url,
      "SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE query = $1",
      [`LISTEN "${schema}_changes"`],
    );
    expect(killed.length).toBe(2);
    let n = 0;
    // The listeners reconnect within their backoff; a change committed after that is heard.
    await eventually(async () => {
      await a.putEntry(entry(`agent:main:after-${++n}`, 1));
      return heard.length > 0;
    });
    expect(heard[0]).toMatchObject({ type: "entry", op: "put" });
  });

  it("never loses a read-modify-write between units on different stores", async () => {
    const { a, b } = await pair();
    await a.putEntry(entry("agent:main:counter", 1, { label: "0" }));
    await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        (i % 2 === 0 ? a : b).transaction(async (tx) => {
          const current = Number((await tx.getEntry("agent:main:counter"))?.label);
          await new Promise((resolve) => setTimeout(resolve, 1));
          await tx.putEntry(entry("agent:main:counter", 1, { label: String(current + 1) }));
        }),
      ),
    );
    expect((await b.getEntry("agent:main:counter"))?.label).toBe("20");
  });

  it("makes one run per idempotency key when stores check-then-create at once", async () => {
    const { a, b } = await pair();
    const attempts = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        (i % 2 === 0 ? a : b).transaction(async (tx): Promise<RunRecord> => {
          const existing = await tx.findRunByIdempotencyKey("same-key");
          if (existing !== undefined) return existing;
          const input = await tx.appendMessage("agent:main:main", { role: "user", content: "hi", ts: i });
          const created = run(`run-${i}`, { idempotencyKey: "same-key", inputSeq: input.seq });
          await tx.putRun(created);
          return created;
        }),
      ),
    );
    expect(new Set(attempts.map((r) => r.runId)).size).toBe(1);
    expect(await a.countMessages("agent:main:main")).toBe(1);
  });

  it("keeps transcript sequence numbers contiguous when stores append at once", async () => {
    const { a, b } = await pair();
    const stored = await Promise.all(
      Array.from({ length: 60 }, (_, i) =>
        (i % 2 === 0 ? a : b).appendMessage("s", { role: "user", content: `m${i}`, ts: i }),
      ),
    );
    expect(stored.map((m) => m.seq).sort((x, y) => x - y)).toEqual(
      Array.from({ length: 60 }, (_, i) => i + 1),
    );
    expect((await b.readMessages("s", { limit: 100 })).map((m) => m.seq)).toEqual(
      Array.from({ length: 60 }, (_, i) => i + 1),
    );
  });

  it("hands each due delivery to exactly one of the stores claiming at once (SKIP LOCKED)", async () => {
    const { a, b } = await pair();
    for (let i = 0; i < 60; i++) await a.enqueueDelivery(delivery(`d${i}`, `k${i}`, { nextAttemptAt: i }));
    const rounds = await Promise.all(
      Array.from({ length: 24 }, (_, i) =>
        (i % 2 === 0 ? a : b).claimDeliveries({ owner: `o${i}`, now: 1000, ttlMs: 60_000, limit: 3 }),
      ),
    );
    const ids = rounds.flat().map((d) => d.id);
    expect(ids).toHaveLength(60);
    expect(new Set(ids).size).toBe(60);
    expect(await b.claimDeliveries({ owner: "late", now: 1000, ttlMs: 1, limit: 10 })).toEqual([]);
  });

  it("gives a lease to one store at a time and to the other once it lapses", async () => {
    const { a, b } = await pair();
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        (i % 2 === 0 ? a : b).acquireLease({ name: "adapter:discord", owner: `g${i}`, ttlMs: 1000, now: 50 }),
      ),
    );
    expect(results.filter((r) => r.acquired)).toHaveLength(1);
    const winner = results.find((r) => r.acquired);
    const taken = await b.acquireLease({ name: "adapter:discord", owner: "late", ttlMs: 1000, now: 1050 });
    expect(taken).toMatchObject({ acquired: true, lease: { owner: "late" } });
    expect(winner?.acquired && (await a.renewLease("adapter:discord", winner.lease.owner, 1000, 1060))).toBe(
      false,
    );
  });
});
