import type { ScriptedAgent } from "@sessions/gateway";
import { matrixEvent, matrixThreadRelation } from "@sessions/testing";
import { afterEach, describe, expect, it } from "vitest";
import { type E2E, type E2EOptions, startE2E, threadOf, until } from "./e2e.fixture.js";

let e: E2E | undefined;
afterEach(async () => {
  await e?.close();
  e = undefined;
});

async function start(agents: Record<string, ScriptedAgent>, options?: E2EOptions): Promise<E2E> {
  e = await startE2E(agents, options);
  return e;
}

const echo = { main: (t: { text: string }) => `echo: ${t.text}` };
const keys = async (x: E2E) => (await x.gateway.sessions.list()).sessions.map((s) => s.key);

describe("Matrix adapter through real matrix-js-sdk against a fake homeserver", () => {
  it("answers a room message in the room, keeps the room id's case in the key, types, and ignores its own echo", async () => {
    // m.text replies (not the default m.notice): only the sender check keeps the bot from answering itself.
    const x = await start(echo, { adapter: { msgtype: "m.text" } });
    x.hs.post(x.hs.rooms.ops, matrixEvent("room-text"));
    await until(() => x.messages().length === 1, "the reply");
    expect(x.messages()[0]).toMatchObject({
      roomId: "!OpsTeamRoomQz:fake.local",
      content: { msgtype: "m.text", body: "echo: status please", "m.mentions": {} },
    });
    expect(x.messages()[0]?.content).not.toHaveProperty("m.relates_to");
    expect(x.hs.callsOf("typing")[0]).toMatchObject({
      params: { roomId: x.hs.rooms.ops, userId: x.hs.userId },
      body: { typing: true },
    });
    const [row] = (await x.gateway.sessions.list()).sessions;
    expect(row).toMatchObject({
      key: "agent:main:matrix:group:!OpsTeamRoomQz:fake.local",
      displayName: "Ops Team",
      channel: "matrix",
    });
    // The reply comes back through /sync as the bot's own event: it must not start another run. The room's next
    // message reaches the gateway after it (one room's events go in timeline order, one session's runs in turn), so
    // once that message is answered, a run of the echo would be in the history and its reply posted before.
    x.hs.post(x.hs.rooms.ops, matrixEvent("room-text", { content: { body: "and now?" } }));
    await until(() => x.messages().length === 2, "the reply to the next message");
    expect(x.messages().map((m) => m.content.body)).toEqual(["echo: status please", "echo: and now?"]);
    expect(
      (await x.gateway.chat.history({ sessionKey: row?.key as string })).messages.map((m) => m.content),
    ).toEqual(["status please", "echo: status please", "and now?", "echo: and now?"]);
  });

  it("maps m.direct rooms and unnamed two-member rooms to direct chats, named or bigger rooms to groups", async () => {
    const x = await start(echo, { gateway: { config: { session: { dmScope: "per-channel-peer" } } } });
    x.hs.post(x.hs.rooms.dm, matrixEvent("dm-text"));
    await until(() => x.messages().length === 1, "the DM reply");
    expect(x.messages()[0]).toMatchObject({
      roomId: x.hs.rooms.dm,
      content: { msgtype: "m.notice", body: "echo: hello bot" },
    });
    expect(await keys(x)).toEqual(["agent:main:matrix:direct:@alice:fake.local"]);

    // Not in m.direct, but only Bob and the bot and no name: a direct chat too (same person, same session).
    const bobRoom = x.hs.createRoom({ members: ["@bob:fake.local", x.hs.userId] });
    // Named, two members: a group room that happens to be small.
    const named = x.hs.createRoom({ name: "Release", members: ["@bob:fake.local", x.hs.userId] });
    await x.joined(bobRoom);
    await x.joined(named);
    x.hs.post(
      bobRoom,
      matrixEvent("room-text", { sender: "@bob:fake.local", content: { body: "hi from bob" } }),
    );
    await until(() => x.messages().length === 2, "the two-member reply");
    x.hs.post(named, matrixEvent("room-text", { sender: "@bob:fake.local", content: { body: "release?" } }));
    await until(() => x.messages().length === 3, "the named-room reply");
    expect(x.messages().map((m) => m.roomId)).toEqual([x.hs.rooms.dm, bobRoom, named]);
    expect((await keys(x)).sort()).toEqual(
      [
        "agent:main:matrix:direct:@alice:fake.local",
        "agent:main:matrix:direct:@bob:fake.local",
        `agent:main:matrix:group:${named}`,
      ].sort(),
    );
    const bob = (await x.gateway.sessions.list()).sessions.find((s) => s.key.endsWith("@bob:fake.local"));
    expect(bob?.displayName).toBe("Bob");
  });

  it("gives a thread its own session and replies into the thread, root id case intact", async () => {
    const x = await start(echo);
    const root = x.hs.post(x.hs.rooms.ops, matrixEvent("other-bot-notice")).event_id;
    x.hs.post(
      x.hs.rooms.ops,
      matrixEvent("thread-reply", { content: { "m.relates_to": matrixThreadRelation(root) } }),
    );
    await until(() => x.messages().length === 1, "the thread reply");
    expect(threadOf(x.messages()[0])).toBe(root);
    expect(x.messages()[0]?.content["m.relates_to"]).toMatchObject({ is_falling_back: true });
    expect(await keys(x)).toEqual([
      `agent:main:matrix:group:!OpsTeamRoomQz:fake.local:thread:${root.toLowerCase()}`,
    ]);
    const [row] = (await x.gateway.sessions.list()).sessions;
    expect(row?.deliveryContext).toMatchObject({ to: x.hs.rooms.ops });
  });

  it("answers replies without the quoted fallback, emotes and captions; ignores edits, notices, files and encryption", async () => {
    const logged: string[] = [];
    const logger = {
      debug: (m: string) => logged.push(`debug ${m}`),
      info: (m: string) => logged.push(`info ${m}`),
      warn: (m: string) => logged.push(`warn ${m}`),
      error: (m: string) => logged.push(`error ${m}`),
      child: () => logger,
    };
    const x = await start(echo, { adapter: { logger } });
    const encrypted = x.hs.createRoom({
      name: "Secret",
      members: ["@alice:fake.local", x.hs.userId],
      encrypted: true,
    });
    await x.joined(encrypted);
    // Ignored in the room before the reply: had one been answered, its answer would come first.
    for (const name of ["edit", "other-bot-notice", "image"] as const)
      x.hs.post(x.hs.rooms.ops, matrixEvent(name));
    const secret = [
      x.hs.post(encrypted, matrixEvent("encrypted")),
      x.hs.post(encrypted, matrixEvent("encrypted")),
    ];
    x.hs.post(x.hs.rooms.ops, matrixEvent("reply"));
    await until(() => x.messages().length === 1, "the answer to the reply");
    expect(x.messages()[0]?.content.body).toBe("echo: thanks, and the logs?");
    x.hs.post(x.hs.rooms.ops, matrixEvent("emote"));
    x.hs.post(
      x.hs.rooms.ops,
      matrixEvent("image", { content: { body: "what is wrong here?", filename: "screenshot.png" } }),
    );
    await until(() => x.messages().length === 3, "the emote and caption answers");
    // The adapter decides on an encrypted event when the client hands it over (another room: no order to lean on).
    await x.handedOver(...secret.map((e) => e.event_id));
    expect(x.messages().map((m) => m.content.body)).toEqual([
      "echo: thanks, and the logs?",
      "echo: waves at the bot",
      "echo: what is wrong here?",
    ]);
    expect(logged).toContain("debug ignoring an edit: the original message already started its run");
    expect(logged).toContain("debug ignoring a message: notice");
    expect(logged.filter((l) => l.startsWith("warn ignoring an end-to-end encrypted room"))).toHaveLength(1);
  });

  it("does not answer history from before it started", async () => {
    const x = await start(echo, {
      before: (hs) => {
        hs.post(hs.rooms.ops, matrixEvent("room-text", { content: { body: "old news" } }));
      },
    });
    // The history came with the first sync, before `startE2E` returned; in the same room, an answer to it would
    // come before the answer to the new message.
    x.hs.post(x.hs.rooms.ops, matrixEvent("room-text", { content: { body: "new news" } }));
    await until(() => x.messages().length === 1, "the reply to the new message");
    expect(x.messages().map((m) => m.content.body)).toEqual(["echo: new news"]);
    const [row] = (await x.gateway.sessions.list()).sessions;
    expect((await x.gateway.chat.history({ sessionKey: row?.key as string })).messages).toHaveLength(2);
  });

  it("joins rooms it is invited to when autoJoin says so, then answers there", async () => {
    const x = await start(echo, { adapter: { autoJoin: ({ inviter }) => inviter === "@alice:fake.local" } });
    const room = x.hs.createRoom({ name: "Planning", members: ["@alice:fake.local", "@bob:fake.local"] });
    const other = x.hs.createRoom({ name: "Spam", members: ["@bob:fake.local"] });
    x.hs.inviteBot(other, "@bob:fake.local");
    x.hs.inviteBot(room, "@alice:fake.local");
    await until(() => x.hs.callsOf("join").length === 1, "the join");
    expect(x.hs.callsOf("join")[0]?.params.roomId).toBe(room);
    await x.joined(room);
    x.hs.post(room, matrixEvent("room-text", { content: { body: "welcome" } }));
    await until(() => x.messages().length === 1, "the reply in the joined room");
    expect(x.messages()[0]).toMatchObject({ roomId: room, content: { body: "echo: welcome" } });
  });

  it("lets only owners run /send", async () => {
    const x = await start(echo, { adapter: { ownerIds: ["@alice:fake.local"] } });
    x.hs.post(
      x.hs.rooms.ops,
      matrixEvent("room-text", { sender: "@bob:fake.local", content: { body: "/send off" } }),
    );
    await until(() => x.messages().length === 1, "the refusal");
    expect(x.messages()[0]?.content.body).toBe("Only the owner can change this session's send policy.");
    x.hs.post(x.hs.rooms.ops, matrixEvent("room-text", { content: { body: "/send off" } }));
    await until(() => x.messages().length === 2, "the confirmation");
    expect(x.messages()[1]?.content.body).toBe("Send policy: off for this session.");
  });
});
