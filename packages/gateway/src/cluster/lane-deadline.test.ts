import { silentLogger } from "@sessions/core";
import { describe, expect, it } from "vitest";
import { createManualClock, type ManualClock } from "../clock.js";
import { LaneLost } from "../run-table.js";
import { createMemoryStore } from "../store/memory.js";
import type { SessionStore } from "../store/types.js";
import { createClusterLanes } from "./lanes.js";
import { StoreContact } from "./store-contact.js";

const settings = { leaseTtlMs: 600, heartbeatMs: 100, recoveryIntervalMs: 1000, graceMs: 60 };

/** A store one gateway reaches through a link that can be cut: its calls then hang, as a partition holds them. */
function linkTo(store: SessionStore) {
  let cut = false;
  const hung = new Promise<never>(() => {});
  const linked = new Proxy(store, {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver);
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => (cut ? hung : value.apply(target, args));
    },
  });
  return {
    store: linked,
    cut: () => {
      cut = true;
    },
  };
}

function gateway(store: SessionStore, clock: ManualClock, owner: string) {
  const contact = new StoreContact(clock, settings);
  const lanes = createClusterLanes({
    store,
    clock,
    owner,
    settings,
    contact,
    closed: () => false,
    logger: silentLogger,
    runsHere: () => 1,
  });
  return { lanes, contact };
}

/** Moves the manual clock in small steps, letting real-timer heartbeats and lane polls run between them. */
async function elapse(clock: ManualClock, ms: number, each: () => void = () => {}) {
  for (let t = 0; t < ms; t += 20) {
    await clock.advance(20);
    each();
    await new Promise((resolve) => setImmediate(resolve));
  }
}

describe("a session lane whose holder cannot reach the store", () => {
  it("is given up by its holder before it expires, and taken by another gateway only a grace after", async () => {
    const clock = createManualClock();
    const shared = createMemoryStore();
    const link = linkTo(shared);
    const a = gateway(link.store, clock, "a");
    const b = gateway(shared, clock, "b");
    // b has reached the store without a break for longer than a lease: it may judge others' leases.
    await elapse(clock, settings.leaseTtlMs + 100, () => b.contact.reached(clock.now()));
    const takenAt = clock.now();
    let stoppedAt: number | undefined;
    let reason: unknown;
    const held = a.lanes.run("s", async (hold) => {
      await new Promise<void>((resolve) =>
        hold?.signal?.addEventListener("abort", () => {
          stoppedAt = clock.now();
          reason = hold.signal?.reason;
          resolve();
        }),
      );
    });
    await new Promise((resolve) => setImmediate(resolve));
    expect((await shared.getLease("lane:s"))?.owner).toBe("a");
    // a is cut off: its renewals hang, its last confirmed one was when it took the lane.
    link.cut();
    let bStartedAt: number | undefined;
    const taken = b.lanes.run("s", async () => {
      bStartedAt = clock.now();
    });
    await elapse(clock, 2 * settings.leaseTtlMs, () => {
      b.contact.reached(clock.now());
      b.lanes.wake("s");
    });
    await taken;
    expect(reason).toBeInstanceOf(LaneLost);
    // a stopped a grace before its lease expired; b took it a grace after.
    expect(stoppedAt).toBeLessThanOrEqual(takenAt + settings.leaseTtlMs - settings.graceMs + 20);
    expect(bStartedAt).toBeGreaterThanOrEqual(takenAt + settings.leaseTtlMs + settings.graceMs);
    expect(stoppedAt as number).toBeLessThan(bStartedAt as number);
    void held;
  });

  it("is not taken over by a gateway that has not reached the store for a full lease time since a break", async () => {
    const clock = createManualClock();
    const store = createMemoryStore();
    await store.acquireLease({ name: "lane:s", owner: "gone", ttlMs: 100, now: clock.now() });
    const b = gateway(store, clock, "b");
    let startedAt: number | undefined;
    const start = clock.now();
    const taken = b.lanes.run("s", async () => {
      startedAt = clock.now();
    });
    // The other holder's lease lapsed long ago, but b only now reaches the store: it waits a full lease time.
    await elapse(clock, 2 * settings.leaseTtlMs, () => {
      b.contact.reached(clock.now());
      b.lanes.wake("s");
    });
    await taken;
    expect(startedAt).toBeGreaterThanOrEqual(start + settings.leaseTtlMs);
    // A break (a failed call) starts the count again.
    b.contact.lost();
    expect(b.contact.trusted()).toBe(false);
    expect(b.contact.lapsedBefore()).toBe(0);
  });
});
