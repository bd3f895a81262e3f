// Test helpers: a real discord.js client logged in to a fake Discord API. Not part of the published bundle.
import type { FakeDiscordApi } from "@sessions/testing";
import { Client, type ClientOptions, Events, GatewayIntentBits, Partials } from "discord.js";

/** A discord.js client with the intents the adapter needs, its REST pointed at `api`, logged in and ready. */
export async function loggedInClient(api: FakeDiscordApi, rest: ClientOptions["rest"] = {}): Promise<Client> {
  const client = new Client({
    intents: [
      GatewayIntentBits.Guilds,
      GatewayIntentBits.GuildMessages,
      GatewayIntentBits.MessageContent,
      GatewayIntentBits.DirectMessages,
    ],
    partials: [Partials.Channel],
    rest: { ...rest, api: api.restUrl },
  });
  const ready = new Promise((resolve) => client.once(Events.ClientReady, resolve));
  await client.login(api.token);
  await ready;
  return client;
}
