import { createHmac } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import { createFakeSlack, type FakeSlack } from "./fake-slack.js";
import { slackEvent } from "./slack-fixtures.js";

let slack: FakeSlack | undefined;
afterEach(async () => {
  await slack?.close();
  slack = undefined;
});

async function call(method: string, params: Record<string, unknown>, token?: string) {
  const res = await fetch(`${slack?.apiUrl}${method}`, {
    method: "POST",
    headers: {
      "content-type": "application/x-www-form-urlencoded",
      ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
    },
    body: new URLSearchParams(params as Record<string, string>).toString(),
  });
  return {
    status: res.status,
    retryAfter: res.headers.get("retry-after"),
    body: (await res.json()) as Record<string, unknown>,
  };
}

describe("createFakeSlack: Web API", () => {
  it("answers per workspace: a bot token reaches its own workspace's channels only", async () => {
    slack = await createFakeSlack();
    const [acme, globex] = slack.teams as [FakeSlack["teams"][0], FakeSlack["teams"][0]];
    expect((await call("auth.test", {}, globex.botToken)).body).toMatchObject({
      ok: true,
      team_id: "T0GLOBEX1",
      user_id: "U0BOTGLBX",
      bot_id: "B0BOTGLBX",
    });
    const sent = await call(
      "chat.postMessage",
      { channel: "C0GENERAL", text: "a &amp; b", thread_ts: "1.2" },
      acme.botToken,
    );
    expect(sent.body).toMatchObject({
      ok: true,
      channel: "C0GENERAL",
      message: { text: "a &amp; b", thread_ts: "1.2" },
    });
    expect(slack.posted()).toEqual([
      expect.objectContaining({
        teamId: "T0ACME001",
        channel: "C0GENERAL",
        ts: sent.body.ts,
        threadTs: "1.2",
      }),
    ]);
    expect((await call("chat.postMessage", { channel: "C0GLXGENL", text: "x" }, acme.botToken)).body).toEqual(
      {
        ok: false,
        error: "channel_not_found",
      },
    );
    expect(
      (await call("chat.postMessage", { channel: "C0RANDOM1", text: "x" }, acme.botToken)).body.error,
    ).toBe("not_in_channel");
    expect(
      (await call("chat.postMessage", { channel: "C0OLDNEWS", text: "x" }, acme.botToken)).body.error,
    ).toBe("is_archived");
    expect(
      (await call("chat.postMessage", { channel: "C0GENERAL", text: " " }, acme.botToken)).body.error,
    ).toBe("no_text");
    expect((await call("chat.postMessage", { channel: "C0GENERAL", text: "x" })).body.error).toBe(
      "not_authed",
    );
    expect(
      (await call("chat.postMessage", { channel: "C0GENERAL", text: "x" }, "xoxb-nope")).body.error,
    ).toBe("invalid_auth");
    // Posting to a user id opens the DM with them.
    expect(
      (await call("chat.postMessage", { channel: "U0ALICE01", text: "hi" }, acme.botToken)).body.channel,
    ).toBe("D0ALICEDM");
    expect(
      (await call("conversations.info", { channel: "C0PRIVATE" }, acme.botToken)).body.channel,
    ).toMatchObject({
      is_private: true,
      name: "ops-private",
    });
    expect((await call("users.info", { user: "U0ALICE01" }, acme.botToken)).body.user).toMatchObject({
      real_name: "Alice Example",
    });
    expect((await call("emoji.list", {}, acme.botToken)).body).toMatchObject({
      ok: false,
      error: "unknown_method",
    });
    expect(slack.callsOf("chat.postMessage")[0]).toMatchObject({ token: acme.botToken, teamId: "T0ACME001" });
  });

  it("changes and deletes the bot's own messages (chat.update, chat.delete), in its own workspace only", async () => {
    slack = await createFakeSlack();
    const [acme, globex] = slack.teams as [FakeSlack["teams"][0], FakeSlack["teams"][0]];
    const sent = await call("chat.postMessage", { channel: "C0GENERAL", text: "thinking" }, acme.botToken);
    const ts = sent.body.ts as string;
    expect(
      (await call("chat.update", { channel: "C0GENERAL", ts, text: "thinking… done" }, acme.botToken)).body,
    ).toMatchObject({ ok: true, channel: "C0GENERAL", ts, text: "thinking… done" });
    expect(slack.posted("C0GENERAL")).toEqual([
      expect.objectContaining({ ts, text: "thinking… done", edits: 1 }),
    ]);
    expect(
      (await call("chat.update", { channel: "C0GENERAL", ts, text: " " }, acme.botToken)).body.error,
    ).toBe("no_text");
    expect(
      (await call("chat.update", { channel: "C0GENERAL", ts: "9.9", text: "x" }, acme.botToken)).body.error,
    ).toBe("message_not_found");
    // Another workspace's bot cannot reach it.
    expect(
      (await call("chat.update", { channel: "C0GENERAL", ts, text: "x" }, globex.botToken)).body.error,
    ).toBe("channel_not_found");
    expect((await call("chat.delete", { channel: "C0GENERAL", ts }, acme.botToken)).body).toEqual({
      ok: true,
      channel: "C0GENERAL",
      ts,
    });
    expect(slack.posted("C0GENERAL")).toEqual([]);
    expect((await call("chat.delete", { channel: "C0GENERAL", ts }, acme.botToken)).body.error).toBe(
      "message_not_found",
    );
  });

  it("fails on demand: 429 with Retry-After, or a Slack error, after letting some calls through", async () => {
    slack = await createFakeSlack();
    const token = slack.teams[0]?.botToken as string;
    slack.failNext("chat.postMessage", 1, { status: 429, retryAfterSeconds: 7 }, { after: 1 });
    expect((await call("chat.postMessage", { channel: "C0GENERAL", text: "1" }, token)).status).toBe(200);
    expect(await call("chat.postMessage", { channel: "C0GENERAL", text: "2" }, token)).toMatchObject({
      status: 429,
      retryAfter: "7",
      body: { ok: false, error: "ratelimited" },
    });
    slack.failNext("chat.postMessage", 1, { error: "missing_scope", needed: "chat:write" });
    expect((await call("chat.postMessage", { channel: "C0GENERAL", text: "3" }, token)).body).toMatchObject({
      ok: false,
      error: "missing_scope",
      needed: "chat:write",
    });
    expect((await call("chat.postMessage", { channel: "C0GENERAL", text: "4" }, token)).body.ok).toBe(true);
    expect(slack.posted().map((m) => m.text)).toEqual(["1", "4"]);
  });
});

describe("createFakeSlack: Socket Mode and Events API", () => {
  it("hands out one-use links for the app token, says hello and waits for each envelope's ack", async () => {
    slack = await createFakeSlack();
    expect((await call("apps.connections.open", {}, slack.teams[0]?.botToken)).body.error).toBe(
      "not_allowed_token_type",
    );
    const { url } = (await call("apps.connections.open", {}, slack.appToken)).body as { url: string };
    const ws = new WebSocket(url);
    const hello = await new Promise<Record<string, unknown>>((resolve) =>
      ws.once("message", (data) => resolve(JSON.parse(String(data)))),
    );
    expect(hello).toMatchObject({ type: "hello", connection_info: { app_id: "A0SESSIONS" } });
    // The same ticket does not open a second link.
    const reused = new WebSocket(url);
    await new Promise((resolve) => reused.once("error", resolve));
    const body = slackEvent("im-message");
    ws.on("message", (data) => {
      const envelope = JSON.parse(String(data)) as { envelope_id: string; type: string; payload: unknown };
      expect(envelope).toMatchObject({ type: "events_api", payload: body });
      ws.send(JSON.stringify({ envelope_id: envelope.envelope_id }));
    });
    expect(await slack.sendEvent(body)).toMatchObject({ acked: true, type: "events_api" });
    ws.close();
  });

  it("fails sendEvent when the app does not acknowledge the envelope within ackTimeoutMs", async () => {
    slack = await createFakeSlack({ ackTimeoutMs: 300 });
    const { url } = (await call("apps.connections.open", {}, slack.appToken)).body as { url: string };
    const ws = new WebSocket(url);
    await new Promise((resolve) => ws.once("message", resolve)); // hello: the app is connected
    ws.on("message", () => undefined); // and never acks
    await expect(slack.sendEvent(slackEvent("im-message"))).rejects.toThrow(/not acknowledged/);
    expect(slack.socket.envelopes).toHaveLength(1);
    expect(slack.socket.envelopes[0]?.acked).toBe(false);
    ws.close();
  });

  it("signs Events API requests the way Slack does", async () => {
    slack = await createFakeSlack();
    const seen: { signature: string; expected: string }[] = [];
    const app = createServer(async (req, res) => {
      let raw = "";
      for await (const chunk of req) raw += String(chunk);
      const ts = String(req.headers["x-slack-request-timestamp"]);
      const expected = `v0=${createHmac("sha256", slack?.signingSecret as string)
        .update(`v0:${ts}:${raw}`)
        .digest("hex")}`;
      seen.push({ signature: String(req.headers["x-slack-signature"]), expected });
      res.end("ok");
    });
    await new Promise<void>((resolve) => app.listen(0, "127.0.0.1", resolve));
    const url = `http://127.0.0.1:${(app.address() as AddressInfo).port}/slack/events`;
    expect(await slack.postEvent(url, slackEvent("channel-message"))).toEqual({ status: 200, body: "ok" });
    await slack.postEvent(url, slackEvent("channel-message"), { signingSecret: "other" });
    await new Promise<void>((resolve) => app.close(() => resolve()));
    expect(seen[0]?.signature).toBe(seen[0]?.expected);
    expect(seen[1]?.signature).not.toBe(seen[1]?.expected);
  });

  it("moves a recorded payload to the other workspace, with fresh ids", () => {
    const a = slackEvent("channel-mention");
    const b = slackEvent("channel-mention", { team: "T0GLOBEX1", event: { channel: "C0GLXGENL" } });
    expect(b).toMatchObject({
      team_id: "T0GLOBEX1",
      authorizations: [{ team_id: "T0GLOBEX1", user_id: "U0BOTGLBX" }],
      event: { text: "<@U0BOTGLBX> status please", channel: "C0GLXGENL", team: "T0GLOBEX1" },
    });
    expect(a.event_id).not.toBe(b.event_id);
    expect((a.event as { ts: string }).ts).not.toBe((b.event as { ts: string }).ts);
    expect(() => slackEvent("im-message", { team: "T0NOPE" })).toThrow(/no recorded workspace/);
  });
});
