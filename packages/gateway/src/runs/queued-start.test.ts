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
 * The store as a gateway sharing it sees it: once `armed`, right after the call of this gateway that took `runId`
 * out of the queue (its own start, or the end of the run before it starting it), another gateway's recovery ends
 * that run (as it does: status error, owner unchanged).
 */
function withRecoveryRacing(store: SessionStore, state: { armed: boolean; runId?: string }): SessionStore {
  const raceAfter = async <T>(call: Promise<T>): Promise<T> => {
    const result = await call;
    const runId = state.runId;
    if (!state.armed || runId === undefined) return result;
    const stored = await store.getRun(runId);
    if (stored?.status === "running") {
      state.armed = false;
      await store.putRun({ ...stored, status: "error", error: "gateway restarted", endedAt: Date.now() });
    }
    return result;
  };
  return new Proxy(store, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver);
      if (
        !["endRun", "recordRunEnd", "transaction"].includes(String(property)) ||
        typeof value !== "function"
      )
        return value;
      return (...args: unknown[]) => raceAfter(value.apply(target, args));
    },
  });
}

describe.each(STORE_KINDS)("a queued run on the %s store", (kind) => {
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.close();
    h = undefined;
  });

  it("records nothing once another gateway's recovery ended it as it left the queue", async () => {
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
