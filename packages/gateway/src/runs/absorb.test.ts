import { describe, expect, it } from "vitest";
import { createManualClock } from "../clock.js";
import { run } from "../store/contract-records.js";
import type { RunRecord } from "../store/types.js";
import { openStore, STORE_KINDS } from "../test-kit.js";
import { mergeQueuedRun } from "./absorb.js";

describe.each(STORE_KINDS)("mergeQueuedRun on the %s store", (kind) => {
  const setup = async (taker: Partial<RunRecord>) => {
    const { store } = openStore(kind);
    const ctx = { store, clock: createManualClock() };
    const queued = run("queued", { status: "queued", owner: "g1", userMessage: true });
    await store.putRun(queued);
    await store.putRun(run("taker", { owner: "g1", ...taker }));
    return { store, ctx, queued };
  };

  it("takes a queued run into a running one, and says so again to a retry (its first answer lost)", async () => {
    const { store, ctx, queued } = await setup({ status: "running" });
    const merged = await mergeQueuedRun(ctx, queued, "taker");
    expect(merged).toMatchObject({ runId: "queued", status: "ok", mergedInto: "taker" });
    expect(await mergeQueuedRun(ctx, queued, "taker")).toEqual(merged);
    expect(await store.getRun("queued")).toEqual(merged);
    // Another run cannot take it any more.
    await store.putRun(run("other", { status: "running", owner: "g1" }));
    expect(await mergeQueuedRun(ctx, queued, "other")).toBeUndefined();
    await store.close();
  });

  it("leaves the run queued when the taker has ended: an ended run can no longer answer it", async () => {
    for (const status of ["ok", "aborted", "error", "timeout"] as const) {
      const { store, ctx, queued } = await setup({ status, endedAt: 1 });
      expect(await mergeQueuedRun(ctx, queued, "taker")).toBeUndefined();
      expect(await store.getRun("queued")).toMatchObject({ status: "queued" });
      expect((await store.getRun("queued"))?.mergedInto).toBeUndefined();
      await store.close();
    }
  });
});
