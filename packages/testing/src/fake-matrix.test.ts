import { afterEach, describe, expect, it } from "vitest";
import { eventually } from "./eventually.js";
import { createFakeMatrixHomeserver, type FakeMatrixHomeserver } from "./fake-matrix.js";
import { matrixEvent, matrixThreadRelation } from "./matrix-fixtures.js";

let hs: FakeMatrixHomeserver | undefined;
afterEach(async () => {
  await hs?.close();
  hs = undefined;
});

// biome-ignore lint/suspicious/noExplicitAny: sync responses are deep JSON the assertions walk freely.
type Json = Record<string, any>;

async function call(
  server: FakeMatrixHomeserver,
  method: string,
  path: string,
  body?: unknown,
  token = server.accessToken,
): Promise<{ status: number; json: Json; headers: Headers }> {
  const res = await fetch(`${server.baseUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, json: (await res.json()) as Json, headers: res.headers };
}

describe("fake Matrix homeserver (client-server API over HTTP)", () => {
  it("answers /versions without a token, whoami with one, refuses a wrong token and records unknown endpoints", async () => {
    hs = await createFakeMatrixHomeserver();
    const versions = (await fetch(`${hs.baseUrl}/_matrix/client/versions`).then((r) => r.json())) as Json;
    expect(versions.versions).toContain("v1.11");
    expect((await call(hs, "GET", "/_matrix/client/v3/account/whoami")).json).toMatchObject({
      user_id: "@sessions-bot:fake.local",
    });
    expect(await call(hs, "GET", "/_matrix/client/v3/account/whoami", undefined, "nope")).toMatchObject({
      status: 401,
      json: { errcode: "M_UNKNOWN_TOKEN" },
    });
    expect(await call(hs, "GET", "/_matrix/client/v3/rooms/x/hierarchy")).toMatchObject({
      status: 404,
      json: { errcode: "M_UNRECOGNIZED" },
    });
    expect(hs.unhandled).toEqual(["GET /_matrix/client/v3/rooms/x/hierarchy"]);
  });

  it("serves an initial sync with both rooms, their state and m.direct, then long-polls for what is new", async () => {
    hs = await createFakeMatrixHomeserver();
    const first = (await call(hs, "GET", "/_matrix/client/v3/sync")).json;
    const ops = first.rooms.join[hs.rooms.ops];
    const all = [...ops.state.events, ...ops.timeline.events];
    expect(all.find((e: Json) => e.type === "m.room.name").content.name).toBe("Ops Team");
    expect(ops.summary["m.joined_member_count"]).toBe(3);
    expect(first.account_data.events).toEqual([
      { type: "m.direct", content: { "@alice:fake.local": [hs.rooms.dm] } },
    ]);

    const server = hs;
    const next = call(server, "GET", `/_matrix/client/v3/sync?since=${first.next_batch}&timeout=30000`);
    await eventually(() => server.waitingSyncs() === 1, "the sync held open");
    const root = server.post(server.rooms.ops, matrixEvent("room-text"));
    server.post(
      server.rooms.ops,
      matrixEvent("thread-reply", { content: { "m.relates_to": matrixThreadRelation(root.event_id) } }),
    );
    const incremental = (await next).json;
    const events = incremental.rooms.join[server.rooms.ops].timeline.events;
    expect(events.length).toBeGreaterThanOrEqual(1);
    expect(events[0]).toMatchObject({ event_id: root.event_id, sender: "@alice:fake.local" });
    expect(incremental.rooms.join[server.rooms.dm]).toBeUndefined();
    expect(incremental.account_data.events).toEqual([]);
  });

  it("makes sends idempotent per transaction id and echoes the bot's own transaction id back", async () => {
    hs = await createFakeMatrixHomeserver();
    const { next_batch } = (await call(hs, "GET", "/_matrix/client/v3/sync")).json;
    const path = `/_matrix/client/v3/rooms/${encodeURIComponent(hs.rooms.ops)}/send/m.room.message/t1`;
    const a = await call(hs, "PUT", path, { msgtype: "m.text", body: "once" });
    const b = await call(hs, "PUT", path, { msgtype: "m.text", body: "once" });
    expect(a.json.event_id).toMatch(/^\$/);
    expect(b.json.event_id).toBe(a.json.event_id);
    expect(hs.sent()).toHaveLength(1);
    expect(hs.callsOf("send")).toHaveLength(2);
    const echo = (await call(hs, "GET", `/_matrix/client/v3/sync?since=${next_batch}`)).json;
    expect(echo.rooms.join[hs.rooms.ops].timeline.events[0].unsigned.transaction_id).toBe("t1");
    const outside = hs.createRoom({ name: "Elsewhere", members: ["@bob:fake.local"] });
    expect(
      await call(
        hs,
        "PUT",
        `/_matrix/client/v3/rooms/${encodeURIComponent(outside)}/send/m.room.message/t2`,
        {},
      ),
    ).toMatchObject({ status: 403, json: { errcode: "M_FORBIDDEN" } });
  });

  it("shows the bot's messages with their latest m.replace edit applied, and redacted ones gone", async () => {
    hs = await createFakeMatrixHomeserver();
    const room = encodeURIComponent(hs.rooms.ops);
    const send = (txn: string, content: Record<string, unknown>) =>
      call(
        hs as FakeMatrixHomeserver,
        "PUT",
        `/_matrix/client/v3/rooms/${room}/send/m.room.message/${txn}`,
        content,
      );
    const first = (await send("a", { msgtype: "m.text", body: "thinking" })).json.event_id as string;
    const second = (await send("b", { msgtype: "m.text", body: "second" })).json.event_id as string;
    const edit = (txn: string, target: string, body: string) =>
      send(txn, {
        msgtype: "m.text",
        body: `* ${body}`,
        "m.new_content": { msgtype: "m.text", body },
        "m.relates_to": { rel_type: "m.replace", event_id: target },
      });
    await edit("e1", first, "thinking… almost");
    await edit("e2", first, "thinking… done");
    expect(hs.shown(hs.rooms.ops)).toEqual([
      { eventId: first, body: "thinking… done", edits: 2 },
      { eventId: second, body: "second", edits: 0 },
    ]);
    const redact = await call(
      hs,
      "PUT",
      `/_matrix/client/v3/rooms/${room}/redact/${encodeURIComponent(second)}/r1`,
      { reason: "superseded" },
    );
    expect(redact.json.event_id).toMatch(/^\$/);
    expect(hs.shown(hs.rooms.ops).map((message) => message.eventId)).toEqual([first]);
    expect(
      (await call(hs, "PUT", `/_matrix/client/v3/rooms/${room}/redact/${encodeURIComponent("$nope")}/r2`, {}))
        .status,
    ).toBe(404);
    expect(hs.shown(hs.rooms.dm)).toEqual([]);
  });

  it("fails calls on demand, with retry_after_ms and a Retry-After header", async () => {
    hs = await createFakeMatrixHomeserver();
    hs.failNext("send", 1, {
      status: 429,
      errcode: "M_LIMIT_EXCEEDED",
      retry_after_ms: 2000,
      retryAfterSeconds: 2,
    });
    const path = `/_matrix/client/v3/rooms/${encodeURIComponent(hs.rooms.dm)}/send/m.room.message/t1`;
    const limited = await call(hs, "PUT", path, { body: "x" });
    expect(limited).toMatchObject({
      status: 429,
      json: { errcode: "M_LIMIT_EXCEEDED", retry_after_ms: 2000 },
    });
    expect(limited.headers.get("retry-after")).toBe("2");
    expect((await call(hs, "PUT", path, { body: "x" })).status).toBe(200);
  });

  it("shows an invite in the next sync and the room with its state once the bot joins", async () => {
    hs = await createFakeMatrixHomeserver();
    const room = hs.createRoom({ name: "Planning", members: ["@alice:fake.local"] });
    const { next_batch } = (await call(hs, "GET", "/_matrix/client/v3/sync")).json;
    hs.inviteBot(room, "@alice:fake.local");
    const invited = (await call(hs, "GET", `/_matrix/client/v3/sync?since=${next_batch}`)).json;
    const stripped = invited.rooms.invite[room].invite_state.events;
    expect(stripped.find((e: Json) => e.type === "m.room.name").content.name).toBe("Planning");
    expect(stripped.find((e: Json) => e.state_key === "@sessions-bot:fake.local").content.membership).toBe(
      "invite",
    );
    expect((await call(hs, "POST", `/_matrix/client/v3/join/${encodeURIComponent(room)}`, {})).json).toEqual({
      room_id: room,
    });
    const joined = (await call(hs, "GET", `/_matrix/client/v3/sync?since=${invited.next_batch}`)).json;
    const state = [...joined.rooms.join[room].state.events, ...joined.rooms.join[room].timeline.events];
    expect(state.some((e: Json) => e.type === "m.room.create")).toBe(true);
    const other = hs.createRoom({ members: ["@bob:fake.local"] });
    expect(
      (await call(hs, "POST", `/_matrix/client/v3/rooms/${encodeURIComponent(other)}/join`, {})).status,
    ).toBe(403);
  });
});
