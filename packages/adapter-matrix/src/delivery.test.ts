import type { ScriptedAgent } from "@sessions/gateway";
import { matrixEvent, matrixThreadRelation } from "@sessions/testing";
import { createClient } from "matrix-js-sdk";
import { afterEach, describe, expect, it } from "vitest";
import { type E2E, type E2EOptions, startE2E, threadOf, until } from "./e2e.fixture.js";
import { createMatrixAdapter, MATRIX_MAX_MESSAGE_LENGTH } from "./index.js";

let e: E2E | undefined;
afterEach(async () => {
  await e?.close();
  e = undefined;
});

async function start(agents: Record<string, ScriptedAgent>, options?: E2EOptions): Promise<E2E> {
  e = await startE2E(agents, options);
  return e;
}

type Delivery = Awaited<ReturnType<E2E["gateway"]["deliveries"]["list"]>>["deliveries"][number];
async function delivery(x: E2E, check: (d: Delivery | undefined) => boolean): Promise<Delivery | undefined> {
  let found: Delivery | undefined;
  await until(async () => {
    found = (await x.gateway.deliveries.list()).deliveries.find((d) => d.kind === "reply");
    return check(found);
  }, "the delivery record");
  return found;
}

const spawner: ScriptedAgent = async (t) => {
  if (t.kind === "subagent") return "Result: three papers";
  if (t.kind === "subagent_announce") return "Result: 3 papers found\nNotes:\n- none";
  if (t.text.startsWith("research")) {
    await t.callTool("sessions_spawn", { task: "find papers", thread: true, label: "Papers run" });
    return "started a thread for it";
  }
  return "ok";
};

describe("Matrix delivery through real matrix-js-sdk against a fake homeserver", () => {
  it("opens a thread for sessions_spawn({ thread: true }) from a room message; the announce and the child's replies land there", async () => {
    const x = await start({ main: spawner });
    x.hs.post(x.hs.rooms.ops, matrixEvent("room-text", { content: { body: "research please" } }));
    const announce = () => x.messages().find((m) => String(m.content.body).startsWith("Status: success"));
    await until(() => announce() !== undefined, "the announce");
    const root = x.messages().find((m) => String(m.content.body).startsWith('Thread for "Papers run"'));
    expect(root).toMatchObject({ roomId: x.hs.rooms.ops });
    expect(threadOf(root)).toBeUndefined();
    expect(threadOf(announce())).toBe(root?.eventId);
    expect(x.messages().find((m) => m.content.body === "started a thread for it")).toMatchObject({
      roomId: x.hs.rooms.ops,
    });
    // A person writing in the new thread reaches the sub-agent's session; its reply stays in the thread.
    const before = x.messages().length;
    x.hs.post(
      x.hs.rooms.ops,
      matrixEvent("thread-reply", {
        content: { "m.relates_to": matrixThreadRelation(root?.eventId as string) },
      }),
    );
    await until(() => x.messages().length === before + 1, "the child's reply");
    expect(x.messages()[before]).toMatchObject({ content: { body: "ok" } });
    expect(threadOf(x.messages()[before])).toBe(root?.eventId);
    const [binding] = await x.gateway.store.listThreadBindings();
    expect(binding).toMatchObject({ channel: "matrix", threadId: root?.eventId, to: x.hs.rooms.ops });
    const history = await x.gateway.chat.history({ sessionKey: binding?.sessionKey as string });
    expect(history.messages.some((m) => m.content === "how is it going?")).toBe(true);

    // Redacting the thread root ends the binding.
    x.hs.post(x.hs.rooms.ops, {
      type: "m.room.redaction",
      sender: "@alice:fake.local",
      content: { redacts: root?.eventId as string },
    });
    await until(async () => (await x.gateway.store.listThreadBindings()).length === 0, "the unbinding");
  });

  it("binds the thread it was spawned from instead of opening another", async () => {
    const x = await start({ main: spawner });
    const root = x.hs.post(x.hs.rooms.ops, matrixEvent("other-bot-notice")).event_id;
    x.hs.post(
      x.hs.rooms.ops,
      matrixEvent("thread-reply", {
        content: { body: "research this", "m.relates_to": matrixThreadRelation(root) },
      }),
    );
    const announce = () => x.messages().find((m) => String(m.content.body).startsWith("Status: success"));
    await until(() => announce() !== undefined, "the announce");
    // Every message, intro and announce included, stayed in the one thread: no new root in the room.
    for (const m of x.messages()) expect(threadOf(m)).toBe(root);
    expect(x.messages().some((m) => String(m.content.body).startsWith("Working on this here"))).toBe(true);
    const [binding] = await x.gateway.store.listThreadBindings();
    expect(binding).toMatchObject({ threadId: root, sessionKey: expect.stringMatching(/:subagent:/) });
  });

  it("chunks long replies without losing text and records every event id as the receipt", async () => {
    const paragraph = "word ".repeat(1500).trim();
    const text = `${paragraph}\n\n${paragraph}\n\n${paragraph}`;
    const x = await start({ main: () => text });
    x.hs.post(x.hs.rooms.ops, matrixEvent("room-text"));
    const done = await delivery(x, (d) => d?.status === "delivered");
    const bodies = x.messages().map((m) => String(m.content.body));
    expect(bodies.length).toBe(3);
    for (const body of bodies) expect(body.length).toBeLessThanOrEqual(MATRIX_MAX_MESSAGE_LENGTH);
    expect(bodies.join(" ").replace(/\s+/g, " ")).toBe(text.replace(/\s+/g, " "));
    expect(done?.receipt).toEqual(x.messages().map((m) => m.eventId));
  });

  it("turns M_LIMIT_EXCEEDED into an outbox retry at retry_after_ms, without resending chunks already delivered", async () => {
    const x = await start({ main: () => `${"a".repeat(7990)}\n\n${"b".repeat(100)}` });
    // The homeserver takes the first chunk and rate-limits the second.
    x.hs.failNext(
      "send",
      1,
      { status: 429, errcode: "M_LIMIT_EXCEEDED", retry_after_ms: 7000 },
      { after: 1 },
    );
    x.hs.post(x.hs.rooms.ops, matrixEvent("room-text"));
    const queued = await delivery(x, (d) => d?.attempts === 1);
    expect(queued).toMatchObject({ status: "queued", lastError: expect.stringContaining("rate limit") });
    expect(x.hs.callsOf("send")).toHaveLength(2);
    // The retry is due when the homeserver said (the clock has not moved): short of it, nothing is tried.
    expect(queued?.nextAttemptAt).toBe(x.clock.now() + 7000);
    await x.clock.advance(6000);
    expect(x.hs.callsOf("send")).toHaveLength(2);
    await x.clock.advance(1500);
    const done = await delivery(x, (d) => d?.status === "delivered");
    const calls = x.hs.callsOf("send");
    expect(calls.map((c) => String(c.body.body)[0])).toEqual(["a", "b", "b"]);
    // The retry is the same transaction as the refused attempt.
    expect(calls[2]?.params.txnId).toBe(calls[1]?.params.txnId);
    expect(done?.receipt).toHaveLength(2);
  });

  it("also reads the Retry-After header of newer homeservers", async () => {
    const hs = (await start({})).hs;
    const adapter = createMatrixAdapter({
      client: createClient({ baseUrl: hs.baseUrl, accessToken: hs.accessToken, userId: hs.userId }),
    });
    hs.failNext("send", 1, { status: 429, errcode: "M_LIMIT_EXCEEDED", retryAfterSeconds: 12 });
    const error = await adapter
      .deliver(
        { channel: "matrix", to: hs.rooms.ops },
        { text: "x", kind: "reply", sessionKey: "s" },
        { idempotencyKey: "h" },
      )
      .catch((err: unknown) => err);
    expect(error).toMatchObject({ code: "rate_limited", retryAfterMs: 12_000 });
  });

  it("records a refused delivery as failed with the homeserver's reason, and refuses encrypted rooms", async () => {
    const x = await start({ main: () => "hi" });
    x.hs.failNext("send", 1, {
      status: 403,
      errcode: "M_FORBIDDEN",
      error: "You are not allowed to send here",
    });
    x.hs.post(x.hs.rooms.ops, matrixEvent("room-text"));
    const failed = await delivery(x, (d) => d?.status === "failed");
    expect(failed?.lastError).toContain("M_FORBIDDEN");
    expect(failed?.attempts).toBe(1);

    const secret = x.hs.createRoom({
      name: "Secret",
      members: ["@alice:fake.local", x.hs.userId],
      encrypted: true,
    });
    await x.joined(secret);
    const error = await x.adapter
      .deliver(
        { channel: "matrix", to: secret },
        { text: "x", kind: "announce", sessionKey: "s" },
        { idempotencyKey: "e2e" },
      )
      .catch((err: unknown) => err);
    expect(error).toMatchObject({ code: "invalid_params", field: "to" });
    expect(x.hs.sent().filter((m) => m.roomId === secret)).toHaveLength(0);
  });

  it("refuses encrypted rooms on a gateway that does not run the sync, asking the homeserver once per room", async () => {
    const hs = (await start({})).hs;
    const secret = hs.createRoom({
      name: "Secret",
      members: ["@alice:fake.local", hs.userId],
      encrypted: true,
    });
    // A standby gateway's adapter: its client never synced, so it knows no room.
    const standby = createMatrixAdapter({
      client: createClient({ baseUrl: hs.baseUrl, accessToken: hs.accessToken, userId: hs.userId }),
    });
    const deliver = (to: string, key: string) =>
      standby
        .deliver(
          { channel: "matrix", to },
          { text: "x", kind: "announce", sessionKey: "s" },
          { idempotencyKey: key },
        )
        .catch((err: unknown) => err);
    expect(await deliver(secret, "e1")).toMatchObject({ code: "invalid_params", field: "to" });
    expect(await deliver(secret, "e2")).toMatchObject({ code: "invalid_params", field: "to" });
    expect(hs.sent().filter((m) => m.roomId === secret)).toHaveLength(0);
    expect(await deliver(hs.rooms.ops, "c1")).toMatchObject({ messageIds: [expect.any(String)] });
    expect(await deliver(hs.rooms.ops, "c2")).toMatchObject({ messageIds: [expect.any(String)] });
    expect(hs.callsOf("state").map((c) => [c.params.roomId, c.params.eventType])).toEqual([
      [secret, "m.room.encryption"],
      [hs.rooms.ops, "m.room.encryption"],
    ]);
    // A homeserver that fails the question fails the delivery as it would fail the send: retried later.
    hs.failNext("state", 1, { status: 502, errcode: "M_UNKNOWN", error: "Bad gateway" });
    const other = hs.createRoom({ name: "Other", members: ["@alice:fake.local", hs.userId] });
    expect(await deliver(other, "o1")).toMatchObject({ code: "unavailable" });
    expect(await deliver(other, "o2")).toMatchObject({ messageIds: [expect.any(String)] });
  });

  it("sends an outbox item once even when a restarted adapter delivers it again (same transaction ids)", async () => {
    const hs = (await start({})).hs;
    const target = { channel: "matrix", to: `group:${hs.rooms.ops}` };
    const message = { text: `${"x".repeat(8500)}`, kind: "announce" as const, sessionKey: "s" };
    const first = createMatrixAdapter({
      client: createClient({ baseUrl: hs.baseUrl, accessToken: hs.accessToken, userId: hs.userId }),
    });
    const receipt = await first.deliver(target, message, { idempotencyKey: "announce:1" });
    const second = createMatrixAdapter({
      client: createClient({ baseUrl: hs.baseUrl, accessToken: hs.accessToken, userId: hs.userId }),
    });
    const again = await second.deliver(target, message, { idempotencyKey: "announce:1" });
    expect(again.messageIds).toEqual(receipt.messageIds);
    expect(hs.sent()).toHaveLength(2);
    expect(hs.callsOf("send")).toHaveLength(4);
  });

  it("rejects targets that are not rooms and thread ids that are not events, naming the field", async () => {
    const hs = (await start({})).hs;
    const adapter = createMatrixAdapter({
      client: createClient({ baseUrl: hs.baseUrl, accessToken: hs.accessToken, userId: hs.userId }),
    });
    const send = (to: string, threadId?: string) =>
      adapter
        .deliver(
          { channel: "matrix", to, ...(threadId === undefined ? {} : { threadId }) },
          { text: "x", kind: "reply", sessionKey: "s" },
          { idempotencyKey: to },
        )
        .catch((err: unknown) => err);
    expect(await send("@alice:fake.local")).toMatchObject({ code: "invalid_params", field: "to" });
    expect(await send(hs.rooms.ops, "not-an-event")).toMatchObject({
      code: "invalid_params",
      field: "threadId",
    });
    expect(() => createMatrixAdapter({ client: createClient({ baseUrl: hs.baseUrl }) })).toThrow(/user id/);
    expect(() => createMatrixAdapter({ client: {} as never })).toThrow(/client/);
  });
});
