import { describe, expect, it } from "vitest";
import { createManualClock } from "../clock.js";
import { createGateway } from "../create-gateway.js";
import { createScriptedRunner } from "../runner/scripted.js";
import { createMemoryStore } from "../store/memory.js";

const runner = createScriptedRunner({ agents: {}, fallback: () => "ok" });

async function until(check: () => boolean, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error("condition not met");
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe("holdConnection", () => {
  it("runs a connection on one of two gateways sharing a store, and moves it when that one closes", async () => {
    const store = createMemoryStore();
    const sharedStore = { ...store, close: async () => {} };
    const options = { store: sharedStore, runner, cluster: { leaseTtlMs: 600, recoveryIntervalMs: 100 } };
    const [a, b] = [createGateway(options), createGateway(options)];
    const running: string[] = [];
    const hold = (name: string) => ({
      start: () => void running.push(name),
      stop: () => void running.splice(running.indexOf(name), 1),
    });
    const heldA = a.holdConnection("bot", hold("a"));
    await until(() => running.length === 1);
    const heldB = b.holdConnection("bot", hold("b"));
    await new Promise((resolve) => setTimeout(resolve, 700));
    expect(running).toEqual(["a"]);
    expect([heldA.held, heldB.held]).toEqual([true, false]);
    await a.close({ drainMs: 10 });
    expect(running).toEqual([]);
    await until(() => running.length === 1);
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
    const [a, b] = [createGateway(options), createGateway(options)];
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
    await until(() => heldA.held);
    const heldB = b.holdConnection("bot", hold("b"));

    starts[0]?.lost(new Error("409: Conflict: terminated by other getUpdates request"));
    await until(() => heldB.held);
    expect(running).toEqual(["b"]);
    expect(heldA.held).toBe(false);

    // B closes: A takes the connection back once its pause is over, and a late report of its first start is stale.
    await b.close({ drainMs: 10 });
    await clock.advance(30_000);
    await until(() => heldA.held);
    starts[0]?.lost(new Error("late"));
    await new Promise((resolve) => setTimeout(resolve, 300));
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
