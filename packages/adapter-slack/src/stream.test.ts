import { chunkMessage } from "@sessions/core";
import { createScriptedRunner, type ScriptedAgent, systemClock } from "@sessions/gateway";
import { slackEvent } from "@sessions/testing";
import { afterEach, describe, expect, it } from "vitest";
import { unescapeMrkdwn } from "./index.js";
import { type SlackHarness, startSlack, until } from "./test-kit.js";

let h: SlackHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

/** A reply written ten words at a time, 15 ms apart (with a `<` to escape); past 4,000 characters when asked. */
const writer: ScriptedAgent = async (turn) => {
  const long = turn.text.includes("long");
  const words = Array.from({ length: long ? 800 : 40 }, (_, i) => (i === 3 ? "a<b " : `word${i} `));
  for (let i = 0; i < words.length; i += 10) {
    turn.say(words.slice(i, i + 10).join(""));
    await turn.sleep(15);
  }
  return words.join("").trim();
};

async function start(streaming?: "off" | "partial" | "block") {
  h = await startSlack(
    {},
    {
      gateway: {
        clock: systemClock,
        runner: createScriptedRunner({ agents: { main: writer } }),
        ...(streaming === undefined ? {} : { config: { channels: { slack: { streaming } } } }),
      },
      adapter: { streamIntervalMs: 40 },
    },
  );
  return h;
}

/** The reply of the first session, once its delivery is recorded. */
async function replied(harness: SlackHarness): Promise<string> {
  let reply = "";
  await until(async () => {
    const [row] = (await harness.gateway.sessions.list()).sessions;
    const { deliveries } = await harness.gateway.deliveries.list({ sessionKey: row?.key as string });
    reply = deliveries[0]?.text ?? "";
    return deliveries[0]?.status === "delivered";
  }, "the reply delivered");
  return reply;
}

describe("streaming replies into Slack through real bolt", () => {
  it("streams by default: one message updated as the reply grows, ending as the reply, escaped", async () => {
    const harness = await start();
    await harness.send(slackEvent("channel-mention"));
    const reply = await replied(harness);
    const shown = harness.slack.posted("C0GENERAL");
    expect(shown.map((m) => unescapeMrkdwn(m.text))).toEqual([reply]);
    expect(shown[0]?.text).toContain("a&lt;b");
    expect(shown[0]?.edits).toBeGreaterThan(0);
    expect(harness.slack.callsOf("chat.postMessage")).toHaveLength(1);
  });

  it("goes on in further messages past 4,000 characters", async () => {
    const harness = await start("partial");
    await harness.send(slackEvent("channel-mention", { event: { text: "<@U0BOTACME> long" } }));
    const reply = await replied(harness);
    const shown = harness.slack.posted("C0GENERAL").map((m) => unescapeMrkdwn(m.text));
    expect(shown).toEqual(chunkMessage(reply, 4000));
  });

  it("posts the reply whole when streaming is off", async () => {
    const harness = await start("off");
    await harness.send(slackEvent("channel-mention"));
    const reply = await replied(harness);
    expect(harness.slack.posted("C0GENERAL").map((m) => unescapeMrkdwn(m.text))).toEqual([reply]);
    expect(harness.slack.callsOf("chat.update")).toEqual([]);
  });
});
