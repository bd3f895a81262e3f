import { eventually } from "@sessions/testing/eventually";
import { describe, expect, it } from "vitest";
import { createManualClock } from "../clock.js";
import { createGateway } from "../create-gateway.js";
import { createScriptedRunner } from "../runner/scripted.js";
import { createMemoryStore } from "../store/memory.js";

const runner = createScriptedRunner({ agents: {}, fallback: () => "ok" });

describe("holdConnection", () => {
  it("runs a connection on one of two gateways sharing a store, and moves it when that one closes", async () => {
    const store = createMemoryStore();
    const sharedStore = { ...store, close: async () => {} };
    // Lease time only moves when the test says so: a stalled machine cannot make A's lease lapse behind its back
    // (the gateways still try and renew on the real clock, every heartbeat).
    const clock = createManualClock();
    const leaseTtlMs = 600;
    const options = { store: sharedStore, runner, clock, cluster: { leaseTtlMs, recoveryIntervalMs: 100 } };
    // When (on the lease clock) B asked for the connection's lease and was refused.
    const refusedB: number[] = [];
    const storeB: typeof sharedStore = {
      ...sharedStore,
      async acquireLease(input) {
        const result = await store.acquireLease(input);
        if (!result.acquired && input.name === "connection:bot") refusedB.push(input.now);
        return result;
      },
    };
    const [a, b] = [createGateway(options), createGateway({ ...options, store: storeB })];
    const running: string[] = [];
    const hold = (name: string) => ({
      start: () => void running.push(name),
      stop: () => void running.splice(running.indexOf(name), 1),
    });
    const heldA = a.holdConnection("bot", hold("a"));
    await eventually(() => running.length === 1, "a gateway to start the connection");
    const heldB = b.holdConnection("bot", hold("b"));
    // Time runs past the lease's first term, in steps shorter than it: A renews it each time, so B never gets it.
    for (let step = 0; step < 3; step++) {
      await clock.advance(leaseTtlMs - 200);
      await eventually(
        async () => (await store.getLease(heldA.lease))?.expiresAt === clock.now() + leaseTtlMs,
        "A to renew its lease",
      );
    }
    // B asks again every heartbeat: asked now, two terms on, it is refused still.
    await eventually(() => refusedB.includes(clock.now()), "B to be refused the lease after A's renewals");
    expect(running).toEqual(["a"]);
    expect([heldA.held, heldB.held]).toEqual([true, false]);
    await a.close({ drainMs: 10 });
    expect(running).toEqual([]);
    await eventually(() => running.length === 1, "B to take the connection over");
    expect(running).toEqual(["b"]);
    await b.close({ drainMs: 10 });
    expect(running).toEqual([]);
    await store.close();
  });

  it("gives the lease back when the connection reports itself lost, and lets another gateway take it over", async () => {
    const store = createMemoryStore();
    // A clock that stands still: this gateway's pause before trying again only ends when the test moves it.
    const clock = createManualClock();
    const options = {
      store: { ...store, close: async () => {} },
      runner,
      clock,
      cluster: { leaseTtlMs: 600, recoveryIntervalMs: 100 },
    };
    // A's lease checks of the connection that renewed it (each runs after whatever was queued before it).
    let renewalsA = 0;
    const storeA: typeof options.store = {
      ...options.store,
      async renewLease(name, owner, ttlMs, now) {
        const renewed = await store.renewLease(name, owner, ttlMs, now);
        if (renewed && name === "connection:bot") renewalsA++;
        return renewed;
      },
    };
    const [a, b] = [createGateway({ ...options, store: storeA }), createGateway(options)];
    const running: string[] = [];
    const starts: { name: string; lost: (error: unknown) => void }[] = [];
    const hold = (name: string) => ({
      start: (lost: (error: unknown) => void) => {
        starts.push({ name, lost });
        running.push(name);
      },
      stop: () => void running.splice(running.indexOf(name), 1),
    });
    const heldA = a.holdConnection("bot", hold("a"));
    await eventually(() => heldA.held, "A to hold the connection");
    const heldB = b.holdConnection("bot", hold("b"));

    starts[0]?.lost(new Error("409: Conflict: terminated by other getUpdates request"));
    await eventually(() => heldB.held, "B to take the lost connection over");
    expect(running).toEqual(["b"]);
    expect(heldA.held).toBe(false);

    // B closes: A takes the connection back once its pause is over, and a late report of its first start is stale.
    await b.close({ drainMs: 10 });
    await clock.advance(30_000);
    await eventually(() => heldA.held, "A to take the connection back");
    // A handles reports and lease checks one at a time, in order, a heartbeat apart: the second renewal after the
    // late report was queued behind it, so the report has been handled (and would have stopped the connection).
    const renewed = renewalsA;
    starts[0]?.lost(new Error("late"));
    await eventually(() => renewalsA >= renewed + 2, "A to renew the lease twice after the late report");
    expect(running).toEqual(["a"]);
    expect(heldA.held).toBe(true);
    expect(starts.map((s) => s.name)).toEqual(["a", "b", "a"]);
    await a.close({ drainMs: 10 });
    expect(running).toEqual([]);
    await store.close();
  });

  it("refuses a nameless connection or one without start/stop, naming the field", () => {
    const gateway = createGateway({ store: createMemoryStore(), runner });
    expect(() => gateway.holdConnection("", { start() {}, stop() {} })).toThrowError(
      expect.objectContaining({ code: "invalid_params", field: "name" }),
    );
    expect(() => gateway.holdConnection("bot", { start() {} } as never)).toThrowError(
      expect.objectContaining({ code: "invalid_params", field: "connection" }),
    );
    return gateway.close({ drainMs: 10 });
  });
});
