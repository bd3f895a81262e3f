import { afterEach, describe, expect, it } from "vitest";
import { createGateway } from "../create-gateway.js";
import type { Gateway } from "../gateway.js";
import { createMemoryStore } from "../store/memory.js";
import type { SessionStore } from "../store/types.js";

const gateways: Gateway[] = [];
afterEach(async () => {
  await Promise.all(gateways.splice(0).map((g) => g.close({ drainMs: 0 })));
});

/** `store`, counting the runs read from it by id. */
function countingReads(store: SessionStore) {
  const reads: string[] = [];
  const counted = new Proxy(store, {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver);
      if (key === "getRun")
        return (runId: string) => {
          reads.push(runId);
          return value.call(target, runId);
        };
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return { store: counted, reads };
}

describe("agent.wait on a run that already ended here", () => {
  it("answers from what this gateway saw end, without reading the store", async () => {
    const { store, reads } = countingReads(createMemoryStore());
    const gateway = createGateway({ store, runner: { run: async () => ({ reply: "done" }) } });
    gateways.push(gateway);
    await gateway.ready;
    const { runId } = await gateway.agent({ sessionKey: "s", message: "hi", idempotencyKey: "k1" });
    const first = await gateway.agentWait({ runId, timeoutMs: 10_000 });
    expect(first).toMatchObject({ status: "ok", reply: "done" });
    const before = reads.length;
    expect(await gateway.agentWait({ runId, timeoutMs: 10_000 })).toEqual(first);
    expect(reads.slice(before)).toEqual([]);
    // A run it never saw is read, and one that does not exist is not found.
    await expect(gateway.agentWait({ runId: "nope", timeoutMs: 10 })).rejects.toMatchObject({
      code: "not_found",
    });
    expect(reads.slice(before)).toEqual(["nope"]);
  });
});
