import { silentLogger } from "@sessions/core";
import { describe, expect, it } from "vitest";
import { createManualClock } from "../clock.js";
import { createMemoryStore } from "../store/memory.js";
import { createClusterLanes } from "./lanes.js";
import { StoreContact } from "./store-contact.js";

const settings = { leaseTtlMs: 600, heartbeatMs: 100, recoveryIntervalMs: 1000, graceMs: 60 };

describe("cluster lanes: exclusive leases", () => {
  it("keeps renewing the lease while its task runs, so another gateway never takes it in the middle", async () => {
    const store = createMemoryStore();
    // Lease time moves only when the test says so; renewals happen on the real heartbeat.
    const clock = createManualClock();
    const lanes = (owner: string) =>
      createClusterLanes({
        store,
        clock,
        owner,
        settings,
        contact: new StoreContact(clock, settings),
        closed: () => false,
        logger: silentLogger,
      });
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
