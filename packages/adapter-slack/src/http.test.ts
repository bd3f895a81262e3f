import { slackEvent } from "@sessions/testing";
import { afterEach, describe, expect, it } from "vitest";
import { recordedRuns, type SlackHarness, startSlack, until } from "./test-kit.js";

let h: SlackHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

describe("Slack adapter through real bolt over the HTTP Events API", () => {
  it("answers Slack's URL verification, then a signed channel mention, in the channel", async () => {
    h = await startSlack({ main: (t) => `echo: ${t.text}` }, { mode: "http" });
    const url = h.url as string;
    const verified = await h.slack.postEvent(url, {
      token: "verification-token-redacted",
      challenge: "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P",
      type: "url_verification",
    });
    expect(verified).toMatchObject({ status: 200 });
    expect(verified.body).toContain("3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P");
    await h.send(slackEvent("channel-mention"));
    await until(() => h?.slack.posted().length === 1, "the reply");
    expect(h.slack.posted()[0]).toMatchObject({ channel: "C0GENERAL", text: "echo: status please" });
    expect((await h.gateway.sessions.list()).sessions[0]).toMatchObject({
      key: "agent:main:slack:channel:c0general",
      deliveryContext: { accountId: "t0acme001" },
    });
  });

  it("refuses requests signed with another secret or replayed late, and runs nothing for them", async () => {
    h = await startSlack({ main: () => "should not run" }, { mode: "http" });
    const url = h.url as string;
    const forged = await h.slack.postEvent(url, slackEvent("im-message"), {
      signingSecret: "not-the-secret",
    });
    expect(forged.status).toBe(401);
    const stale = await h.slack.postEvent(url, slackEvent("im-message"), {
      timestamp: Math.floor(Date.now() / 1000) - 10 * 60,
    });
    expect(stale.status).toBe(401);
    // Refused before dispatch; had either reached the app, it would be handled by now.
    await h.handled();
    expect(h.slack.posted()).toHaveLength(0);
    expect((await h.gateway.sessions.list()).count).toBe(0);
  });

  it("runs a redelivered event once (Slack retries when the ack is late)", async () => {
    h = await startSlack({ main: (t) => `echo: ${t.text}` }, { mode: "http" });
    const body = slackEvent("im-message");
    await h.send(body);
    const again = await h.slack.postEvent(h.url as string, body, { retryNum: 1 });
    expect(again.status).toBe(200);
    // Both deliveries handled: one run recorded, and its reply is the one post.
    await h.handled();
    expect(await recordedRuns(h.gateway)).toHaveLength(1);
    await until(() => h?.slack.posted().length === 1, "the reply");
    expect(h.slack.posted()).toHaveLength(1);
  });

  it("opens a thread under a DM that spawned, and the announce lands in it", async () => {
    h = await startSlack(
      {
        main: async (t) => {
          if (t.kind === "subagent") return "Result: done";
          if (t.kind === "subagent_announce") return "Result: done\nNotes:\n- none";
          if (t.text === "research please") {
            await t.callTool("sessions_spawn", { task: "research", thread: true });
            return "on it";
          }
          return "ok";
        },
      },
      { mode: "http" },
    );
    const message = slackEvent("im-message", { event: { text: "research please" } });
    const ts = (message.event as { ts: string }).ts;
    await h.send(message);
    await until(
      () => h?.slack.posted().some((m) => m.text.startsWith("Status: success")) === true,
      "the announce",
    );
    expect(h.slack.posted().find((m) => m.text.startsWith("Status: success"))).toMatchObject({
      channel: "D0ALICEDM",
      threadTs: ts,
    });
    expect(h.slack.posted().find((m) => m.text === "on it")).not.toHaveProperty("threadTs");
  });
});
