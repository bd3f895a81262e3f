import { createGateway, createMemoryStore, createScriptedRunner, type Gateway } from "@sessions/gateway";
import { createFakeDiscordApi, discordMessage, type FakeDiscordApi } from "@sessions/testing";
import { eventually } from "@sessions/testing/eventually";
import { Client, GatewayIntentBits, Partials } from "discord.js";
import { afterEach, describe, expect, it } from "vitest";
import { createDiscordAdapter, type DiscordAdapter } from "./index.js";

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const step of cleanups.splice(0).reverse()) await step();
});

/** One bot on `n` gateways sharing one store (as on one Postgres), each with its own discord.js client. */
async function bots(api: FakeDiscordApi, n: number) {
  const shared = createMemoryStore();
  cleanups.push(() => shared.close());
  const out: { gateway: Gateway; client: Client; adapter: DiscordAdapter }[] = [];
  for (let i = 0; i < n; i++) {
    const { Guilds, GuildMessages, MessageContent, DirectMessages } = GatewayIntentBits;
    const client = new Client({
      intents: [Guilds, GuildMessages, MessageContent, DirectMessages],
      partials: [Partials.Channel],
      rest: { api: api.restUrl, rejectOnRateLimit: () => true },
    });
    const adapter = createDiscordAdapter({ client, token: api.token });
    const gateway = createGateway({
      store: { ...shared, close: async () => {} },
      runner: createScriptedRunner({ agents: {}, fallback: (turn) => `echo ${turn.text}` }),
      adapters: [adapter],
      // Long enough that no CPU stall lets the lease lapse: the socket moves because the holder gives it up on close.
      cluster: { leaseTtlMs: 15_000, recoveryIntervalMs: 100 },
    });
    adapter.attach(gateway);
    gateway.holdConnection(adapter.connection);
    cleanups.push(async () => {
      await gateway.close({ drainMs: 50 });
      await client.destroy();
    });
    out.push({ gateway, client, adapter });
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
    await new Promise((r) => setTimeout(r, 700));
    expect(api.connections).toBe(1);
    expect([a.client.isReady(), b.client.isReady()].filter(Boolean)).toHaveLength(1);
    const [holder, standby] = a.client.isReady() ? [a, b] : [b, a];

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
