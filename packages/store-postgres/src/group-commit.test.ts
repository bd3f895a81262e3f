import type { Logger } from "@sessions/core";
import type { RunStartUnit, SessionStore } from "@sessions/gateway";
import { afterAll, describe, expect, inject, it } from "vitest";
import { freshSchema, sql, storeOpener } from "./testing/helpers.js";

/**
 * Group commit: runs started (or ended) at the same moment share one statement and one transaction; a unit that
 * fails does not take the others down with it. Counted, not timed: transaction ids Postgres handed out.
 */
const url = inject("postgresUrl");
const stores = storeOpener(url);
afterAll(() => stores.closeAll());

const start = (i: number, extra: Partial<RunStartUnit> = {}): RunStartUnit => ({
  sessionKey: `agent:main:s${i}`,
  idempotencyKey: `k${i}`,
  freshRunId: `r${i}`,
  now: 10,
  input: { role: "user", content: `m${i}`, ts: 10 },
  run: {
    sessionKey: `agent:main:s${i}`,
    agentId: "main",
    kind: "chat",
    status: "running",
    createdAt: 10,
    owner: "gw",
  },
  ...extra,
});

/** Write transactions (transaction ids assigned) while `work` runs, less the two this count takes. */
async function writeTransactions(work: () => Promise<unknown>): Promise<number> {
  const xid = async () =>
    Number((await sql<{ x: string }>(url, "SELECT pg_current_xact_id()::text AS x"))[0]?.x);
  const before = await xid();
  await work();
  return (await xid()) - before - 1;
}

describe("group commit on Postgres", () => {
  let store: SessionStore;

  it("starts and ends of 64 runs issued together commit in a few transactions, each unit as if alone", async () => {
    store = await stores.open(freshSchema("group"));
    const runs = Array.from({ length: 64 }, (_, i) => i);
    let started: Awaited<ReturnType<NonNullable<SessionStore["recordRunStart"]>>>[] = [];
    const startTransactions = await writeTransactions(async () => {
      started = await Promise.all(runs.map((i) => store.recordRunStart?.(start(i))));
    });
    expect(started.map((result) => result?.created)).toEqual(runs.map(() => true));
    expect(started.map((result) => result?.run.runId)).toEqual(runs.map((i) => `r${i}`));
    expect(startTransactions).toBeLessThanOrEqual(4);
    for (const i of runs) expect((await store.findRunByIdempotencyKey(`k${i}`))?.inputSeq).toBe(1);

    const endTransactions = await writeTransactions(() =>
      Promise.all(
        runs.map((i) =>
          store.recordRunEnd?.({
            run: {
              ...(started[i]?.run as NonNullable<(typeof started)[number]>["run"]),
              status: "ok",
              reply: "x",
            },
            owner: "gw",
            reply: { role: "assistant", content: `reply ${i}`, ts: 11, runId: `r${i}` },
            entry: { updatedAt: 11 },
          }),
        ),
      ),
    );
    expect(endTransactions).toBeLessThanOrEqual(4);
    for (const i of runs) {
      expect((await store.getRun(`r${i}`))?.status).toBe("ok");
      expect((await store.readMessages(`agent:main:s${i}`, { limit: 5 })).map((m) => m.seq)).toEqual([1, 2]);
    }
  });

  it("a unit that fails fails alone: the others of its batch are recorded", async () => {
    store = await stores.open(freshSchema("group_fail"));
    const results = await Promise.allSettled([
      store.recordRunStart?.(start(1)),
      store.recordRunStart?.(start(2, { now: Number.NaN })),
      store.recordRunStart?.(start(3)),
    ]);
    expect(results.map((result) => result.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect((results[1] as PromiseRejectedResult).reason).toMatchObject({ code: "unavailable" });
    expect((await store.getRun("r1"))?.status).toBe("running");
    expect(await store.getRun("r2")).toBeUndefined();
    expect(await store.countMessages("agent:main:s2")).toBe(0);
    expect((await store.getRun("r3"))?.status).toBe("running");
  });

  it("a batch carries keys as a unit alone does: a NUL or a lone surrogate in one fails nothing", async () => {
    const warnings: string[] = [];
    const logger: Logger = {
      debug() {},
      info() {},
      warn: (message) => void warnings.push(message),
      error() {},
      child: () => logger,
    };
    store = await stores.open(freshSchema("group_plain"), { logger });
    const keys = ["agent:main:nul\u0000key", "agent:main:lone\ud800key", "agent:main:plain"];
    const results = await Promise.allSettled(
      keys.map((sessionKey, i) =>
        store.recordRunStart?.(
          start(i, { sessionKey, idempotencyKey: `plain\u0000${i}`, run: { ...start(i).run, sessionKey } }),
        ),
      ),
    );
    expect(results.map((result) => result.status)).toEqual(["fulfilled", "fulfilled", "fulfilled"]);
    // One batch, not each alone after it failed.
    expect(warnings).toEqual([]);
    for (const [i, key] of keys.entries()) {
      expect(await store.countMessages(key)).toBe(1);
      expect((await store.getRun(`r${i}`))?.status).toBe("running");
    }
    // Started again under the same idempotency key: the run it started, found through the key as stored.
    const again = await store.recordRunStart?.(
      start(0, { sessionKey: keys[0] as string, idempotencyKey: "plain\u00000" }),
    );
    expect(again).toMatchObject({ created: false, run: { runId: "r0" } });
  });

  it("batches that hold several sessions take them in one order: no deadlock, whatever order units arrive in", async () => {
    const warnings: string[] = [];
    const logger: Logger = {
      debug() {},
      info() {},
      warn: (message, fields) => void warnings.push(`${message} ${JSON.stringify(fields)}`),
      error() {},
      child: () => logger,
    };
    const store = await stores.open(freshSchema("group_order"), { logger });
    const sessions = 40;
    // Starts of the same sessions in opposite orders, arriving together: without an order per batch, two batches
    // each hold a session the other waits for, and Postgres ends one of them after its deadlock timeout.
    const order = (i: number, round: number) => (round % 2 === 0 ? i : sessions - 1 - i);
    const units: Promise<unknown>[] = [];
    for (let round = 0; round < 20; round++) {
      for (let i = 0; i < sessions; i++) {
        const n = order(i, round);
        const key = `agent:main:deadlock${n}`;
        units.push(
          store.recordRunStart?.(
            start(n, {
              sessionKey: key,
              idempotencyKey: `dl-${round}-${n}`,
              freshRunId: `dl-${round}-${n}`,
              run: { ...start(n).run, sessionKey: key, status: "queued" },
            }),
          ) as Promise<unknown>,
        );
      }
    }
    const results = await Promise.allSettled(units);
    // A batch that deadlocked is done again unit by unit (every call succeeds all the same), and logged.
    expect(warnings.filter((w) => /deadlock/i.test(w))).toEqual([]);
    expect(
      results.filter((r) => r.status === "rejected").map((r) => String((r as PromiseRejectedResult).reason)),
    ).toEqual([]);
    expect(await store.countMessages("agent:main:deadlock0")).toBe(20);
  });
});
