import { silentLogger } from "@sessions/core";
import { describe, expect, it } from "vitest";
import { type Clock, createManualClock } from "../clock.js";
import { createMemoryStore } from "../store/memory.js";
import type { SessionStore } from "../store/types.js";
import { createClusterLanes } from "./lanes.js";
import { StoreContact } from "./store-contact.js";

const settings = { leaseTtlMs: 600, heartbeatMs: 100, recoveryIntervalMs: 1000, graceMs: 60 };

/** The cluster lanes of gateway `owner` on `store` (`runsHere`: how many runs of a session wait on it). */
const lanesOf = (
  store: SessionStore,
  clock: Clock,
  owner: string,
  closed: () => boolean,
  runsHere = () => 1,
) =>
  createClusterLanes({
    store,
    clock,
    owner,
    settings,
    contact: new StoreContact(clock, settings),
    closed,
    logger: silentLogger,
    runsHere,
  });

describe("cluster lanes: exclusive leases", () => {
  it("keeps renewing the lease while its task runs, so another gateway never takes it in the middle", async () => {
    const store = createMemoryStore();
    // Lease time moves only when the test says so; renewals happen on the real heartbeat.
    const clock = createManualClock();
    const lanes = (owner: string) => lanesOf(store, clock, owner, () => false);
    const [a, b] = [lanes("a"), lanes("b")];
    let taskDone: () => void = () => {};
    const running = new Promise<void>((resolve) => {
      taskDone = resolve;
    });
    const order: string[] = [];
    const first = a.exclusive("budget:root", async () => {
      order.push("a starts");
      await running;
      order.push("a ends");
    });
    // b waits for the lease while a's task outlasts the lease's term several times over, in steps shorter than it.
    const second = b.exclusive("budget:root", async () => void order.push("b runs"));
    for (let step = 0; step < 4; step++) {
      await clock.advance(settings.leaseTtlMs - 200);
      await new Promise((resolve) => setTimeout(resolve, 3 * settings.heartbeatMs));
      expect((await store.getLease("budget:root"))?.owner).toBe("a");
    }
    taskDone();
    await Promise.all([first, second]);
    expect(order).toEqual(["a starts", "a ends", "b runs"]);
    expect(await store.getLease("budget:root")).toBeUndefined();
  });
});

describe("cluster lanes: a closing gateway", () => {
  it("stops waiting for a lane or lease another gateway holds, so its close never waits on that gateway", async () => {
    const store = createMemoryStore();
    const clock = createManualClock();
    let aClosed = false;
    const [a, b] = [lanesOf(store, clock, "a", () => aClosed), lanesOf(store, clock, "b", () => false)];
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    // b holds the session's lane and the budget lease until the test lets them go (as a run waiting on a does).
    const bRun = b.run("agent:main:s", () => held);
    const bLease = b.exclusive("budget:root", () => held);
    await new Promise((resolve) => setTimeout(resolve, 50));
    const ran: string[] = [];
    const aRun = a.run("agent:main:s", async (hold) => {
      ran.push(hold === undefined ? "without the lane" : "with the lane");
    });
    const aLease = a.exclusive("budget:root", async () => void ran.push("under the lease"));
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(ran).toEqual([]);
    aClosed = true;
    // The run's task is told at once (it ends the run as closed); the lease is refused.
    await aRun;
    await expect(aLease).rejects.toMatchObject({ code: "unavailable" });
    expect(ran).toEqual(["without the lane"]);
    expect((await store.getLease("lane:agent:main:s"))?.owner).toBe("b");
    release();
    await Promise.all([bRun, bLease]);
  });
});

describe("cluster lanes: passing a lane to the next run here", () => {
  it("keeps the lane only once the end that kept it is recorded; an end refused gives it up", async () => {
    const store = createMemoryStore();
    const clock = createManualClock();
    const lanes = lanesOf(
      store,
      clock,
      "a",
      () => false,
      () => 2,
    );
    const lease = () => store.getLease("lane:agent:main:s");
    // An end that may pass the lane on, but was refused (the lane may be another gateway's): the lane goes.
    await lanes.run("agent:main:s", async (hold) => {
      expect(hold?.passOn?.()).toBe(true);
    });
    expect(await lease()).toBeUndefined();
    // One recorded: the lane stays, and the next run takes it as it is (same tenure, no new acquisition).
    await lanes.run("agent:main:s", async (hold) => {
      expect(hold?.passOn?.()).toBe(true);
      hold?.passed?.();
    });
    const kept = await lease();
    expect(kept?.owner).toBe("a");
    await lanes.run("agent:main:s", async (hold) => {
      expect(await lease()).toEqual(kept);
      hold?.released();
      await store.releaseLease("lane:agent:main:s", "a");
    });
    expect(await lease()).toBeUndefined();
    await lanes.releaseKept();
  });
});
