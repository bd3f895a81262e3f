import { afterAll, describe, expect, inject, it } from "vitest";
import { eventually, freshSchema, sql, storeOpener } from "./testing/helpers.js";

const url = inject("postgresUrl");
const stores = storeOpener(url);
afterAll(() => stores.closeAll());

describe("a lease read inside a unit of work (the fence of a run's writes)", () => {
  it("holds another gateway's takeover of the lease until the unit has committed", async () => {
    const schema = freshSchema("lease_hold");
    const a = await stores.open(schema);
    const b = await stores.open(schema);
    // gw-a's lane, lapsed (ttl 1 s from 0): gw-b may take it at 5000.
    await a.acquireLease({ name: "lane:s", owner: "gw-a", ttlMs: 1000, now: 0 });
    let commit = () => {};
    const committing = new Promise<void>((resolve) => {
      commit = resolve;
    });
    let checked = false;
    const unit = a.transaction(async (tx) => {
      const holder = await a.getLease("lane:s");
      checked = true;
      await committing;
      if (holder?.owner !== "gw-a") throw new Error("fenced");
      return tx.appendMessage("s", { role: "assistant", content: "under gw-a's lane", ts: 1 });
    });
    let taking: Promise<unknown> | undefined;
    // Let go in any case: a unit left open would hold the store's close (and the run) forever.
    try {
      await eventually(() => checked, "gw-a's unit has read its lease");
      taking = b.acquireLease({ name: "lane:s", owner: "gw-b", ttlMs: 60_000, now: 5000 });
      // The takeover waits on the lease row gw-a's unit read, not on anything else.
      await eventually(async () => {
        const waiting = await sql<{ n: number }>(
          url,
          `SELECT count(*)::int AS n FROM pg_stat_activity
            WHERE wait_event_type = 'Lock' AND query LIKE '%INSERT INTO %' || $1 || '%.leases AS l%'`,
          [schema],
        );
        return waiting[0]?.n === 1;
      }, "gw-b's takeover waiting on the lease row");
    } finally {
      commit();
    }
    expect(await unit).toMatchObject({ seq: 1 });
    expect(await taking).toMatchObject({ acquired: true, lease: { owner: "gw-b" } });
    expect((await a.readMessages("s", { limit: 5 })).map((m) => m.content)).toEqual(["under gw-a's lane"]);
  });
});
