/**
 * One gateway process with a Telegram bot on a shared Postgres, for the bot-connection failover test: the real
 * `createGateway` + `createPostgresStore` + `createTelegramAdapter` on a grammY bot pointed at a fake Bot API
 * (`TELEGRAM_API_ROOT`), its polling held through `gateway.holdConnection(adapter.connection)`. Prints
 * `ready`, then `poll <name>` for each getUpdates call it makes (the transformer sees grammY's own requests),
 * `call <name> <method>` for each sendMessage and editMessageText, and `refused <name>` each time it asks for the
 * bot's lease while another gateway holds it.
 *
 * Env: DATABASE_URL, SCHEMA, NAME, TELEGRAM_API_ROOT, TELEGRAM_TOKEN, LEASE_TTL_MS, RECOVERY_MS. With
 * STREAM_MS, the reply streams (`streamedReply`: a word every STREAM_MS ms, edits paced at STREAM_INTERVAL_MS).
 */

import { createTelegramAdapter } from "@sessions/adapter-telegram";
import { type AgentRunner, createGateway, messageText } from "@sessions/gateway";
import { Bot } from "grammy";
import { createPostgresStore } from "../store.js";
import { streamingRunner } from "./streamed-reply.js";

const env = (name: string): string => {
  const value = process.env[name];
  if (value === undefined) throw new Error(`${name} is required`);
  return value;
};
const name = env("NAME");

const bot = new Bot(env("TELEGRAM_TOKEN"), { client: { apiRoot: env("TELEGRAM_API_ROOT") } });
bot.api.config.use((previous, method, payload, signal) => {
  if (method === "getUpdates") process.stdout.write(`poll ${name}\n`);
  else if (method === "editMessageText" || method === "sendMessage")
    process.stdout.write(`call ${name} ${method}\n`);
  return previous(method, payload, signal);
});
const streamMs = process.env.STREAM_MS === undefined ? undefined : Number(process.env.STREAM_MS);
const adapter = createTelegramAdapter({
  bot,
  typing: false,
  streamIntervalMs: Number(process.env.STREAM_INTERVAL_MS ?? 1000),
});
const runner: AgentRunner =
  streamMs === undefined
    ? { run: async (request) => ({ reply: `${name}: ${messageText(request.input)}` }) }
    : streamingRunner(streamMs);
const store = await createPostgresStore({ connectionString: env("DATABASE_URL"), schema: env("SCHEMA") });
const gateway = createGateway({
  store: {
    ...store,
    async acquireLease(input) {
      const result = await store.acquireLease(input);
      if (!result.acquired && input.name.startsWith("connection:")) process.stdout.write(`refused ${name}\n`);
      return result;
    },
  },
  adapters: [adapter],
  runner,
  cluster: { leaseTtlMs: Number(env("LEASE_TTL_MS")), recoveryIntervalMs: Number(env("RECOVERY_MS")) },
});
await gateway.ready;
adapter.attach(gateway);
gateway.holdConnection(adapter.connection);
process.stdout.write("ready\n");
process.on("SIGTERM", () => {
  void gateway.close({ drainMs: 1000 }).then(() => process.exit(0));
});
