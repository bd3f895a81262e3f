import { afterEach, describe, expect, it } from "vitest";
import { createGateway } from "../create-gateway.js";
import type { Gateway } from "../gateway.js";
import type { AgentRunner } from "../runner/types.js";
import { createMemoryStore } from "../store/memory.js";
import type { SessionStore } from "../store/types.js";
import { TENURE_RUNS } from "./lanes.js";

const gateways: Gateway[] = [];
afterEach(async () => {
  await Promise.all(gateways.splice(0).map((g) => g.close({ drainMs: 0 })));
});

/**
 * `store`, counting the lane lease calls that reach it and the runs started or ended by a write of their own (what
 * each costs a networked store: a round trip).
 */
function counting(store: SessionStore) {
  const calls: string[] = [];
  const counted = new Proxy(store, {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver);
      if (typeof value !== "function") return value;
      if (key === "acquireLease")
        return (input: { name: string }) => {
          if (input.name.startsWith("lane:")) calls.push("acquire");
          return value.call(target, input);
        };
      if (key === "endRun")
        return (...args: Parameters<SessionStore["endRun"]>) => {
          calls.push("start or end of a run on its own");
          return value.apply(target, args);
        };
      if (key === "releaseLease")
        return (name: string, owner: string) => {
          if (name.startsWith("lane:")) calls.push("release");
          return value.call(target, name, owner);
        };
      return value.bind(target);
    },
  });
  return { store: counted, calls };
}

/**
 * A runner that records the order runs executed in and whether two ever ran at once. Its runs wait for `gate`: a
 * test that opens it once every message is accepted has them all queued behind the first (without it, a run may
 * end before the next message arrives, and the lane is rightly given back in between).
 */
function orderedRunner(gate: Promise<void> = Promise.resolve()) {
  const order: string[] = [];
  let running = 0;
  let overlapped = false;
  const runner: AgentRunner = {
    async run(request) {
      await gate;
      running++;
      if (running > 1) overlapped = true;
      order.push(String(request.input.content));
      await new Promise((resolve) => setTimeout(resolve, 1));
      running--;
      return { reply: `re: ${String(request.input.content)}` };
    },
  };
  return { runner, order, overlapped: () => overlapped };
}

/** A gate for `orderedRunner`, and what opens it. */
function gate() {
  let open = () => {};
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { opened, open };
}

/** `count` messages to session "s", each accepted before the next is sent; then `accepted()`; then every run's end. */
async function backlog(gateway: Gateway, count: number, prefix = "m", accepted: () => void = () => {}) {
  const runs = [];
  for (let i = 0; i < count; i++)
    runs.push(
      await gateway.agent({ sessionKey: "s", message: `${prefix}${i}`, idempotencyKey: `${prefix}${i}` }),
    );
  accepted();
  return Promise.all(runs.map(({ runId }) => gateway.agentWait({ runId, timeoutMs: 60_000 })));
}

describe("a gateway holding a session's lane with runs of the session queued behind", () => {
  it("runs them in order under one tenure of the lane: taken once, given back with the last run's end, each run started by the end before it", async () => {
    const { store, calls } = counting(createMemoryStore());
    const all = gate();
    const { runner, order, overlapped } = orderedRunner(all.opened);
    const gateway = createGateway({ store, runner, cluster: { leaseTtlMs: 15_000 } });
    gateways.push(gateway);
    await gateway.ready;
    const ended = await backlog(gateway, 20, "m", all.open);
    expect(ended.map((run) => run.status)).toEqual(Array(20).fill("ok"));
    expect(order).toEqual(Array.from({ length: 20 }, (_, i) => `m${i}`));
    expect(overlapped()).toBe(false);
    expect(calls).toEqual(["acquire", "release"]);
    expect(await store.getLease("lane:agent:main:s")).toBeUndefined();
    const history = await store.readMessages("agent:main:s", { limit: 100 });
    expect(history.filter((m) => m.role === "assistant")).toHaveLength(20);
  });

  it(`gives the lane back after ${TENURE_RUNS} runs in a row, so other gateways get their turn`, async () => {
    const { store, calls } = counting(createMemoryStore());
    const all = gate();
    const { runner, order } = orderedRunner(all.opened);
    const gateway = createGateway({ store, runner, cluster: { leaseTtlMs: 15_000 } });
    gateways.push(gateway);
    await gateway.ready;
    const count = TENURE_RUNS + 6;
    const ended = await backlog(gateway, count, "m", all.open);
    expect(ended.every((run) => run.status === "ok")).toBe(true);
    expect(order).toEqual(Array.from({ length: count }, (_, i) => `m${i}`));
    // The run after the cap takes the lane again and starts itself; the rest start with the end before them.
    expect(calls).toEqual(["acquire", "release", "acquire", "start or end of a run on its own", "release"]);
  });

  it("keeps one run at a time across gateways: another gateway's runs of the session wait for the tenure's end", async () => {
    const shared = createMemoryStore();
    const witness = orderedRunner();
    const a = createGateway({ store: shared, runner: witness.runner, cluster: { leaseTtlMs: 15_000 } });
    const b = createGateway({ store: shared, runner: witness.runner, cluster: { leaseTtlMs: 15_000 } });
    gateways.push(a, b);
    await Promise.all([a.ready, b.ready]);
    const [onA, onB] = await Promise.all([backlog(a, 10, "a"), backlog(b, 10, "b")]);
    expect([...onA, ...onB].every((run) => run.status === "ok")).toBe(true);
    expect(witness.overlapped()).toBe(false);
    // Each gateway's runs in the order it accepted them.
    expect(witness.order.filter((m) => m.startsWith("a"))).toEqual(
      Array.from({ length: 10 }, (_, i) => `a${i}`),
    );
    expect(witness.order.filter((m) => m.startsWith("b"))).toEqual(
      Array.from({ length: 10 }, (_, i) => `b${i}`),
    );
  });
});

describe("a run of the session accepted while the run under way here ends", () => {
  /**
   * `counting(store)`, whose start of the run with message `held` waits until `release` is called (or fails with
   * `fail`): the window in which the run under way ends while the next one is still being recorded.
   */
  function holdingStart(held: string) {
    const { store, calls } = counting(createMemoryStore());
    let open: (error?: Error) => void = () => {};
    const gateOpen = new Promise<Error | undefined>((resolve) => {
      open = resolve;
    });
    let entered = () => {};
    const waiting = new Promise<void>((resolve) => {
      entered = resolve;
    });
    const holding = new Proxy(store, {
      get(target, key, receiver) {
        // The memory store has no native start: answering `undefined` lets the gateway record it as usual.
        if (key === "recordRunStart")
          return async (unit: { input: { content: unknown } }) => {
            if (unit.input.content !== held) return undefined;
            entered();
            const error = await gateOpen;
            if (error !== undefined) throw error;
            return undefined;
          };
        return Reflect.get(target, key, receiver);
      },
    });
    return {
      store: holding as SessionStore,
      calls,
      waiting,
      release: () => open(),
      fail: (e: Error) => open(e),
    };
  }

  /** A gateway on `holdingStart("m1")`: m0 has run and ended while m1's start waits in the store. */
  async function m0EndsWhileM1IsRecorded() {
    const held = holdingStart("m1");
    const first = gate();
    const { runner, order, overlapped } = orderedRunner(first.opened);
    const gateway = createGateway({ store: held.store, runner, cluster: { leaseTtlMs: 15_000 } });
    gateways.push(gateway);
    await gateway.ready;
    const m0 = await gateway.agent({ sessionKey: "s", message: "m0", idempotencyKey: "m0" });
    const m1 = gateway.agent({ sessionKey: "s", message: "m1", idempotencyKey: "m1" });
    await held.waiting;
    first.open();
    expect((await gateway.agentWait({ runId: m0.runId, timeoutMs: 60_000 })).status).toBe("ok");
    return { ...held, gateway, m1, order, overlapped };
  }

  it("takes the lane over from that end, without a lease round trip of its own", async () => {
    const { gateway, store, calls, m1, release, order, overlapped } = await m0EndsWhileM1IsRecorded();
    release();
    const ended = await gateway.agentWait({ runId: (await m1).runId, timeoutMs: 60_000 });
    expect(ended.status).toBe("ok");
    expect(order).toEqual(["m0", "m1"]);
    expect(overlapped()).toBe(false);
    // Taken once, by m0's start; m1 ran under the same tenure, which its end gave back.
    expect(calls.filter((call) => call === "acquire")).toEqual(["acquire"]);
    expect(calls.at(-1)).toBe("release");
    expect(await store.getLease("lane:agent:main:s")).toBeUndefined();
  });

  it("gives the lane back when that run is not recorded after all", async () => {
    const { store, calls, m1, fail } = await m0EndsWhileM1IsRecorded();
    // m0's end kept the lane for m1, whose start now fails.
    expect(await store.getLease("lane:agent:main:s")).toBeDefined();
    fail(new Error("the store refused the start"));
    await expect(m1).rejects.toThrow("the store refused the start");
    await expect.poll(() => store.getLease("lane:agent:main:s")).toBeUndefined();
    expect(calls.filter((call) => call === "release")).toEqual(["release"]);
  });
});
