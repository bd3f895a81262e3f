import { describe, expect, it } from "vitest";
import { delivery, run } from "./contract-records.js";
import { appendUnderLane, recordRunEnd } from "./run-units.js";
import type { SessionStore, StoreChange } from "./types.js";

/**
 * The fences of a store shared by several gateways: a gateway that stalled past its lease and wakes up must not
 * overwrite what another gateway recorded meanwhile (the end of a run it recovered, a delivery it took over).
 */
export function describeFencingContract(open: () => SessionStore | Promise<SessionStore>): void {
  describe("fences", () => {
    it("ends a run only while it is under way and still the caller's", async () => {
      const store = await open();
      const changes: StoreChange[] = [];
      const unwatch = store.watch((change) => changes.push(change));
      await store.putRun(run("r-ok", { status: "running", owner: "gw-a" }));
      await store.putRun(run("r-queued", { owner: "gw-a" }));
      expect(await store.endRun(run("r-ok", { status: "ok", owner: "gw-a", reply: "hi" }), "gw-a")).toBe(
        true,
      );
      expect(await store.getRun("r-ok")).toMatchObject({ status: "ok", reply: "hi" });
      expect(await store.endRun(run("r-queued", { status: "error", owner: "gw-a" }), "gw-a")).toBe(true);
      // Ended already: a second end (a late, stale one) changes nothing.
      expect(await store.endRun(run("r-ok", { status: "error", owner: "gw-a" }), "gw-a")).toBe(false);
      expect(await store.getRun("r-ok")).toMatchObject({ status: "ok", reply: "hi" });
      expect(await store.endRun(run("missing", { status: "ok", owner: "gw-a" }), "gw-a")).toBe(false);
      expect(await store.getRun("missing")).toBeUndefined();
      expect(await store.listRunsByStatus(["ok", "error"])).toHaveLength(2);
      expect(changes.filter((c) => c.type === "run").map((c) => c.type === "run" && c.status)).toEqual([
        "running",
        "queued",
        "ok",
        "error",
      ]);
      unwatch();
      await store.close();
    });

    it("keeps the end another gateway recorded while the owner was paused", async () => {
      const store = await open();
      await store.putRun(run("r", { status: "running", owner: "gw-a", followUp: undefined }));
      // Another gateway found gw-a's lease lapsed and ended the run (owner unchanged, as recovery does).
      await store.putRun(run("r", { status: "error", owner: "gw-a", error: "gateway restarted" }));
      expect(await store.endRun(run("r", { status: "ok", owner: "gw-a", reply: "late" }), "gw-a")).toBe(
        false,
      );
      expect(await store.getRun("r")).toMatchObject({ status: "error", error: "gateway restarted" });
      expect((await store.getRun("r"))?.reply).toBeUndefined();
      // A run that changed hands is not the old owner's to end either.
      await store.putRun(run("r2", { status: "running", owner: "gw-b" }));
      expect(await store.endRun(run("r2", { status: "ok", owner: "gw-a" }), "gw-a")).toBe(false);
      expect(await store.getRun("r2")).toMatchObject({ status: "running", owner: "gw-b" });
      await store.close();
    });

    it("starts a queued run only while it is still queued and the caller's", async () => {
      const store = await open();
      await store.putRun(run("waiting", { owner: "gw-a" }));
      expect(await store.endRun(run("waiting", { status: "running", owner: "gw-a" }), "gw-a")).toBe(true);
      expect(await store.getRun("waiting")).toMatchObject({ status: "running", owner: "gw-a" });
      // Recovery ended it while it waited in its lane: the late start leaves that end alone.
      await store.putRun(run("recovered", { owner: "gw-a" }));
      await store.putRun(run("recovered", { status: "error", owner: "gw-a", error: "gateway restarted" }));
      expect(await store.endRun(run("recovered", { status: "running", owner: "gw-a" }), "gw-a")).toBe(false);
      expect(await store.getRun("recovered")).toMatchObject({ status: "error", error: "gateway restarted" });
      // Another gateway took it over, still queued: not the old owner's to start.
      await store.putRun(run("taken", { owner: "gw-b" }));
      expect(await store.endRun(run("taken", { status: "running", owner: "gw-a" }), "gw-a")).toBe(false);
      expect(await store.getRun("taken")).toMatchObject({ status: "queued", owner: "gw-b" });
      await store.close();
    });

    it("lets exactly one of a queued run's start and a unit that ends it only while queued happen", async () => {
      // Queue modes: a gateway ends another's queued run (its message taken by a running run) while that gateway
      // may be starting it. Both are fenced: the start on "under way and gw-b's", the end on "still queued".
      const store = await open();
      for (let i = 0; i < 20; i++) {
        const id = `race-${i}`;
        await store.putRun(run(id, { owner: "gw-b" }));
        const start = () => store.endRun(run(id, { status: "running", owner: "gw-b" }), "gw-b");
        const merge = () =>
          store.transaction(async (tx) => {
            const current = await tx.getRun(id);
            if (current?.status !== "queued") return false;
            return tx.endRun({ ...current, status: "ok", mergedInto: "other" }, current.owner);
          });
        // Either may be asked first.
        const [started, merged] =
          i % 2 === 0
            ? await Promise.all([start(), merge()])
            : await Promise.all([merge(), start()]).then(([m, st]) => [st, m]);
        expect(started !== merged).toBe(true);
        expect(await store.getRun(id)).toMatchObject(
          started ? { status: "running" } : { status: "ok", mergedInto: "other" },
        );
      }
      await store.close();
    });

    it("undoes a fenced end with the rest of its unit, and a refused one throws nothing", async () => {
      const store = await open();
      await store.putRun(run("r", { status: "running", owner: "gw-a" }));
      await expect(
        store.transaction(async (tx) => {
          await tx.appendMessage("s", { role: "assistant", content: "reply", ts: 1 });
          expect(await tx.endRun(run("r", { status: "ok", owner: "gw-a" }), "gw-a")).toBe(true);
          throw new Error("rolled back");
        }),
      ).rejects.toThrow("rolled back");
      expect(await store.getRun("r")).toMatchObject({ status: "running" });
      expect(await store.countMessages("s")).toBe(0);
      const refused = await store.transaction((tx) => tx.endRun(run("r", { status: "ok" }), "gw-other"));
      expect(refused).toBe(false);
      expect(await store.getRun("r")).toMatchObject({ status: "running" });
      await store.close();
    });

    it("records a run's end under its lane only while no other owner holds the lane (its fencing token)", async () => {
      const store = await open();
      const end = (runId: string) =>
        recordRunEnd(store, {
          run: run(runId, { sessionKey: "s", status: "ok", owner: "gw-a", reply: "late" }),
          owner: "gw-a",
          reply: { role: "assistant", content: "late", ts: 2 },
          entry: { updatedAt: 2 },
          releaseLease: { name: "lane:s", owner: "gw-a" },
          fence: { name: "lane:s", owner: "gw-a" },
        });
      await store.putRun(run("r", { sessionKey: "s", status: "running", owner: "gw-a" }));
      // gw-a's lane lapsed while its end was held up; gw-b took the lane: the end is refused, nothing written.
      await store.acquireLease({ name: "lane:s", owner: "gw-a", ttlMs: 1000, now: 0 });
      expect(
        (await store.acquireLease({ name: "lane:s", owner: "gw-b", ttlMs: 60_000, now: 5000 })).acquired,
      ).toBe(true);
      expect(await end("r")).toEqual({ ended: false });
      expect(await store.getRun("r")).toMatchObject({ status: "running", owner: "gw-a" });
      expect(await store.countMessages("s")).toBe(0);
      expect((await store.getLease("lane:s"))?.owner).toBe("gw-b");
      // Its own lane, lapsed or not, or none at all: the end is recorded.
      await store.releaseLease("lane:s", "gw-b");
      await store.acquireLease({ name: "lane:s", owner: "gw-a", ttlMs: 1000, now: 0 });
      expect(await end("r")).toMatchObject({ ended: true });
      expect(await store.getRun("r")).toMatchObject({ status: "ok", reply: "late" });
      await store.putRun(run("r2", { sessionKey: "s", status: "running", owner: "gw-a" }));
      expect(await store.getLease("lane:s")).toBeUndefined();
      expect(await end("r2")).toMatchObject({ ended: true });
      await store.close();
    });

    it("appends a run's transcript line under its lane only while no other owner holds the lane", async () => {
      const store = await open();
      const fence = { name: "lane:s", owner: "gw-a" };
      const line = (text: string) => ({ role: "assistant" as const, content: text, ts: 1, runId: "r" });
      // No holder, or its own (lapsed or not): written, with its sequence number.
      expect(await appendUnderLane(store, "s", line("first"), fence)).toMatchObject({ seq: 1 });
      await store.acquireLease({ name: "lane:s", owner: "gw-a", ttlMs: 1000, now: 0 });
      expect(await appendUnderLane(store, "s", line("second"), fence)).toMatchObject({ seq: 2 });
      // gw-b took the lapsed lane: refused, nothing written.
      await store.acquireLease({ name: "lane:s", owner: "gw-b", ttlMs: 60_000, now: 5000 });
      expect(await appendUnderLane(store, "s", line("late"), fence)).toBeUndefined();
      const lines = await store.readMessages("s", { limit: 10 });
      expect(lines.map((m) => m.content)).toEqual(["first", "second"]);
      const gwB = { name: "lane:s", owner: "gw-b" };
      expect(await appendUnderLane(store, "s", line("b's"), gwB)).toMatchObject({ seq: 3 });
      await store.close();
    });

    it("finishes a delivery attempt only while it is queued and claimed by the caller or by no one", async () => {
      const store = await open();
      await store.enqueueDelivery(delivery("d1", "k1", { nextAttemptAt: 10 }));
      await store.enqueueDelivery(delivery("d2", "k2", { nextAttemptAt: 10 }));
      expect(await store.claimDeliveries({ owner: "gw-a", now: 10, ttlMs: 100, limit: 10 })).toHaveLength(2);
      // gw-a's claim lapses; gw-b claims both and delivers d1.
      expect(await store.claimDeliveries({ owner: "gw-b", now: 200, ttlMs: 100, limit: 10 })).toHaveLength(2);
      const done = (id: string, key: string, receipt: string) =>
        delivery(id, key, { status: "delivered", attempts: 1, receipt: [receipt] });
      expect(await store.finishDelivery(done("d1", "k1", "from-b"), "gw-b")).toBe(true);
      // gw-a wakes up: neither the delivered one nor the one gw-b holds is its to finish.
      expect(await store.finishDelivery(done("d1", "k1", "from-a"), "gw-a")).toBe(false);
      expect(await store.finishDelivery(done("d2", "k2", "from-a"), "gw-a")).toBe(false);
      expect(await store.getDelivery("d1")).toMatchObject({ status: "delivered", receipt: ["from-b"] });
      expect(await store.getDelivery("d2")).toMatchObject({ status: "queued", leaseOwner: "gw-b" });
      // A retry scheduled without a claim: whoever attempted it may record the outcome.
      expect(
        await store.finishDelivery(delivery("d2", "k2", { attempts: 1, nextAttemptAt: 500 }), "gw-b"),
      ).toBe(true);
      expect(await store.finishDelivery(done("d2", "k2", "from-a"), "gw-a")).toBe(true);
      expect(await store.getDelivery("d2")).toMatchObject({ status: "delivered", receipt: ["from-a"] });
      expect(await store.finishDelivery(done("missing", "k9", "x"), "gw-a")).toBe(false);
      await store.close();
    });
  });
}
