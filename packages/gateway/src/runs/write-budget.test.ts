import { AsyncLocalStorage } from "node:async_hooks";
import { afterAll, describe, expect, it } from "vitest";
import { createGateway } from "../create-gateway.js";
import { createScriptedRunner } from "../runner/scripted.js";
import { LEASE_WRITES, type SessionStore, STORE_WRITES, type StoreOps } from "../store/types.js";
import { cleanupDirs, createFakeChannel, eventually, openStore } from "../test-kit.js";

afterAll(cleanupDirs);

const WRITES = new Set<string>([...STORE_WRITES, ...LEASE_WRITES]);

/** The real SQLite store, counting write transactions: each `transaction`, and each write made outside one. */
function countingStore(store: SessionStore) {
  const inside = new AsyncLocalStorage<true>();
  const counter = { writes: 0 };
  const proxy = new Proxy(store, {
    get(target, name, receiver) {
      const value = Reflect.get(target, name, receiver);
      if (typeof value !== "function") return value;
      if (name === "transaction") {
        return <T>(work: (tx: StoreOps) => Promise<T>) => {
          if (inside.getStore() !== true) counter.writes++;
          return target.transaction((tx) => inside.run(true, () => work(tx)));
        };
      }
      return (...args: unknown[]) => {
        if (WRITES.has(String(name)) && inside.getStore() !== true) counter.writes++;
        return value.apply(target, args);
      };
    },
  });
  return { store: proxy, counter };
}

describe("write budget", () => {
  it("a scripted run costs at most two write transactions on the SQLite store", async () => {
    const { store, counter } = countingStore(openStore("sqlite").store);
    const runner = createScriptedRunner({ agents: { main: (turn) => `echo: ${turn.text}` } });
    const gateway = createGateway({ runner, store });
    await gateway.ready;
    const first = await gateway.chat.send({ sessionKey: "main", message: "warm up", idempotencyKey: "k0" });
    await gateway.agentWait({ runId: first.runId, timeoutMs: 60_000 });
    const before = counter.writes;
    const runs = 20;
    for (let i = 1; i <= runs; i++) {
      const sent =
        i % 2 === 0
          ? await gateway.chat.send({ sessionKey: "main", message: `m${i}`, idempotencyKey: `k${i}` })
          : await gateway.agent({ sessionKey: "main", message: `m${i}`, idempotencyKey: `k${i}` });
      const waited = await gateway.agentWait({ runId: sent.runId, timeoutMs: 60_000 });
      expect(waited).toMatchObject({ status: "ok", reply: `echo: m${i}` });
    }
    expect((counter.writes - before) / runs).toBeLessThanOrEqual(2);
    await gateway.close();
  });

  it("a chat message costs two for its run (route and session included) and one for its reply's receipt", async () => {
    const { store, counter } = countingStore(openStore("sqlite").store);
    const runner = createScriptedRunner({ agents: { main: (turn) => `echo: ${turn.text}` } });
    const channel = createFakeChannel();
    const gateway = createGateway({ runner, store, adapters: [channel] });
    await gateway.ready;
    const message = (i: number) => ({
      channel: "chat",
      chatType: "group" as const,
      peerId: "dev",
      senderId: "u1",
      to: "group:dev",
      text: `m${i}`,
      messageId: `in-${i}`,
    });
    const first = await gateway.receive(message(0));
    await gateway.agentWait({ runId: first.runId as string, timeoutMs: 60_000 });
    await eventually(() => expect(channel.sent).toHaveLength(1));
    await eventually(async () => {
      const [receipt] = (await gateway.deliveries.list({ sessionKey: first.sessionKey })).deliveries;
      expect(receipt?.status).toBe("delivered");
    });
    const before = counter.writes;
    const messages = 10;
    for (let i = 1; i <= messages; i++) {
      const received = await gateway.receive(message(i));
      const waited = await gateway.agentWait({ runId: received.runId as string, timeoutMs: 60_000 });
      expect(waited).toMatchObject({ status: "ok", reply: `echo: m${i}` });
      await eventually(() => expect(channel.sent).toHaveLength(i + 1));
      await eventually(async () => {
        const list = await gateway.deliveries.list({ sessionKey: received.sessionKey, status: "delivered" });
        expect(list.deliveries).toHaveLength(i + 1);
      });
    }
    expect((counter.writes - before) / messages).toBeLessThanOrEqual(3);
    expect(await gateway.store.listRoutes(first.sessionKey)).toMatchObject([
      { channel: "chat", to: "group:dev" },
    ]);
    await gateway.close();
  });
});
