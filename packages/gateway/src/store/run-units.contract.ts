import { describe, expect, it } from "vitest";
import { delivery, entry, run } from "./contract-records.js";
import { applyRunDelta, recordRunEnd, recordRunStart } from "./run-units.js";
import type { EntryRunDelta, RunStartUnit, SessionStore } from "./types.js";

const KEY = "agent:main:main";
const NUL = String.fromCharCode(0);

const startUnit = (extra: Partial<RunStartUnit> = {}): RunStartUnit => ({
  sessionKey: KEY,
  freshRunId: "fresh",
  now: 5_000,
  input: { role: "user", content: "hello", ts: 50 },
  run: {
    sessionKey: KEY,
    agentId: "main",
    kind: "chat",
    status: "running",
    createdAt: 50,
    startedAt: 50,
    owner: "gw",
  },
  ...extra,
});

/**
 * A run's two units (`recordRunStart`, `recordRunEnd`): what a store that does them natively must do, the same as
 * the gateway does them through `transaction` for a store that does not.
 */
export function describeRunUnitsContract(open: () => SessionStore | Promise<SessionStore>): void {
  describe("a run's start and end units", () => {
    it("start: touches the entry, appends the input with the run's id, records the run with the input's seq", async () => {
      const store = await open();
      await store.putEntry(entry(KEY, 1, { label: `tab${NUL}bed`, displayName: "naïve ✓" }));
      await store.appendMessage(KEY, { role: "user", content: "before", ts: 1 });
      const started = await recordRunStart(
        store,
        startUnit({
          idempotencyKey: "idem-1",
          input: { role: "user", content: `a${NUL}b "q" \\ ✓`, ts: 50 },
        }),
      );
      expect(started.created).toBe(true);
      if (!started.created) throw new Error("not created");
      expect(started.run).toEqual({
        runId: "fresh",
        ...startUnit().run,
        idempotencyKey: "idem-1",
        inputSeq: 2,
      });
      expect(started.input).toEqual({
        role: "user",
        content: `a${NUL}b "q" \\ ✓`,
        ts: 50,
        runId: "fresh",
        seq: 2,
      });
      expect(started.entry).toEqual(entry(KEY, 5_000, { label: `tab${NUL}bed`, displayName: "naïve ✓" }));
      expect(await store.getEntry(KEY)).toEqual(started.entry);
      expect(await store.getRun("fresh")).toEqual(started.run);
      expect(await store.findRunByIdempotencyKey("idem-1")).toEqual(started.run);
      expect(await store.readMessages(KEY, { limit: 10 })).toEqual([
        { role: "user", content: "before", ts: 1, seq: 1 },
        started.input,
      ]);
      await store.close();
    });

    it("start: leaves an entry updated less than a second before as it is, and answers it", async () => {
      const store = await open();
      await store.putEntry(entry(KEY, 4_001, { label: "busy" }));
      const started = await recordRunStart(store, startUnit());
      if (!started.created) throw new Error("not created");
      expect(started.entry).toEqual(entry(KEY, 4_001, { label: "busy" }));
      expect(await store.getEntry(KEY)).toEqual(started.entry);
      // A second or more behind: moved.
      const later = await recordRunStart(store, startUnit({ freshRunId: "later", now: 5_001 }));
      expect(later.created && later.entry?.updatedAt).toBe(5_001);
      expect((await store.getEntry(KEY))?.updatedAt).toBe(5_001);
      await store.close();
    });

    it("start: a session without an entry gets its run and transcript, and no entry", async () => {
      const store = await open();
      const started = await recordRunStart(store, startUnit());
      expect(started).toMatchObject({
        created: true,
        entry: undefined,
        run: { runId: "fresh", inputSeq: 1 },
      });
      expect(await store.getEntry(KEY)).toBeUndefined();
      expect(await store.countMessages(KEY)).toBe(1);
      await store.close();
    });

    it("start: a repeated idempotency key answers the first run and writes nothing", async () => {
      const store = await open();
      await store.putEntry(entry(KEY, 1));
      const first = await recordRunStart(store, startUnit({ idempotencyKey: "k" }));
      const again = await recordRunStart(
        store,
        startUnit({ idempotencyKey: "k", freshRunId: "other", now: 99 }),
      );
      expect(again).toEqual({ created: false, run: first.run });
      expect(await store.countMessages(KEY)).toBe(1);
      expect((await store.getEntry(KEY))?.updatedAt).toBe(5_000);
      expect(await store.getRun("other")).toBeUndefined();
      await store.close();
    });

    it("start: concurrent starts with one idempotency key make one run", async () => {
      const store = await open();
      const results = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          recordRunStart(store, startUnit({ idempotencyKey: "same", freshRunId: `r${i}` })),
        ),
      );
      expect(results.filter((result) => result.created)).toHaveLength(1);
      expect(new Set(results.map((result) => result.run.runId)).size).toBe(1);
      expect(await store.countMessages(KEY)).toBe(1);
      await store.close();
    });

    it("start: the run id is runId if given, else the preferred one unless taken, else the fresh one", async () => {
      const store = await open();
      await store.putRun(run("taken", { sessionKey: KEY }));
      const preferred = await recordRunStart(store, startUnit({ preferredRunId: "mine" }));
      const fallback = await recordRunStart(
        store,
        startUnit({ preferredRunId: "taken", freshRunId: "fresh-2" }),
      );
      const given = await recordRunStart(
        store,
        startUnit({ runId: "given", preferredRunId: "x", freshRunId: "y" }),
      );
      expect([preferred.run.runId, fallback.run.runId, given.run.runId]).toEqual([
        "mine",
        "fresh-2",
        "given",
      ]);
      expect((await store.readMessages(KEY, { limit: 10 })).map((message) => message.runId)).toEqual([
        "mine",
        "fresh-2",
        "given",
      ]);
      await store.close();
    });

    it("start: takes the lease it asks for with the start; a lease held elsewhere leaves the run queued", async () => {
      const store = await open();
      const lease = (name: string, owner: string, now = 50) => ({
        name,
        owner,
        ttlMs: 1_000,
        now,
        data: { pid: 1 },
      });
      expect((await store.acquireLease(lease("lane:held", "gw-other"))).acquired).toBe(true);
      expect((await store.acquireLease(lease("lane:lapsed", "gw-other", 0))).acquired).toBe(true);
      const free = await recordRunStart(
        store,
        startUnit({ freshRunId: "a", lease: lease("lane:free", "gw") }),
      );
      const held = await recordRunStart(
        store,
        startUnit({ freshRunId: "b", lease: lease("lane:held", "gw") }),
      );
      const lapsed = await recordRunStart(
        store,
        startUnit({ freshRunId: "c", lease: lease("lane:lapsed", "gw", 2_000) }),
      );
      expect(free).toMatchObject({ run: { status: "running", startedAt: 50 }, lease: { acquired: true } });
      expect(free.lease).toMatchObject({ lease: { name: "lane:free", owner: "gw", expiresAt: 1_050 } });
      expect(held).toMatchObject({
        run: { status: "queued" },
        lease: { acquired: false, holder: { owner: "gw-other" } },
      });
      expect(held.run.startedAt).toBeUndefined();
      expect(await store.getRun("b")).toEqual(held.run);
      expect(lapsed).toMatchObject({ run: { status: "running" }, lease: { acquired: true } });
      expect((await store.getLease("lane:free"))?.data).toEqual({ pid: 1 });
      expect((await store.getLease("lane:held"))?.owner).toBe("gw-other");
      expect((await store.getLease("lane:lapsed"))?.owner).toBe("gw");
      await store.close();
    });

    it("start: takes a lease another owner let lapse only when it lapsed before lapsedBefore", async () => {
      const store = await open();
      const lease = (owner: string, now: number, lapsedBefore?: number) => ({
        name: "lane:margin",
        owner,
        ttlMs: 1_000,
        now,
        lapsedBefore,
      });
      expect((await store.acquireLease(lease("gw-other", 0))).acquired).toBe(true);
      // Lapsed at 1,000; a gateway keeping a margin of 100 leaves it until 1,100.
      const early = await recordRunStart(
        store,
        startUnit({ freshRunId: "m1", lease: lease("gw", 1_050, 950) }),
      );
      expect(early).toMatchObject({
        run: { status: "queued" },
        lease: { acquired: false, holder: { owner: "gw-other" } },
      });
      const late = await recordRunStart(
        store,
        startUnit({ freshRunId: "m2", lease: lease("gw", 1_100, 1_000) }),
      );
      expect(late).toMatchObject({
        run: { status: "running" },
        lease: { acquired: true, lease: { owner: "gw" } },
      });
      expect((await store.getLease("lane:margin"))?.expiresAt).toBe(2_100);
      await store.close();
    });

    it("end: appends the reply, adds usage and sets flags on the entry, enqueues the delivery, ends the run", async () => {
      const store = await open();
      await store.putEntry(entry(KEY, 1, { inputTokens: 5, abortedLastRun: true, label: `l${NUL}` }));
      await store.putRun(run("r1", { sessionKey: KEY, status: "running", owner: "gw" }));
      const final = run("r1", {
        sessionKey: KEY,
        status: "ok" as const,
        owner: "gw",
        reply: "done",
        endedAt: 60,
      });
      const reply = { role: "assistant" as const, content: `done${NUL}`, ts: 60, runId: "r1" };
      const delta: EntryRunDelta = {
        updatedAt: 5_000,
        tokens: { inputTokens: 3, outputTokens: 4 },
        systemSent: true,
        abortedLastRun: false,
      };
      const queued = delivery("d1", "reply:r1", {
        sessionKey: KEY,
        runId: "r1",
        leaseOwner: "gw",
        leaseUntil: 99,
      });
      const ended = await recordRunEnd(store, {
        run: final,
        owner: "gw",
        reply,
        entry: delta,
        delivery: queued,
      });
      const expected = entry(KEY, 5_000, {
        inputTokens: 8,
        outputTokens: 4,
        abortedLastRun: false,
        systemSent: true,
        label: `l${NUL}`,
      });
      // It answers the entry as it left it.
      expect(ended).toEqual({ ended: true, delivery: { record: queued, created: true }, entry: expected });
      expect(await store.getRun("r1")).toEqual(final);
      expect(await store.readMessages(KEY, { limit: 10 })).toEqual([{ ...reply, seq: 1 }]);
      expect(await store.getEntry(KEY)).toEqual(expected);
      expect(await store.getDelivery("d1")).toEqual(queued);
      await store.close();
    });

    it("end: the entry changes exactly as applyRunDelta says, for each kind of end", async () => {
      const store = await open();
      const deltas: EntryRunDelta[] = [
        { updatedAt: 70 },
        { updatedAt: 71, abortedLastRun: true },
        { updatedAt: 72, abortedLastRun: false, systemSent: true, tokens: { totalTokens: 2 } },
        { updatedAt: 73, tokens: { inputTokens: 0, outputTokens: 1.5, totalTokens: 1e12 } },
        // A second or more after the entry's updatedAt: it moves (with the tokens and flags, or alone).
        { updatedAt: 1_001 },
        { updatedAt: 5_000, abortedLastRun: true, tokens: { inputTokens: 2 } },
        // Less than a second after, and before it (another gateway's clock): it stays, and an end that changes
        // nothing else leaves the entry as it was.
        { updatedAt: 1_000 },
        { updatedAt: 0, systemSent: true },
      ];
      const starts = [
        entry(KEY, 1),
        entry(KEY, 1, { abortedLastRun: false, totalTokens: 7, systemSent: true }),
        entry(KEY, 1, { inputTokens: 1, outputTokens: 2, totalTokens: 3, abortedLastRun: true }),
      ];
      let n = 0;
      for (const start of starts) {
        for (const delta of deltas) {
          const runId = `r${n++}`;
          await store.putEntry(start);
          await store.putRun(run(runId, { sessionKey: KEY, status: "running", owner: "gw" }));
          const final = run(runId, { sessionKey: KEY, status: "error", owner: "gw", endedAt: 5 });
          expect(await recordRunEnd(store, { run: final, owner: "gw", entry: delta })).toEqual({
            ended: true,
            delivery: undefined,
            entry: applyRunDelta(start, delta),
          });
          expect({ start, delta, entry: await store.getEntry(KEY) }).toEqual({
            start,
            delta,
            entry: applyRunDelta(start, delta),
          });
        }
      }
      await store.close();
    });

    it("end: starts the next run of the session with it, only while that one is still queued and the owner's", async () => {
      const store = await open();
      await store.putEntry(entry(KEY, 1));
      const end = (runId: string, next: string) =>
        recordRunEnd(store, {
          run: run(runId, { sessionKey: KEY, status: "ok", owner: "gw", endedAt: 9 }),
          owner: "gw",
          entry: { updatedAt: 5_000 },
          next: run(next, { sessionKey: KEY, status: "running", owner: "gw", startedAt: 9 }),
        });
      await store.putRun(run("r1", { sessionKey: KEY, status: "running", owner: "gw" }));
      await store.putRun(run("r2", { sessionKey: KEY, status: "queued", owner: "gw" }));
      expect(await end("r1", "r2")).toMatchObject({
        ended: true,
        nextStarted: true,
        entry: entry(KEY, 5_000),
      });
      expect(await store.getRun("r2")).toEqual(
        run("r2", { sessionKey: KEY, status: "running", owner: "gw", startedAt: 9 }),
      );
      // Ended meanwhile (merged into another run, aborted), or another gateway's: left as it is.
      await store.putRun(run("r3", { sessionKey: KEY, status: "ok", owner: "gw" }));
      expect(await end("r2", "r3")).toMatchObject({ ended: true, nextStarted: false });
      expect((await store.getRun("r3"))?.status).toBe("ok");
      await store.putRun(run("r4", { sessionKey: KEY, status: "running", owner: "gw" }));
      await store.putRun(run("r5", { sessionKey: KEY, status: "queued", owner: "gw-other" }));
      expect(await end("r4", "r5")).toMatchObject({ ended: true, nextStarted: false });
      expect(await store.getRun("r5")).toMatchObject({ status: "queued", owner: "gw-other" });
      // An end refused starts nothing.
      await store.putRun(run("r6", { sessionKey: KEY, status: "queued", owner: "gw" }));
      expect(await end("r1", "r6")).toEqual({ ended: false });
      expect((await store.getRun("r6"))?.status).toBe("queued");
      await store.close();
    });

    it("end: an existing delivery with the reply's key is answered, not enqueued again", async () => {
      const store = await open();
      const first = delivery("d-first", "reply:r1", { sessionKey: KEY });
      await store.enqueueDelivery(first);
      await store.putRun(run("r1", { sessionKey: KEY, status: "running", owner: "gw" }));
      const final = run("r1", { sessionKey: KEY, status: "ok", owner: "gw" });
      const ended = await recordRunEnd(store, {
        run: final,
        owner: "gw",
        entry: { updatedAt: 5 },
        delivery: delivery("d-second", "reply:r1", { sessionKey: KEY }),
      });
      expect(ended).toEqual({ ended: true, delivery: { record: first, created: false } });
      expect(await store.getDelivery("d-second")).toBeUndefined();
      await store.close();
    });

    it("end: gives up the lease it is asked to with the end, and keeps it when the run was ended elsewhere", async () => {
      const store = await open();
      const lease = (name: string) => ({ name, owner: "gw", ttlMs: 60_000, now: 1 });
      for (const name of ["lane:a", "lane:b"])
        expect((await store.acquireLease(lease(name))).acquired).toBe(true);
      await store.putRun(run("r-a", { sessionKey: KEY, status: "running", owner: "gw" }));
      await store.putRun(run("r-b", { sessionKey: KEY, status: "ok", owner: "gw" }));
      for (const [runId, name, ended] of [
        ["r-a", "lane:a", true],
        ["r-b", "lane:b", false],
      ] as const) {
        const result = await recordRunEnd(store, {
          run: run(runId, { sessionKey: KEY, status: "ok", owner: "gw" }),
          owner: "gw",
          entry: { updatedAt: 5 },
          releaseLease: { name, owner: "gw" },
        });
        expect(result.ended).toBe(ended);
      }
      expect(await store.getLease("lane:a")).toBeUndefined();
      expect((await store.getLease("lane:b"))?.owner).toBe("gw");
      await store.close();
    });

    it("end: a run ended elsewhere (or another owner's) writes nothing of this end", async () => {
      const store = await open();
      await store.putEntry(entry(KEY, 1));
      await store.putRun(run("mine", { sessionKey: KEY, status: "running", owner: "gw-other" }));
      await store.putRun(run("over", { sessionKey: KEY, status: "error", owner: "gw" }));
      for (const runId of ["mine", "over"]) {
        const ended = await recordRunEnd(store, {
          run: run(runId, { sessionKey: KEY, status: "ok", owner: "gw", reply: "x" }),
          owner: "gw",
          reply: { role: "assistant", content: "x", ts: 9, runId },
          entry: { updatedAt: 9, systemSent: true, tokens: { inputTokens: 1 } },
          delivery: delivery(`d-${runId}`, `reply:${runId}`, { sessionKey: KEY }),
        });
        expect(ended).toEqual({ ended: false });
        expect(await store.getDelivery(`d-${runId}`)).toBeUndefined();
      }
      expect(await store.countMessages(KEY)).toBe(0);
      expect(await store.getEntry(KEY)).toEqual(entry(KEY, 1));
      expect((await store.getRun("mine"))?.status).toBe("running");
      expect((await store.getRun("over"))?.status).toBe("error");
      await store.close();
    });
  });
}
