// Real: DISCORD_TOKEN=… pnpm --filter discord-bot start [-- --runner ./runner.js]; offline: … start -- --fake
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { createDiscordAdapter } from "@sessions/adapter-discord";
import type { AgentRunner } from "@sessions/gateway";
import { createGateway, createMemoryStore, createScriptedRunner, createSqliteStore } from "@sessions/gateway";
import { createFakeDiscordApi, discordMessage } from "@sessions/testing";
import { eventually } from "@sessions/testing/eventually";
import { Client, Events, GatewayIntentBits, Partials } from "discord.js";

const options = { fake: { type: "boolean" }, runner: { type: "string" } } as const;
const { values } = parseArgs({ args: process.argv.slice(2).filter((a) => a !== "--"), options });
const fake = values.fake ? await createFakeDiscordApi({ echoOwnMessages: false }) : undefined;
const token = fake?.token ?? process.env.DISCORD_TOKEN;
if (!token) throw new Error("set DISCORD_TOKEN, or pass --fake");

// --runner: any module whose default export is an AgentRunner, e.g. createAiSdkRunner({ model }).
const runner: AgentRunner = values.runner
  ? (await import(pathToFileURL(resolve(values.runner)).href)).default
  : createScriptedRunner({ agents: {}, fallback: (turn) => turn.write(`You said: ${turn.text}`) });

const { Guilds, GuildMessages, MessageContent, DirectMessages } = GatewayIntentBits;
const intents = [Guilds, GuildMessages, MessageContent, DirectMessages];
const rest = { rejectOnRateLimit: () => true, ...(fake ? { api: fake.restUrl } : {}) }; // 429s go to the outbox
const client = new Client({ intents, partials: [Partials.Channel], rest });
const adapter = createDiscordAdapter({ client, token });
const store = fake ? createMemoryStore() : createSqliteStore({ path: ".sessions/discord-bot.db" });
// Replies stream into Discord as they are written: one message, edited as it grows (Discord's default is off).
const config = { channels: { discord: { streaming: "partial" as const } } };
const gateway = createGateway({ store, runner, adapters: [adapter], config });
adapter.attach(gateway);
client.on(Events.ClientReady, (ready) => console.log(`${ready.user.tag} is listening`));
// Instead of client.login(token): the gateway opens the socket while it holds the bot's lease (at once here).
gateway.holdConnection(adapter.connection);
if (fake) {
  await new Promise((done) => client.once(Events.ClientReady, done));
  const said = [
    ["guild-text", "hello bot"],
    ["thread-text", "any news?"],
  ] as const;
  for (const [name, content] of said) {
    fake.dispatch("MESSAGE_CREATE", discordMessage(name, { content }));
    console.log(`user → ${content}`);
  }
  // The bot's messages as each channel shows them now: streamed ones edited into the whole reply.
  const channels = () =>
    new Set(fake.callsOf("POST", "/channels/:id/messages").map((c) => c.path.split("/")[2]));
  const shown = () =>
    [...channels()].flatMap((id = "") =>
      fake
        .messages(id)
        .filter((m) => m.authorId === fake.botUser.id)
        .map((m) => ({ ...m, path: `/channels/${id}/messages` })),
    );
  const whole = said.map(([, content]) => `You said: ${content}`);
  // Fails (after 60 s) rather than printing a conversation with replies missing or half-written.
  await eventually(
    () => whole.every((reply) => shown().some((m) => m.content === reply)),
    () => `the bot's 2 replies (got ${JSON.stringify(shown().map((m) => m.content))})`,
  );
  for (const m of shown()) console.log(`bot → ${m.content} (${m.path}${m.edited ? ", streamed" : ""})`);
  await gateway.close(); // closes the socket it holds and gives the lease up
  await fake.close();
} else {
  for (const signal of ["SIGINT", "SIGTERM"] as const) process.once(signal, () => void gateway.close());
}
