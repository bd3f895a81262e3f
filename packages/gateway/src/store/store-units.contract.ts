import { expect, it } from "vitest";
import { binding, delivery, entry, run } from "./contract-records.js";
import type { DeliveryRecord, SessionStore, StoreChange } from "./types.js";

/** The unit-of-work half of the contract: transactions, the change feed, leases and delivery claims. */
export function describeUnitOfWorkContract(open: () => SessionStore | Promise<SessionStore>): void {
  it("commits every write of a transaction together and returns its result", async () => {
    const store = await open();
    const result = await store.transaction(async (tx) => {
      await tx.putEntry(entry("agent:main:main", 1));
      await tx.appendMessage("agent:main:main", { role: "user", content: "a", ts: 1 });
      await tx.putRun(run("r1"));
      expect(await tx.getEntry("agent:main:main")).toBeDefined();
      return "done";
    });
    expect(result).toBe("done");
    expect(await store.getEntry("agent:main:main")).toBeDefined();
    expect(await store.countMessages("agent:main:main")).toBe(1);
    expect(await store.getRun("r1")).toMatchObject({ status: "queued" });
    await store.close();
  });

  it("rolls back every write when the work throws, without consuming sequence numbers", async () => {
    const store = await open();
    await store.putEntry(entry("agent:main:kept", 1, { label: "before" }));
    await store.appendMessage("s", { role: "user", content: "m1", ts: 1 });
    const boom = new Error("boom");
    await expect(
      store.transaction(async (tx) => {
        await tx.putEntry(entry("agent:main:new", 2));
        await tx.putEntry(entry("agent:main:kept", 3, { label: "after" }));
        await tx.appendMessage("s", { role: "user", content: "m2", ts: 2 });
        await tx.appendMessage("fresh", { role: "user", content: "x", ts: 2 });
        await tx.putRun(run("r1"));
        await tx.enqueueDelivery(delivery("d1", "k1"));
        await tx.putRoute({ sessionKey: "s", channel: "c", accountId: "a", to: "t", updatedAt: 1 });
        await tx.putThreadBinding(binding("t1"));
        await tx.deleteEntry("agent:main:kept");
        throw boom;
      }),
    ).rejects.toBe(boom);
    expect(await store.getEntry("agent:main:new")).toBeUndefined();
    expect(await store.getEntry("agent:main:kept")).toMatchObject({ label: "before" });
    expect(await store.countMessages("fresh")).toBe(0);
    expect(await store.getRun("r1")).toBeUndefined();
    expect(await store.getDelivery("d1")).toBeUndefined();
    expect(await store.listRoutes("s")).toEqual([]);
    expect(await store.getThreadBinding("discord", "a", "t1")).toBeUndefined();
    expect((await store.appendMessage("s", { role: "user", content: "m2", ts: 3 })).seq).toBe(2);
    expect((await store.readMessages("s", { limit: 10 })).map((m) => m.content)).toEqual(["m1", "m2"]);
    await store.close();
  });

  it("hides a transaction's writes from callers outside it until it commits", async () => {
    const store = await open();
    let committed = false;
    const release = deferred();
    const written = deferred();
    const tx = store.transaction(async (t) => {
      await t.putEntry(entry("agent:main:x", 1, { label: "uncommitted" }));
      written.resolve();
      await release.promise;
    });
    await written.promise;
    const outside = store.getEntry("agent:main:x").then((e) => ({ label: e?.label, early: !committed }));
    await new Promise((r) => setTimeout(r, 20));
    committed = true;
    release.resolve();
    await tx;
    const seen = await outside;
    // Either it waited for the commit, or it read the committed state of before: never the open unit's write.
    if (seen.early) expect(seen.label).toBeUndefined();

    const rollback = deferred();
    const rolled = store.transaction(async (t) => {
      await t.putEntry(entry("agent:main:y", 1));
      await rollback.promise;
      throw new Error("undo");
    });
    const outsideY = store.getEntry("agent:main:y");
    rollback.resolve();
    await expect(rolled).rejects.toThrow("undo");
    expect(await outsideY).toBeUndefined();
    await store.close();
  });

  it("serialises concurrent read-modify-write transactions (no lost update)", async () => {
    const store = await open();
    await store.putEntry(entry("agent:main:counter", 1, { label: "0" }));
    await Promise.all(
      Array.from({ length: 10 }, () =>
        store.transaction(async (tx) => {
          const current = Number((await tx.getEntry("agent:main:counter"))?.label);
          await new Promise((r) => setTimeout(r, 2));
          await tx.putEntry(entry("agent:main:counter", 1, { label: String(current + 1) }));
        }),
      ),
    );
    expect((await store.getEntry("agent:main:counter"))?.label).toBe("10");
    await store.close();
  });

  it("runs a nested transaction as a savepoint and lets store calls inside the work join it", async () => {
    const store = await open();
    await store.transaction(async (tx) => {
      await tx.putEntry(entry("agent:main:outer", 1));
      await expect(
        store.transaction(async (inner) => {
          await inner.putEntry(entry("agent:main:inner", 1));
          throw new Error("inner only");
        }),
      ).rejects.toThrow("inner only");
      await store.transaction((inner) => inner.putRun(run("r-nested")));
      expect(await store.getEntry("agent:main:outer")).toBeDefined();
    });
    expect(await store.getEntry("agent:main:outer")).toBeDefined();
    expect(await store.getEntry("agent:main:inner")).toBeUndefined();
    expect(await store.getRun("r-nested")).toBeDefined();
    await store.close();
  });

  it("publishes one change per write after commit, none for a rollback, despite a throwing watcher", async () => {
    const store = await open();
    await store.putEntry(entry("agent:main:old", 1));
    const seen: StoreChange[] = [];
    const stopThrowing = store.watch(() => {
      throw new Error("watcher bug");
    });
    const stop = store.watch((change) => seen.push(change));
    await store.putEntry(entry("agent:main:plain", 1));
    expect(seen).toEqual([{ type: "entry", key: "agent:main:plain", op: "put" }]);
    seen.length = 0;
    await store.transaction(async (tx) => {
      await tx.putEntry(entry("agent:main:a", 1));
      await tx.putRun(run("r1", { status: "running" }));
      await tx.enqueueDelivery(delivery("d1", "k1"));
      await tx.enqueueDelivery(delivery("d2", "k1"));
      await tx.putDelivery(delivery("d1", "k1", { status: "delivered" }));
      await tx.deleteEntry("agent:main:old");
      await tx.deleteEntry("agent:main:missing");
      expect(seen).toEqual([]);
    });
    expect(seen).toEqual([
      { type: "entry", key: "agent:main:a", op: "put" },
      { type: "run", runId: "r1", sessionKey: "s", status: "running" },
      { type: "delivery", id: "d1", sessionKey: "agent:main:main", status: "queued" },
      { type: "delivery", id: "d1", sessionKey: "agent:main:main", status: "delivered" },
      { type: "entry", key: "agent:main:old", op: "delete" },
    ]);
    seen.length = 0;
    await expect(
      store.transaction(async (tx) => {
        await tx.putEntry(entry("agent:main:b", 1));
        throw new Error("no");
      }),
    ).rejects.toThrow("no");
    expect(seen).toEqual([]);
    stop();
    stopThrowing();
    await store.putEntry(entry("agent:main:c", 1));
    expect(seen).toEqual([]);
    await store.close();
  });

  it("grants a lease to one owner at a time, renews, steals after expiry, releases and lists by prefix", async () => {
    const store = await open();
    const take = (owner: string, now: number) =>
      store.acquireLease({ name: "run:1", owner, ttlMs: 100, now, data: { pid: 1 } });
    expect(await take("a", 1000)).toEqual({
      acquired: true,
      lease: { name: "run:1", owner: "a", acquiredAt: 1000, expiresAt: 1100, data: { pid: 1 } },
    });
    expect(await take("b", 1050)).toMatchObject({
      acquired: false,
      holder: { owner: "a", expiresAt: 1100 },
    });
    expect(await take("a", 1050)).toMatchObject({
      acquired: true,
      lease: { acquiredAt: 1000, expiresAt: 1150 },
    });
    expect(await store.renewLease("run:1", "a", 100, 1100)).toBe(true);
    expect(await store.renewLease("run:1", "b", 100, 1100)).toBe(false);
    expect(await store.getLease("run:1")).toMatchObject({ owner: "a", expiresAt: 1200 });
    expect(await take("b", 1199)).toMatchObject({ acquired: false });
    expect(await take("b", 1200)).toMatchObject({
      acquired: true,
      lease: { owner: "b", acquiredAt: 1200 },
    });
    expect(await store.renewLease("run:1", "a", 100, 1201)).toBe(false);
    expect(await store.releaseLease("run:1", "a")).toBe(false);
    await store.acquireLease({ name: "run:2", owner: "a", ttlMs: 100, now: 1200 });
    await store.acquireLease({ name: "runner", owner: "a", ttlMs: 100, now: 1200 });
    expect((await store.listLeases("run:")).map((l) => l.name)).toEqual(["run:1", "run:2"]);
    expect(await store.releaseLease("run:1", "b")).toBe(true);
    expect(await store.getLease("run:1")).toBeUndefined();
    expect((await store.listLeases("run:")).map((l) => l.name)).toEqual(["run:2"]);
    await store.close();
  });

  it("takes another owner's lease only once it lapsed before lapsedBefore, and renews its own whatever that says", async () => {
    const store = await open();
    const take = (owner: string, now: number, lapsedBefore?: number) =>
      store.acquireLease({ name: "lane:s", owner, ttlMs: 100, now, lapsedBefore });
    expect(await take("a", 1000)).toMatchObject({ acquired: true, lease: { expiresAt: 1100 } });
    // Expired at 1100, but a taker that keeps a margin of 50 judges it lapsed only from 1150 on.
    expect(await take("b", 1120, 1070)).toMatchObject({ acquired: false, holder: { owner: "a" } });
    expect(await take("b", 1149, 1099)).toMatchObject({ acquired: false, holder: { owner: "a" } });
    // A taker that judges nothing lapsed (0: cut off from the store until lately) takes no one's lease.
    expect(await take("b", 5000, 0)).toMatchObject({ acquired: false, holder: { owner: "a" } });
    // The holder renews its own lease whatever its own margin.
    expect(await take("a", 1130, 0)).toMatchObject({
      acquired: true,
      lease: { owner: "a", expiresAt: 1230 },
    });
    expect(await take("b", 1300, 1250)).toMatchObject({
      acquired: true,
      lease: { owner: "b", expiresAt: 1400 },
    });
    // A free lease is taken whatever the margin.
    expect(
      await store.acquireLease({ name: "lane:t", owner: "b", ttlMs: 100, now: 10, lapsedBefore: 0 }),
    ).toMatchObject({
      acquired: true,
    });
    await store.close();
  });

  it("claims due deliveries for one owner at a time, soonest first, and reclaims expired leases", async () => {
    const store = await open();
    await store.enqueueDelivery(delivery("d2", "k2", { nextAttemptAt: 20 }));
    await store.enqueueDelivery(delivery("d1", "k1", { nextAttemptAt: 10 }));
    await store.enqueueDelivery(delivery("d3", "k3", { nextAttemptAt: 100 }));
    await store.enqueueDelivery(delivery("d4", "k4", { nextAttemptAt: 5, status: "delivered" }));
    const claimA = await store.claimDeliveries({ owner: "A", now: 50, ttlMs: 1000, limit: 10 });
    expect(claimA.map((d) => [d.id, d.leaseOwner, d.leaseUntil])).toEqual([
      ["d1", "A", 1050],
      ["d2", "A", 1050],
    ]);
    expect(await store.getDelivery("d1")).toMatchObject({ leaseOwner: "A", leaseUntil: 1050 });
    expect(await store.claimDeliveries({ owner: "B", now: 60, ttlMs: 1000, limit: 10 })).toEqual([]);
    const claimB = await store.claimDeliveries({ owner: "B", now: 1050, ttlMs: 10, limit: 1 });
    expect(claimB.map((d) => [d.id, d.leaseOwner])).toEqual([["d1", "B"]]);
    const { leaseOwner: _o, leaseUntil: _u, ...released } = (await store.getDelivery("d3")) as DeliveryRecord;
    await store.putDelivery({ ...released, leaseOwner: "C", leaseUntil: 5000 });
    expect(await store.getDelivery("d3")).toMatchObject({ leaseOwner: "C", leaseUntil: 5000 });
    await store.putDelivery(released);
    expect(
      (await store.claimDeliveries({ owner: "B", now: 1055, ttlMs: 10, limit: 10 })).map((d) => d.id),
    ).toEqual(["d2", "d3"]);

    for (let i = 0; i < 40; i++)
      await store.enqueueDelivery(delivery(`m${i}`, `mk${i}`, { nextAttemptAt: i }));
    const rounds = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        store.claimDeliveries({ owner: i % 2 === 0 ? "X" : "Y", now: 2000, ttlMs: 10_000, limit: 3 }),
      ),
    );
    const ids = rounds.flat().map((d) => d.id);
    expect(ids).toHaveLength(36);
    expect(new Set(ids).size).toBe(36);
    await store.close();
  });
}

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve = () => {};
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}
