import {
  createGateway,
  createMemoryStore,
  createScriptedRunner,
  type Gateway,
  type SessionStore,
} from "@sessions/gateway";
import { createFakeDiscordApi, discordMessage, type FakeDiscordApi } from "@sessions/testing";
import { eventually } from "@sessions/testing/eventually";
import { Client, GatewayIntentBits, Partials } from "discord.js";
import { afterEach, describe, expect, it } from "vitest";
import { createDiscordAdapter, type DiscordAdapter } from "./index.js";

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const step of cleanups.splice(0).reverse()) await step();
});

interface Bot {
  gateway: Gateway;
  client: Client;
  adapter: DiscordAdapter;
  lease: {
    /** How often its gateway opened the socket (took the lease). */
    starts: number;
    /** How often its gateway asked for the socket's lease while another gateway held it. */
    refused: number;
  };
}

/** `store.acquireLease`, counting on `counts` the connection leases it was refused. */
function countRefusals(store: SessionStore, counts: { refused: number }): SessionStore["acquireLease"] {
  return async (input) => {
    const result = await store.acquireLease(input);
    if (!result.acquired && input.name.startsWith("connection:")) counts.refused++;
    return result;
  };
}

/** One bot on `n` gateways sharing one store (as on one Postgres), each with its own discord.js client. */
async function bots(api: FakeDiscordApi, n: number) {
  const shared = createMemoryStore();
  cleanups.push(() => shared.close());
  const out: Bot[] = [];
  for (let i = 0; i < n; i++) {
    const { Guilds, GuildMessages, MessageContent, DirectMessages } = GatewayIntentBits;
    const client = new Client({
      intents: [Guilds, GuildMessages, MessageContent, DirectMessages],
      partials: [Partials.Channel],
      rest: { api: api.restUrl, rejectOnRateLimit: () => true },
    });
    const adapter = createDiscordAdapter({ client, token: api.token });
    const lease = { starts: 0, refused: 0 };
    const gateway = createGateway({
      store: { ...shared, close: async () => {}, acquireLease: countRefusals(shared, lease) },
      runner: createScriptedRunner({ agents: {}, fallback: (turn) => `echo ${turn.text}` }),
      adapters: [adapter],
      // Long enough that no CPU stall lets the lease lapse: the socket moves because the holder gives it up on close.
      cluster: { leaseTtlMs: 15_000, recoveryIntervalMs: 100 },
    });
    adapter.attach(gateway);
    const { connection } = adapter;
    gateway.holdConnection({
      ...connection,
      start: () => {
        lease.starts++;
        return connection.start();
      },
    });
    cleanups.push(async () => {
      await gateway.close({ drainMs: 50 });
      await client.destroy();
    });
    out.push({ gateway, client, adapter, lease });
  }
  return out;
}

describe("the Discord gateway socket held through a lease", () => {
  it("is open on exactly one gateway, moves when that one closes, and the other still delivers over REST", async () => {
    const api = await createFakeDiscordApi({ echoOwnMessages: false });
    cleanups.push(() => api.close());
    const [a, b] = await bots(api, 2);
    if (a === undefined || b === undefined) throw new Error("two gateways expected");
    await eventually(() => a.client.isReady() || b.client.isReady(), "one client ready");
    const [holder, standby] = a.client.isReady() ? [a, b] : [b, a];
    // The standby asked for the lease and was refused: it did not open a socket.
    await eventually(() => standby.lease.refused > 0, "the standby to be refused the lease");
    expect([holder.lease.starts, standby.lease.starts]).toEqual([1, 0]);
    expect(api.connections).toBe(1);
    expect(standby.client.isReady()).toBe(false);

    // The standby never logged in, yet its outbox posts through REST with the token it was given.
    await standby.gateway.ready;
    const sent = await standby.gateway.agent({
      sessionKey: "main",
      message: "via standby",
      idempotencyKey: "k-standby",
      deliver: true,
      channel: "discord",
      to: "channel:1300000000000000200",
    });
    await standby.gateway.agentWait({ runId: sent.runId, timeoutMs: 60_000 });
    await eventually(() => api.callsOf("POST", "/channels/:id/messages").length === 1, "a REST post");

    await holder.gateway.close({ drainMs: 50 });
    await eventually(() => standby.client.isReady(), "the standby to log in");
    expect(api.connections).toBe(1);
    expect(api.identifies).toHaveLength(2);
    api.dispatch("MESSAGE_CREATE", discordMessage("guild-text", { content: "after the move" }));
    await eventually(() => api.callsOf("POST", "/channels/:id/messages").length === 2, "the reply");
  });
});
