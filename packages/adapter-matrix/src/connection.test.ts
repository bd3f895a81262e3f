import { createGateway, createMemoryStore, createScriptedRunner, type Gateway } from "@sessions/gateway";
import { createFakeMatrixHomeserver, matrixEvent } from "@sessions/testing";
import { createClient, type MatrixClient } from "matrix-js-sdk";
import { logger as sdkLogger } from "matrix-js-sdk/lib/logger.js";
import { afterEach, describe, expect, it } from "vitest";
import { until } from "./e2e.fixture.js";
import { createMatrixAdapter } from "./index.js";

sdkLogger.setLevel("silent");
const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const step of cleanups.splice(0).reverse()) await step();
});

describe("the Matrix sync held through a lease", () => {
  it("runs on exactly one of two gateways sharing a store, moves when that one closes, answers each message once", async () => {
    const hs = await createFakeMatrixHomeserver();
    cleanups.push(() => hs.close());
    const shared = createMemoryStore();
    cleanups.push(() => shared.close());
    const bots: { gateway: Gateway; client: MatrixClient }[] = [];
    for (let i = 0; i < 2; i++) {
      const client = createClient({ baseUrl: hs.baseUrl, accessToken: hs.accessToken, userId: hs.userId });
      const adapter = createMatrixAdapter({ client, ignoreEventsBefore: Date.now() });
      const gateway = createGateway({
        store: { ...shared, close: async () => {} },
        runner: createScriptedRunner({ agents: {}, fallback: (turn) => `echo: ${turn.text}` }),
        adapters: [adapter],
        // Long enough that no CPU stall lets the lease lapse: the sync moves because the holder gives it up on close.
        cluster: { leaseTtlMs: 15_000, recoveryIntervalMs: 100 },
      });
      adapter.attach(gateway);
      gateway.holdConnection(adapter.connection);
      cleanups.push(async () => {
        await gateway.close({ drainMs: 50 });
        client.stopClient();
      });
      bots.push({ gateway, client });
    }
    const syncing = () => bots.filter((b) => b.client.getSyncState() !== null);
    await until(() => syncing().length === 1, "one client syncing");
    await new Promise((r) => setTimeout(r, 700));
    expect(syncing()).toHaveLength(1);
    const messages = () => hs.sent().filter((e) => e.type === "m.room.message");
    hs.post(hs.rooms.ops, matrixEvent("room-text", { content: { body: "first" } }));
    await until(() => messages().length === 1, "the first reply");

    const [holder] = syncing();
    await holder?.gateway.close({ drainMs: 50 });
    const other = bots.find((b) => b !== holder);
    await until(() => other?.client.getSyncState() !== null, "the other client syncing");
    hs.post(hs.rooms.ops, matrixEvent("room-text", { content: { body: "second" } }));
    await until(() => messages().length === 2, "the second reply");
    await hs.synced();
    await new Promise((r) => setTimeout(r, 200));
    expect(messages().map((m) => m.content.body)).toEqual(["echo: first", "echo: second"]);
  });
});
