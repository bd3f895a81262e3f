import { slackEvent } from "@sessions/testing";
import { afterEach, describe, expect, it } from "vitest";
import { escapeMrkdwn, unescapeMrkdwn } from "./index.js";
import { recordedRuns, type SlackHarness, startSlack, until } from "./test-kit.js";

let h: SlackHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const echo = { main: (t: { text: string }) => `echo: ${t.text}` };

describe("Slack adapter through real bolt in Socket Mode against a fake Slack", () => {
  it("answers a mention in a channel, in the channel, as the channel's session", async () => {
    h = await startSlack(echo);
    await h.send(slackEvent("channel-mention"));
    await until(() => h?.slack.posted().length === 1, "the reply");
    expect(h.slack.posted()[0]).toMatchObject({
      teamId: "T0ACME001",
      channel: "C0GENERAL",
      text: "echo: status please",
    });
    expect(h.slack.posted()[0]).not.toHaveProperty("threadTs");
    const [row] = (await h.gateway.sessions.list()).sessions;
    expect(row).toMatchObject({
      key: "agent:main:slack:channel:c0general",
      kind: "group",
      channel: "slack",
      displayName: "Acme #general",
      deliveryContext: { channel: "slack", to: "channel:C0GENERAL", accountId: "t0acme001" },
    });
    const history = await h.gateway.chat.history({ sessionKey: "agent:main:slack:channel:c0general" });
    expect(history.messages[0]).toMatchObject({ role: "user", content: "status please" });
  });

  it("maps public and private channels, DMs and multi-person DMs to the key model's kinds", async () => {
    h = await startSlack(echo);
    await h.send(slackEvent("im-message"));
    await h.send(slackEvent("private-channel-message", { event: { text: "<@U0BOTACME> deploy status?" } }));
    await h.send(slackEvent("mpim-message", { event: { text: "<@U0BOTACME> what do you think?" } }));
    await until(() => h?.slack.posted().length === 3, "three replies");
    expect(
      h.slack
        .posted()
        .map((m) => [m.channel, m.text])
        .sort(),
    ).toEqual([
      ["C0PRIVATE", "echo: deploy status?"],
      ["D0ALICEDM", "echo: hello bot"],
      ["G0MPIM001", "echo: what do you think?"],
    ]);
    const rows = (await h.gateway.sessions.list()).sessions;
    const byKey = Object.fromEntries(rows.map((r) => [r.key, r]));
    // A DM goes to the main session under the default dmScope, and replies go back to the DM.
    expect(byKey["agent:main:main"]).toMatchObject({ chatType: "direct", displayName: "alice" });
    expect(byKey["agent:main:slack:channel:c0private"]).toMatchObject({
      kind: "group",
      displayName: "Acme #ops-private",
    });
    expect(byKey["agent:main:slack:group:g0mpim001"]).toMatchObject({ kind: "group" });
    const main = await h.gateway.store.getEntry("agent:main:main");
    expect(main?.deliveryContext).toMatchObject({ to: "channel:D0ALICEDM", accountId: "t0acme001" });
  });

  it("answers channel messages only when mentioned, unless mention gating is off", async () => {
    h = await startSlack(echo);
    await h.send(slackEvent("channel-message"));
    await h.send(slackEvent("mpim-message"));
    // Both ignored: no session, so no run that could post.
    await h.handled();
    expect(await h.gateway.sessions.list()).toMatchObject({ count: 0 });
    expect(h.slack.posted()).toHaveLength(0);
    await h.close();

    h = await startSlack(echo, { adapter: { requireMention: false } });
    await h.send(slackEvent("channel-message"));
    await until(() => h?.slack.posted().length === 1, "the ungated reply");
    expect(h.slack.posted()[0]?.text).toBe("echo: status please");
  });

  it("ignores its own messages, other bots, edits; a mention seen as message and app_mention runs once", async () => {
    h = await startSlack(echo);
    await h.send(slackEvent("own-message"));
    await h.send(slackEvent("other-bot-message", { event: { text: "<@U0BOTACME> deploy" } }));
    await h.send(slackEvent("message-changed"));
    const message = slackEvent("channel-mention");
    const ts = (message.event as { ts: string }).ts;
    await h.send(message);
    await h.send(slackEvent("app-mention", { event: { ts, event_ts: ts } }));
    // Every event ignored or handed over: one run was recorded, and its reply is the one post.
    await h.handled();
    expect(await recordedRuns(h.gateway)).toHaveLength(1);
    await until(() => h?.slack.posted().length === 1, "the one reply");
    expect(h.slack.posted()).toHaveLength(1);
    const history = await h.gateway.chat.history({ sessionKey: "agent:main:slack:channel:c0general" });
    expect(history.messages.filter((m) => m.role === "user")).toHaveLength(1);
  });

  it("answers an app_mention alone (apps subscribed to app_mention only)", async () => {
    h = await startSlack(echo);
    await h.send(slackEvent("app-mention", { event: { text: "<@U0BOTACME> ping &amp; pong" } }));
    await until(() => h?.slack.posted().length === 1, "the reply");
    expect(unescapeMrkdwn(h.slack.posted()[0]?.text as string)).toBe("echo: ping & pong");
  });

  it("gives a thread its own session, replies in the thread, and continues it without a mention", async () => {
    h = await startSlack(echo);
    const root = "1763800010.000100";
    await h.send(slackEvent("thread-reply", { event: { text: "<@U0BOTACME> and the second host?" } }));
    await until(() => h?.slack.posted().length === 1, "the thread reply");
    expect(h.slack.posted()[0]).toMatchObject({ channel: "C0GENERAL", threadTs: root });
    await h.send(slackEvent("thread-reply", { event: { text: "and the third?" } }));
    await until(() => h?.slack.posted().length === 2, "the follow-up reply");
    expect(h.slack.posted()[1]).toMatchObject({ threadTs: root, text: "echo: and the third?" });
    // Another thread the bot was never part of stays gated.
    await h.send(
      slackEvent("thread-reply", { event: { text: "unrelated", thread_ts: "1763800099.000900" } }),
    );
    await h.handled();
    expect((await h.gateway.sessions.list()).sessions.map((s) => s.key)).toEqual([
      `agent:main:slack:channel:c0general:thread:${root}`,
    ]);
    expect(await recordedRuns(h.gateway)).toHaveLength(2);
    expect(h.slack.posted()).toHaveLength(2);
  });

  it("opens a thread under the channel message that spawned, and the announce lands in it", async () => {
    h = await startSlack({
      main: async (t) => {
        if (t.kind === "subagent") return "Result: three papers";
        if (t.kind === "subagent_announce") return "Result: 3 papers found\nNotes:\n- none";
        if (t.text.startsWith("research")) {
          await t.callTool("sessions_spawn", { task: "find papers", thread: true, label: "Papers run" });
          return "started a thread for it";
        }
        return "ok";
      },
    });
    const message = slackEvent("channel-mention", { event: { text: "<@U0BOTACME> research please" } });
    const ts = (message.event as { ts: string }).ts;
    await h.send(message);
    await until(
      () => h?.slack.posted().some((m) => m.text.startsWith("Status: success")) === true,
      "the announce",
    );
    const posted = h.slack.posted();
    expect(posted.find((m) => m.text.startsWith("Working on this here"))).toMatchObject({
      channel: "C0GENERAL",
      threadTs: ts,
    });
    expect(posted.find((m) => m.text === "started a thread for it")).not.toHaveProperty("threadTs");
    expect(posted.find((m) => m.text.startsWith("Status: success"))).toMatchObject({
      channel: "C0GENERAL",
      threadTs: ts,
    });
    const [binding] = await h.gateway.store.listThreadBindings();
    expect(binding).toMatchObject({ channel: "slack", accountId: "t0acme001", threadId: ts });
    // Writing in the thread (no mention needed) reaches the sub-agent's session; its reply stays in the thread.
    const before = posted.length;
    await h.send(slackEvent("thread-reply", { event: { text: "how is it going?", thread_ts: ts } }));
    await until(() => h?.slack.posted().length === before + 1, "the child's reply");
    expect(h.slack.posted()[before]).toMatchObject({ threadTs: ts, text: "ok" });
    const history = await h.gateway.chat.history({ sessionKey: binding?.sessionKey as string });
    expect(history.messages.some((m) => m.content === "how is it going?")).toBe(true);
  });

  it("opens the thread under the message whose run spawned, when earlier messages of the channel ran first", async () => {
    h = await startSlack({
      main: async (t) => {
        if (t.kind === "subagent") return "Result: done";
        if (t.kind === "subagent_announce") return "Result: done\nNotes:\n- none";
        if (t.text === "research please") {
          await t.callTool("sessions_spawn", { task: "research", thread: true });
          return "on it";
        }
        return `echo: ${t.text}`;
      },
    });
    const first = slackEvent("channel-mention", { event: { text: "<@U0BOTACME> hello" } });
    const second = slackEvent("channel-mention", { event: { text: "<@U0BOTACME> research please" } });
    await h.send(first);
    await h.send(second);
    await until(
      () => h?.slack.posted().some((m) => m.text.startsWith("Status: success")) === true,
      "the announce",
    );
    const ts = (second.event as { ts: string }).ts;
    expect(h.slack.posted().find((m) => m.text === "echo: hello")).not.toHaveProperty("threadTs");
    expect(h.slack.posted().find((m) => m.text.startsWith("Working on this here"))).toMatchObject({
      threadTs: ts,
    });
    expect(h.slack.posted().find((m) => m.text.startsWith("Status: success"))).toMatchObject({
      threadTs: ts,
    });
  });

  it("binds a spawn from inside a thread to that thread, and archiving the channel ends the binding", async () => {
    h = await startSlack({
      main: async (t) => {
        if (t.kind === "subagent") return "Result: done";
        if (t.kind === "subagent_announce") return "Result: done\nNotes:\n- none";
        if (t.text === "dig deeper") {
          await t.callTool("sessions_spawn", { task: "dig", thread: true });
          return "spawned";
        }
        return "ok";
      },
    });
    const root = "1763800010.000100";
    await h.send(slackEvent("thread-reply", { event: { text: "<@U0BOTACME> dig deeper" } }));
    await until(
      () => h?.slack.posted().some((m) => m.text.startsWith("Status: success")) === true,
      "the announce",
    );
    // Slack threads do not nest: everything stays in the thread the user wrote in.
    expect(h.slack.posted().every((m) => m.threadTs === root)).toBe(true);
    expect(await h.gateway.store.listThreadBindings()).toMatchObject([{ threadId: root }]);
    await h.send(slackEvent("channel-archive"));
    await until(
      async () => (await h?.gateway.store.listThreadBindings())?.length === 0,
      "the binding to end",
    );
  });

  it("lets only owners change the send policy, with or without the mention in front", async () => {
    h = await startSlack(echo, { adapter: { ownerIds: ["U0ALICE01"] } });
    await h.send(
      slackEvent("channel-mention", { event: { text: "<@U0BOTACME> /send off", user: "U0BOB0001" } }),
    );
    await until(() => h?.slack.posted().length === 1, "the refusal");
    expect(h.slack.posted()[0]?.text).toBe("Only the owner can change this session's send policy.");
    await h.send(slackEvent("channel-mention", { event: { text: "<@U0BOTACME> /send off" } }));
    await until(() => h?.slack.posted().length === 2, "the confirmation");
    expect(h.slack.posted()[1]?.text).toBe("Send policy: off for this session.");
  });

  it("retries a 429 at Retry-After through the outbox, without resending chunks already posted", async () => {
    h = await startSlack({ main: () => `${"a".repeat(3990)}\n\n${"b".repeat(100)}` });
    const { slack, gateway, clock } = h;
    // The second chunk hits the rate limit: only it may be sent again.
    slack.failNext("chat.postMessage", 1, { status: 429, retryAfterSeconds: 7 }, { after: 1 });
    await h.send(slackEvent("im-message"));
    const posts = () => slack.callsOf("chat.postMessage");
    await until(() => posts().length === 2, "the first chunk and the rate-limited one");
    const delivery = async () => (await gateway.deliveries.list()).deliveries[0];
    await until(async () => (await delivery())?.attempts === 1, "the failed attempt recorded");
    expect(await delivery()).toMatchObject({ status: "queued", attempts: 1 });
    expect((await delivery())?.lastError).toContain("rate limit");
    await clock.advance(6000);
    expect(posts()).toHaveLength(2);
    await clock.advance(1500);
    await until(async () => (await delivery())?.status === "delivered", "the retry");
    expect(posts()).toHaveLength(3);
    expect(slack.posted().map((m) => m.text[0])).toEqual(["a", "b"]);
    expect(await delivery()).toMatchObject({ attempts: 2, receipt: slack.posted().map((m) => m.ts) });
  });

  it("ends deliveries Slack refuses for good (missing_scope, not_in_channel, channel_not_found) as failed, with the reason", async () => {
    h = await startSlack(echo);
    const { slack, gateway } = h;
    // A reply to a person's message: the token lacks a scope.
    slack.failNext("chat.postMessage", 1, { error: "missing_scope", needed: "chat:write" });
    await h.send(slackEvent("channel-mention"));
    const byTo = async (to: string) => (await gateway.deliveries.list()).deliveries.find((d) => d.to === to);
    await until(async () => (await byTo("channel:C0GENERAL"))?.status === "failed", "the failed reply");
    expect(await byTo("channel:C0GENERAL")).toMatchObject({ status: "failed", attempts: 1 });
    expect((await byTo("channel:C0GENERAL"))?.lastError).toMatch(/missing_scope \(needs chat:write\)/);
    // Deliveries the gateway is asked for: a channel the bot is not in, and one that does not exist (or belongs
    // to another workspace). The fake answers as Slack does; nothing is retried, and nothing is posted.
    for (const [to, slackError, hint] of [
      ["channel:C0RANDOM1", "not_in_channel", "invite the app to the channel"],
      ["channel:C0NOSUCH1", "channel_not_found", "belongs to another workspace"],
    ] as const) {
      await gateway.agent({
        message: "hi",
        idempotencyKey: `to-${to}`,
        deliver: true,
        channel: "slack",
        to,
        accountId: "t0acme001",
      });
      await until(async () => (await byTo(to))?.status === "failed", `the ${slackError} failure`);
      const refused = await byTo(to);
      expect(refused).toMatchObject({ status: "failed", attempts: 1 });
      expect(refused?.lastError).toContain(`Slack refused the message: ${slackError}`);
      expect(refused?.lastError).toContain(hint);
      expect(refused?.receipt ?? []).toEqual([]);
    }
    expect(slack.posted()).toHaveLength(0);
    expect(slack.callsOf("chat.postMessage")).toHaveLength(3);
    // The adapter's error is typed: invalid_params (the outbox does not retry it) with Slack's error in details.
    const direct = await h.adapter
      .deliver(
        { channel: "slack", to: "channel:C0NOSUCH1", accountId: "t0acme001" },
        { text: "x", kind: "reply", sessionKey: "s" },
        { idempotencyKey: "direct" },
      )
      .catch((e: unknown) => e);
    expect(direct).toMatchObject({ code: "invalid_params", details: { slackError: "channel_not_found" } });
    // And the adapter keeps going: the next reply is delivered, with its message ts as the receipt.
    await h.send(slackEvent("channel-mention", { event: { text: "<@U0BOTACME> still there?" } }));
    await until(() => slack.posted().some((m) => m.text === "echo: still there?"), "the next reply");
    await until(
      async () => (await gateway.deliveries.list()).deliveries.some((d) => d.status === "delivered"),
      "the delivered record",
    );
    const delivered = (await gateway.deliveries.list()).deliveries.find((d) => d.status === "delivered");
    expect(delivered?.receipt).toEqual([slack.posted()[0]?.ts]);
  });

  it("escapes mrkdwn and splits long replies at Slack's limit without losing text", async () => {
    const paragraph = "Tom & Jerry <@U0ALICE01> <!channel> a<b>c ".repeat(60).trim();
    const reply = Array.from({ length: 4 }, () => paragraph).join("\n\n");
    h = await startSlack({ main: () => reply });
    await h.send(slackEvent("im-message"));
    await until(
      async () => (await h?.gateway.deliveries.list())?.deliveries[0]?.status === "delivered",
      "delivery",
    );
    const posted = h.slack.posted();
    expect(posted.length).toBeGreaterThan(1);
    for (const m of posted) {
      expect(m.text.length).toBeLessThanOrEqual(4000);
      expect(m.text).not.toMatch(/[<>]/);
    }
    // Nothing lost, nothing added: the messages, joined, are the escaped reply; mentions and links stay inert.
    expect(posted.map((m) => m.text).join("")).toBe(escapeMrkdwn(reply));
    expect(unescapeMrkdwn(posted.map((m) => m.text).join(""))).toBe(reply);
  });
});
