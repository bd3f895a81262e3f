import { slackEvent } from "@sessions/testing";
import { afterEach, describe, expect, it } from "vitest";
import { type SlackHarness, startSlack, until } from "./test-kit.js";

let h: SlackHarness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const message = { text: "x", kind: "reply" as const, sessionKey: "s" };

describe("one Slack adapter, several workspaces", () => {
  it("answers each workspace with its own token in its own channels, the team id as the account", async () => {
    h = await startSlack({ main: (t) => `echo: ${t.text}` }, { multiWorkspace: true });
    await h.send(slackEvent("channel-mention"));
    await h.send(
      slackEvent("channel-mention", {
        team: "T0GLOBEX1",
        event: { channel: "C0GLXGENL", user: "U0CAROL01" },
      }),
    );
    // Both DMs land in the main session (dmScope main), yet each reply goes back to its own workspace.
    await h.send(slackEvent("im-message"));
    await h.send(
      slackEvent("im-message", { team: "T0GLOBEX1", event: { channel: "D0CAROLDM", user: "U0CAROL01" } }),
    );
    await until(() => h?.slack.posted().length === 4, "four replies");
    const slack = h.slack;
    expect(
      slack
        .posted()
        .map((m) => `${m.teamId}/${m.channel}`)
        .sort(),
    ).toEqual(["T0ACME001/C0GENERAL", "T0ACME001/D0ALICEDM", "T0GLOBEX1/C0GLXGENL", "T0GLOBEX1/D0CAROLDM"]);
    for (const call of slack.callsOf("chat.postMessage")) {
      const team = slack.team(call.teamId as string);
      expect(team.channels.map((c) => c.id)).toContain(call.params.channel);
    }
    const rows = (await h.gateway.sessions.list()).sessions;
    expect(rows.find((r) => r.key === "agent:main:slack:channel:c0glxgenl")).toMatchObject({
      displayName: "Globex #general",
      deliveryContext: { to: "channel:C0GLXGENL", accountId: "t0globex1" },
    });
    const routes = await h.gateway.store.listRoutes("agent:main:main");
    expect(routes.map((r) => `${r.accountId}/${r.to}`).sort()).toEqual([
      "t0acme001/channel:D0ALICEDM",
      "t0globex1/channel:D0CAROLDM",
    ]);
  });

  it("never posts into one workspace with another's token", async () => {
    h = await startSlack({}, { multiWorkspace: true });
    const { adapter, slack } = h;
    // The Acme token cannot see Globex's channel: Slack says channel_not_found, a permanent failure.
    const crossed = await adapter
      .deliver({ channel: "slack", to: "channel:C0GLXGENL", accountId: "t0acme001" }, message, {
        idempotencyKey: "cross",
      })
      .catch((e: unknown) => e);
    expect(crossed).toMatchObject({ code: "invalid_params", details: { slackError: "channel_not_found" } });
    expect(slack.posted()).toHaveLength(0);
    // Without a workspace, an adapter serving several cannot know where to post.
    const unnamed = await adapter
      .deliver({ channel: "slack", to: "channel:C0GENERAL" }, message, { idempotencyKey: "none" })
      .catch((e: unknown) => e);
    expect(unnamed).toMatchObject({ code: "invalid_params", field: "accountId" });
    await adapter.deliver({ channel: "slack", to: "channel:C0GLXGENL", accountId: "t0globex1" }, message, {
      idempotencyKey: "ok",
    });
    expect(slack.posted()).toMatchObject([{ teamId: "T0GLOBEX1", channel: "C0GLXGENL" }]);
  });

  it("with a single bot token, refuses deliveries for another workspace before calling Slack", async () => {
    h = await startSlack({});
    const { adapter, slack } = h;
    const refused = await adapter
      .deliver({ channel: "slack", to: "channel:C0GLXGENL", accountId: "t0globex1" }, message, {
        idempotencyKey: "other",
      })
      .catch((e: unknown) => e);
    expect(refused).toMatchObject({ code: "invalid_params", field: "accountId" });
    expect(String((refused as Error).message)).toContain("belongs to workspace T0ACME001");
    expect(slack.callsOf("chat.postMessage")).toHaveLength(0);
    // A key-derived target (no account, lower-cased id) goes to the one workspace there is.
    await adapter.deliver({ channel: "slack", to: "channel:c0general" }, message, { idempotencyKey: "key" });
    expect(slack.posted()).toMatchObject([{ teamId: "T0ACME001", channel: "C0GENERAL" }]);
  });
});
