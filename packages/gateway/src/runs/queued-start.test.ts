import { afterAll, afterEach, describe, expect, it } from "vitest";
import { createManualClock } from "../clock.js";
import type { SessionStore } from "../store/types.js";
import {
  cleanupDirs,
  createFakeChannel,
  type Harness,
  harness,
  openStore,
  STORE_KINDS,
} from "../test-kit.js";
import { messageText } from "../transcript.js";

afterAll(cleanupDirs);

/**
 * The store as a gateway sharing it sees it: right after this gateway's first read or write of `runId` once
 * `armed`, another gateway's recovery ends that run (as it does: status error, owner unchanged).
 */
function withRecoveryRacing(store: SessionStore, state: { armed: boolean; runId?: string }): SessionStore {
  const raceAfter = async <T>(runId: string, call: Promise<T>): Promise<T> => {
    const result = await call;
    if (state.armed && runId === state.runId) {
      state.armed = false;
      const stored = await store.getRun(runId);
      if (stored !== undefined) {
        await store.putRun({ ...stored, status: "error", error: "gateway restarted", endedAt: Date.now() });
      }
    }
    return result;
  };
  return new Proxy(store, {
    get(target, property, receiver) {
      if (property === "getRun") return (runId: string) => raceAfter(runId, target.getRun(runId));
      if (property === "endRun") {
        return (run: Parameters<SessionStore["endRun"]>[0], owner: string | undefined) =>
          raceAfter(run.runId, target.endRun(run, owner));
      }
      return Reflect.get(target, property, receiver);
    },
  });
}

describe.each(STORE_KINDS)("a queued run on the %s store", (kind) => {
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  it("does not start once another gateway's recovery ended it as it left the queue", async () => {
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const race: { armed: boolean; runId?: string } = { armed: false };
    const { store, path } = openStore(kind);
    h = await harness(
      kind,
      {
        main: async (turn) => {
          if (turn.text === "first") await held;
          return `reply to ${turn.text}`;
        },
      },
      {},
      {
        clock: createManualClock(),
        channel: createFakeChannel(),
        path,
        store: withRecoveryRacing(store, race),
      },
    );
    const first = await h.gateway.agent({ sessionKey: "main", message: "first", idempotencyKey: "k-first" });
    const queued = await h.gateway.agent({
      sessionKey: "main",
      message: "second",
      idempotencyKey: "k-second",
    });
    race.runId = queued.runId;
    race.armed = true;
    release();

    expect(await h.gateway.agentWait({ runId: first.runId, timeoutMs: 60_000 })).toMatchObject({
      status: "ok",
    });
    // Recovery's end stands: the run neither overwrote it with `running` nor recorded a reply of its own.
    expect(await h.gateway.agentWait({ runId: queued.runId, timeoutMs: 60_000 })).toMatchObject({
      status: "error",
      error: "gateway restarted",
    });
    expect(race.armed).toBe(false);
    expect(await store.getRun(queued.runId)).toMatchObject({ status: "error", error: "gateway restarted" });
    const history = await h.gateway.chat.history({ sessionKey: "main" });
    expect(history.messages.map((m) => messageText(m))).toEqual(["first", "second", "reply to first"]);
  });
});
