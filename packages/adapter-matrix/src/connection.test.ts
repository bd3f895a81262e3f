import {
  createGateway,
  createMemoryStore,
  createScriptedRunner,
  type Gateway,
  type SessionStore,
} from "@sessions/gateway";
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

interface Bot {
  gateway: Gateway;
  client: MatrixClient;
  /** How often its gateway started the sync (took the lease). */
  starts: number;
  /** How often its gateway asked for the sync's lease while another gateway held it. */
  refused: number;
}

/** `store.acquireLease`, counting on `bot` the connection leases it was refused. */
function countRefusals(store: SessionStore, bot: Bot): SessionStore["acquireLease"] {
  return async (input) => {
    const result = await store.acquireLease(input);
    if (!result.acquired && input.name.startsWith("connection:")) bot.refused++;
    return result;
  };
}

describe("the Matrix sync held through a lease", () => {
  it("runs on exactly one of two gateways sharing a store, moves when that one closes, answers each message once", async () => {
    const hs = await createFakeMatrixHomeserver();
    cleanups.push(() => hs.close());
    const shared = createMemoryStore();
    cleanups.push(() => shared.close());
    const bots: Bot[] = [];
    for (let i = 0; i < 2; i++) {
      const client = createClient({ baseUrl: hs.baseUrl, accessToken: hs.accessToken, userId: hs.userId });
      const adapter = createMatrixAdapter({ client, ignoreEventsBefore: Date.now() });
      const bot: Bot = { client, starts: 0, refused: 0 } as Bot;
      const gateway = createGateway({
        store: { ...shared, close: async () => {}, acquireLease: countRefusals(shared, bot) },
        runner: createScriptedRunner({ agents: {}, fallback: (turn) => `echo: ${turn.text}` }),
        adapters: [adapter],
        // Long enough that no CPU stall lets the lease lapse: the sync moves because the holder gives it up on close.
        cluster: { leaseTtlMs: 15_000, recoveryIntervalMs: 100 },
      });
      bot.gateway = gateway;
      adapter.attach(gateway);
      const { connection } = adapter;
      gateway.holdConnection({
        ...connection,
        start: () => {
          bot.starts++;
          return connection.start();
        },
      });
      cleanups.push(async () => {
        await gateway.close({ drainMs: 50 });
        client.stopClient();
      });
      bots.push(bot);
    }
    const syncing = () => bots.filter((b) => b.client.getSyncState() !== null);
    await until(() => syncing().length === 1, "one client syncing");
    const [holder] = syncing() as [Bot];
    const other = bots.find((b) => b !== holder) as Bot;
    // The other gateway asked for the lease and was refused: it did not start its sync.
    await until(() => other.refused > 0, "the other gateway to be refused the lease");
    expect([holder.starts, other.starts]).toEqual([1, 0]);
    expect(syncing()).toEqual([holder]);
    const messages = () => hs.sent().filter((e) => e.type === "m.room.message");
    hs.post(hs.rooms.ops, matrixEvent("room-text", { content: { body: "first" } }));
    await until(() => messages().length === 1, "the first reply");

    await holder.gateway.close({ drainMs: 50 });
    await until(() => other.client.getSyncState() !== null, "the other client syncing");
    hs.post(hs.rooms.ops, matrixEvent("room-text", { content: { body: "second" } }));
    await until(() => messages().length === 2, "the second reply");
    // One room's events reach the gateway in timeline order: once "second" is answered, "first" (in the other
    // client's first sync) was handed in before it, and a second run of it would be recorded and answered first.
    expect(messages().map((m) => m.content.body)).toEqual(["echo: first", "echo: second"]);
    expect(
      await shared.listRunsByStatus(["queued", "running", "ok", "error", "timeout", "aborted"]),
    ).toHaveLength(2);
  });
});
