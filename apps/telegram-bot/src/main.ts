// A Telegram bot with session tools. Real: TELEGRAM_BOT_TOKEN=… pnpm --filter telegram-bot start [-- --runner ./runner.js]
// Offline: pnpm --filter telegram-bot start -- --fake  (a fake Bot API on 127.0.0.1 plays a short conversation)
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { createTelegramAdapter, initTelegramBot } from "@sessions/adapter-telegram";
import {
  type AgentRunner,
  createGateway,
  createMemoryStore,
  createScriptedRunner,
  createSqliteStore,
  type GatewayOptions,
} from "@sessions/gateway";
import { createFakeTelegramApi, telegramUpdate } from "@sessions/testing";
import { eventually } from "@sessions/testing/eventually";
import { Bot } from "grammy";

const args = process.argv.slice(2).filter((a) => a !== "--");
const { values } = parseArgs({ args, options: { fake: { type: "boolean" }, runner: { type: "string" } } });
const fake = values.fake ? await createFakeTelegramApi() : undefined;
const token = fake?.token ?? process.env.TELEGRAM_BOT_TOKEN;
if (!token) throw new Error("set TELEGRAM_BOT_TOKEN, or pass --fake");

// Any AgentRunner works, e.g. createAiSdkRunner({ model }) from "@sessions/gateway/ai-sdk" in a --runner module.
const runner: AgentRunner = values.runner
  ? (await import(pathToFileURL(resolve(values.runner)).href)).default
  : createScriptedRunner({ agents: {}, fallback: (turn) => turn.write(`You said: ${turn.text}`) });

// TELEGRAM_API_ROOT: a self-hosted Bot API server (default: Telegram's).
const apiRoot = fake?.apiRoot ?? process.env.TELEGRAM_API_ROOT;
const bot = new Bot(token, apiRoot ? { client: { apiRoot } } : {});
// Bounded: a clear error within 15 s when the Bot API is unreachable or rejects the token (grammY alone would
// retry getMe forever, silently).
await initTelegramBot(bot).catch((error: Error) => {
  console.error(`telegram-bot: ${error.message}`);
  process.exit(1);
});
// Warnings and errors on stderr: a polling error such as 409 Conflict (another poller on this token) or a revoked
// token. The gateway then hands the polling lease back and starts polling again after a pause.
const print = (level: string) => (message: string, fields?: Record<string, unknown>) =>
  console.error(`telegram-bot ${level}: ${message}`, ...(fields === undefined ? [] : [fields]));
const logger: NonNullable<GatewayOptions["logger"]> = {
  debug() {},
  info() {},
  warn: print("warn"),
  error: print("error"),
  child: () => logger,
};
const adapter = createTelegramAdapter({ bot, logger });
const store = fake
  ? createMemoryStore()
  : createSqliteStore({ path: process.env.SESSIONS_DB ?? ".sessions/telegram-bot.db" });
const gateway = createGateway({ store, runner, adapters: [adapter], logger });
adapter.attach(gateway);
// Instead of bot.start(): the gateway polls while it holds the bot's lease (at once here, alone on its store).
gateway.holdConnection(adapter.connection);
console.log(`@${bot.botInfo.username} is listening`);

if (fake) {
  const said = [
    ["private-text", "hello bot"],
    ["forum-topic-text", "any news?"],
  ] as const;
  for (const [name, text] of said) {
    fake.pushUpdate(telegramUpdate(name, { text }));
    console.log(`user → ${text}`);
  }
  // The bot's messages as each chat shows them now. Replies stream (Telegram's default): as a draft in a private
  // chat, then sent; elsewhere one message edited as it grows.
  const chats = () => new Set(fake.callsOf("sendMessage").map((c) => String(c.params.chat_id)));
  const shown = () =>
    [...chats()].flatMap((chat) =>
      fake.messages(chat).map((m) => {
        const how = m.edits > 0 ? ", streamed" : fake.drafts(chat).size > 0 ? ", drafted first" : "";
        return { text: m.text, how, chat };
      }),
    );
  const whole = said.map(([, text]) => `You said: ${text}`);
  // Fails (after 60 s) rather than printing a conversation with replies missing or half-written.
  await eventually(
    () => whole.every((reply) => shown().some((m) => m.text === reply)),
    () => `the bot's 2 replies (got ${JSON.stringify(shown().map((m) => m.text))})`,
  );
  for (const m of shown()) console.log(`bot → ${m.text} (chat ${m.chat}${m.how})`);
  await gateway.close(); // stops the polling it holds (confirming the updates handled) and gives the lease up
  await fake.close();
} else {
  const stop = () => void gateway.close();
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
}
