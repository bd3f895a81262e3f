import { describe, expect, it } from "vitest";
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
