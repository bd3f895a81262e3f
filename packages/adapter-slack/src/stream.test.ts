import { chunkMessage } from "@sessions/core";
import { createScriptedRunner, type ScriptedAgent, systemClock } from "@sessions/gateway";
import { deliveredReply, slackEvent, writeWords } from "@sessions/testing";
import { afterEach, describe, expect, it } from "vitest";
import { unescapeMrkdwn } from "./index.js";
import { type SlackHarness, startSlack } from "./test-kit.js";

let h: SlackHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

/** A reply streamed ten words at a time, with a `<` to escape; past 4,000 characters when asked for a long one. */
const writer: ScriptedAgent = async (turn) => {
  const reply = await writeWords(turn, turn.text.includes("long") ? 800 : 40);
  return reply.replace("word3 ", "a<b ");
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

describe("streaming replies into Slack through real bolt", () => {
  it("streams by default: one message updated as the reply grows, ending as the reply, escaped", async () => {
    const harness = await start();
    await harness.send(slackEvent("channel-mention"));
    const reply = await deliveredReply(harness.gateway);
    const shown = harness.slack.posted("C0GENERAL");
    expect(shown.map((m) => unescapeMrkdwn(m.text))).toEqual([reply]);
    expect(shown[0]?.text).toContain("a&lt;b");
    expect(shown[0]?.edits).toBeGreaterThan(0);
    expect(harness.slack.callsOf("chat.postMessage")).toHaveLength(1);
  });

  it("goes on in further messages past 4,000 characters", async () => {
    const harness = await start("partial");
    await harness.send(slackEvent("channel-mention", { event: { text: "<@U0BOTACME> long" } }));
    const reply = await deliveredReply(harness.gateway);
    const shown = harness.slack.posted("C0GENERAL").map((m) => unescapeMrkdwn(m.text));
    expect(shown).toEqual(chunkMessage(reply, 4000));
  });

  it("posts the reply whole when streaming is off", async () => {
    const harness = await start("off");
    await harness.send(slackEvent("channel-mention"));
    const reply = await deliveredReply(harness.gateway);
    expect(harness.slack.posted("C0GENERAL").map((m) => unescapeMrkdwn(m.text))).toEqual([reply]);
    expect(harness.slack.callsOf("chat.update")).toEqual([]);
  });
});
