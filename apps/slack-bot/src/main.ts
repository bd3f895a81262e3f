// A Slack bot with session tools.
// Socket Mode: SLACK_BOT_TOKEN=xoxb-… SLACK_APP_TOKEN=xapp-… pnpm --filter slack-bot start [-- --runner ./runner.js]
// HTTP Events API: SLACK_BOT_TOKEN=xoxb-… SLACK_SIGNING_SECRET=… PORT=3000 pnpm --filter slack-bot start
// Offline: pnpm --filter slack-bot start -- --fake  (a fake Slack on 127.0.0.1 plays a short conversation)
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { createSlackAdapter, unescapeMrkdwn } from "@sessions/adapter-slack";
import {
  type AgentRunner,
  createGateway,
  createMemoryStore,
  createScriptedRunner,
  createSqliteStore,
} from "@sessions/gateway";
import { createFakeSlack, slackEvent } from "@sessions/testing";
import { eventually } from "@sessions/testing/eventually";
import { App, LogLevel } from "@slack/bolt";

const args = process.argv.slice(2).filter((a) => a !== "--");
const { values } = parseArgs({ args, options: { fake: { type: "boolean" }, runner: { type: "string" } } });
const fake = values.fake ? await createFakeSlack() : undefined;
const token = fake?.teams[0]?.botToken ?? process.env.SLACK_BOT_TOKEN;
const appToken = fake?.appToken ?? process.env.SLACK_APP_TOKEN;
const signingSecret = process.env.SLACK_SIGNING_SECRET;
if (!token || (!appToken && !signingSecret)) {
  throw new Error(
    "set SLACK_BOT_TOKEN and SLACK_APP_TOKEN (Socket Mode) or SLACK_SIGNING_SECRET (HTTP), or pass --fake",
  );
}

// Any AgentRunner works, e.g. createAiSdkRunner({ model }) from "@sessions/gateway/ai-sdk" in a --runner module.
const runner: AgentRunner = values.runner
  ? (await import(pathToFileURL(resolve(values.runner)).href)).default
  : createScriptedRunner({ agents: {}, fallback: (turn) => turn.write(`You said: ${turn.text}`) });

const app = new App({
  token,
  ...(appToken ? { appToken, socketMode: true } : { signingSecret: signingSecret as string }),
  ...(fake ? { clientOptions: { slackApiUrl: fake.apiUrl } } : {}),
  logLevel: LogLevel.WARN,
});
const adapter = createSlackAdapter({ app });
const store = fake
  ? createMemoryStore()
  : createSqliteStore({ path: process.env.SESSIONS_DB ?? ".sessions/slack-bot.db" });
const gateway = createGateway({ store, runner, adapters: [adapter] });
adapter.attach(gateway);
if (appToken) await app.start();
else await app.start(Number(process.env.PORT ?? 3000));
console.log(`Slack app is listening (${appToken ? "Socket Mode" : "HTTP Events API"})`);

if (fake) {
  for (const [name, text] of [
    ["im-message", "hello bot"],
    ["channel-mention", "<@U0BOTACME> any news?"],
  ] as const) {
    await fake.sendEvent(slackEvent(name, { event: { text } }));
    console.log(`user → ${text}`);
  }
  // Replies stream (Slack's default): one message, updated as it grows. Fails (after 60 s) rather than printing a
  // conversation with replies missing or half-written.
  const whole = ["You said: hello bot", "You said: any news?"];
  const shown = () => fake.posted().map((message) => unescapeMrkdwn(message.text));
  await eventually(
    () => whole.every((reply) => shown().includes(reply)),
    () => `the bot's 2 replies (got ${JSON.stringify(shown())})`,
  );
  for (const message of fake.posted()) {
    const how = (message.edits ?? 0) > 0 ? ", streamed" : "";
    console.log(`bot → ${unescapeMrkdwn(message.text)} (${message.channel}${how})`);
  }
  await app.stop();
  await gateway.close();
  await fake.close();
} else {
  const stop = async () => {
    await app.stop();
    await gateway.close();
  };
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
}
