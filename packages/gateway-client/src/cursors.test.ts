import { createGateway, createMemoryStore, createScriptedRunner } from "@sessions/gateway";
import { afterEach, describe, expect, it } from "vitest";
import { createGatewayClient, type GatewayClient } from "./index.js";

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn();
});

const entry = (key: string, updatedAt: number) => ({
  key,
  sessionId: `sid-${key}-${updatedAt}`,
  agentId: "main",
  kind: "other" as const,
  createdAt: updatedAt,
  updatedAt,
});

async function start() {
  const store = createMemoryStore();
  const gateway = createGateway({
    store,
    runner: createScriptedRunner({ agents: {}, fallback: () => "ok" }),
  });
  const server = await gateway.listen({ auth: { token: "secret" } });
  cleanups.push(() => gateway.close({ drainMs: 0 }));
  const client: GatewayClient = createGatewayClient({ url: server.url, token: "secret" });
  cleanups.push(() => client.close());
  await client.ready();
  return { store, client };
}

describe("cursors over the wire", () => {
  it("walk chat.history and sessions.list while the gateway is written between pages", async () => {
    const { store, client } = await start();
    for (const key of ["agent:main:a", "agent:main:b", "agent:main:c"]) await store.putEntry(entry(key, 1));
    for (let i = 1; i <= 5; i++)
      await store.appendMessage("agent:main:a", { role: "user", content: `m${i}`, ts: i });

    const seqs: number[] = [];
    let page = await client.chat.history({ sessionKey: "agent:main:a", limit: 2 });
    for (;;) {
      seqs.unshift(...page.messages.map((m) => m.seq as number));
      await store.appendMessage("agent:main:a", { role: "assistant", content: "later", ts: 9 });
      if (!page.nextCursor) break;
      page = await client.chat.history({ sessionKey: "agent:main:a", limit: 2, cursor: page.nextCursor });
    }
    expect(seqs).toEqual([1, 2, 3, 4, 5]);

    const keys: string[] = [];
    let list = await client.sessions.list({ sortBy: "key", limit: 1 });
    for (;;) {
      keys.push(...list.sessions.map((s) => s.key));
      // Each page makes the session just read the newest: a newest-first offset walk would see it again.
      await store.putEntry(entry(keys[keys.length - 1] as string, 100 + keys.length));
      if (!list.nextCursor) break;
      list = await client.sessions.list({ cursor: list.nextCursor, limit: 1 });
    }
    expect(keys).toEqual(["agent:main:a", "agent:main:b", "agent:main:c"]);
  });

  it("report a stale or foreign cursor as invalid_params naming cursor", async () => {
    const { store, client } = await start();
    await store.putEntry(entry("agent:main:a", 1));
    for (let i = 1; i <= 3; i++)
      await store.appendMessage("agent:main:a", { role: "user", content: "m", ts: i });
    const { nextCursor } = await client.chat.history({ sessionKey: "agent:main:a", limit: 1 });
    await expect(client.sessions.list({ cursor: nextCursor as string })).rejects.toMatchObject({
      code: "invalid_params",
      wireCode: "INVALID_REQUEST",
      detailsCode: "INVALID_PARAMS",
      details: { field: "cursor" },
    });
    await store.deleteEntry("agent:main:a");
    await store.putEntry(entry("agent:main:a", 2));
    await expect(
      client.chat.history({ sessionKey: "agent:main:a", cursor: nextCursor as string }),
    ).rejects.toMatchObject({
      code: "invalid_params",
      wireCode: "INVALID_REQUEST",
      detailsCode: "CURSOR_STALE",
      details: { field: "cursor" },
    });
  });
});
