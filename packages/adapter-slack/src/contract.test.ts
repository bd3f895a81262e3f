import { createFakeSlack } from "@sessions/testing";
import { describeChannelAdapterContract } from "@sessions/testing/contract";
import { App, LogLevel } from "@slack/bolt";
import { createSlackAdapter, unescapeMrkdwn } from "./index.js";

describeChannelAdapterContract("slack (bolt in Socket Mode + fake Slack)", async () => {
  const slack = await createFakeSlack();
  const [acme] = slack.teams;
  const app = new App({
    token: acme?.botToken,
    appToken: slack.appToken,
    socketMode: true,
    clientOptions: { slackApiUrl: slack.apiUrl },
    logLevel: LogLevel.ERROR,
  });
  await app.start();
  const general = { channel: "slack", to: "channel:C0GENERAL", accountId: "t0acme001" };
  return {
    adapter: createSlackAdapter({ app }),
    chat: general,
    threadParent: general,
    sent: () =>
      slack.posted().map((m) => ({
        to: `channel:${m.channel}`,
        ...(m.threadTs === undefined ? {} : { threadId: m.threadTs }),
        text: unescapeMrkdwn(m.text),
      })),
    rateLimitNextSend: (seconds, options) =>
      slack.failNext("chat.postMessage", 1, { status: 429, retryAfterSeconds: seconds }, options),
    refuseNextSend: () => slack.failNext("chat.postMessage", 1, { error: "not_in_channel" }),
    shown: () => slack.posted("C0GENERAL").map((m) => m.text),
    async close() {
      await app.stop();
      await slack.close();
    },
  };
});
