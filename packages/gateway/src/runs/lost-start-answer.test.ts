import { SessionsError } from "@sessions/core";
import { eventually } from "@sessions/testing/eventually";
import { afterEach, describe, expect, it } from "vitest";
import { createManualClock } from "../clock.js";
import type { GatewayOptions } from "../gateway.js";
import { recordRunStart } from "../store/run-units.js";
import type { RunStartUnit, SessionStore } from "../store/types.js";
import {
  createFakeChannel,
  type Harness,
  harness,
  openStore,
  STORE_KINDS,
  type StoreKind,
} from "../test-kit.js";

/**
 * The store commits the next run start it is given and then fails to answer, as a database that dies right after a
 * COMMIT does: the caller hears `unavailable` for a run that is recorded. `followUpReads` counts the answered reads of
 * the pending follow-ups: the last step of a recovery pass.
 */
function loseStartAnswers(
  store: SessionStore,
  times: number,
): { store: SessionStore; lost: () => number; followUpReads: () => number } {
  let lost = 0;
  let followUpReads = 0;
  const proxy: SessionStore = new Proxy(store, {
    get(target, prop, receiver) {
      if (prop === "listPendingFollowUps") {
        return async () => {
          const pending = await target.listPendingFollowUps();
          followUpReads++;
          return pending;
        };
      }
      if (prop === "recordRunStart") {
        return async (unit: RunStartUnit) => {
          const started = await recordRunStart(target, unit);
          if (started.created && lost < times) {
            lost++;
            throw new SessionsError("unavailable", "connection lost after COMMIT", { retryAfterMs: 100 });
          }
          return started;
        };
      }
      const value = Reflect.get(target, prop, receiver);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return { store: proxy, lost: () => lost, followUpReads: () => followUpReads };
}

const cases: [StoreKind, string, Partial<GatewayOptions>][] = STORE_KINDS.flatMap((kind) => [
  [kind, "one gateway", {}],
  // A shared store's mode: the run's start takes the session's lane lease in the same step.
  [kind, "cluster mode", { cluster: { leaseTtlMs: 60_000, recoveryIntervalMs: 60_000 } }],
]);

describe.each(cases)("a run start whose answer the %s store lost (%s)", (kind, _mode, options) => {
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.gateway.close({ drainMs: 0 });
    h = undefined;
  });

  it("runs once when the caller retries with the same key, instead of staying recorded and never run", async () => {
    const flaky = loseStartAnswers(openStore(kind).store, 1);
    h = await harness(kind, { main: async (turn) => `echo: ${turn.text}` }, options, {
      clock: createManualClock(),
      channel: createFakeChannel(),
      store: flaky.store,
    });
    const request = { message: "hello", idempotencyKey: "lost-answer" };
    await expect(h.gateway.agent(request)).rejects.toMatchObject({ code: "unavailable" });
    expect(flaky.lost()).toBe(1);
    // What a careful client does with `unavailable`: the same request, the same key.
    const retried = await h.gateway.agent(request);
    const waited = await h.gateway.agentWait({ runId: retried.runId, timeoutMs: 60_000 });
    expect(waited).toMatchObject({ status: "ok" });
    const history = await h.gateway.chat.history({ sessionKey: "main", limit: 10 });
    expect(history.messages.map((m) => [m.role, m.content])).toEqual([
      ["user", "hello"],
      ["assistant", "echo: hello"],
    ]);
    // A third try is a plain repeat: the same run, nothing run again.
    const again = await h.gateway.agent(request);
    expect(again.runId).toBe(retried.runId);
    await eventually(async () =>
      expect((await h?.gateway.chat.history({ sessionKey: "main", limit: 10 }))?.messages).toHaveLength(2),
    );
  });
});

// A gateway alone on its store ends such a run when it restarts; a cluster's recovery pass ends it sooner.
describe.each(STORE_KINDS)("a run start whose answer the %s store lost, in cluster mode", (kind) => {
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.gateway.close({ drainMs: 0 });
    h = undefined;
  });

  it("ends it as an error a minute on when the request is not retried, so its waiters hear", async () => {
    const flaky = loseStartAnswers(openStore(kind).store, 1);
    const clock = createManualClock();
    h = await harness(
      kind,
      { main: async (turn) => `echo: ${turn.text}` },
      { cluster: { leaseTtlMs: 60_000, recoveryIntervalMs: 50 } },
      { clock, channel: createFakeChannel(), store: flaky.store },
    );
    await expect(h.gateway.agent({ message: "hello", idempotencyKey: "given-up" })).rejects.toMatchObject({
      code: "unavailable",
    });
    const run = await h.store.findRunByIdempotencyKey("given-up");
    expect(run?.status).toBe("running");
    const waited = h.gateway.agentWait({ runId: run?.runId as string, timeoutMs: 600_000 });
    // Recovery passes before the minute leave it: a retry may still come. A pass ends reading the pending
    // follow-ups, one pass at a time: the second such read from now ends a pass that began after the run was
    // recorded and read it.
    const reads = flaky.followUpReads();
    await eventually(() => flaky.followUpReads() >= reads + 2, "two recovery passes");
    expect((await h.store.getRun(run?.runId as string))?.status).toBe("running");
    await clock.advance(60_001);
    expect(await waited).toMatchObject({
      status: "error",
      error: expect.stringContaining("the request was not retried: it never ran"),
    });
  });
});
