import { afterEach, describe, expect, it } from "vitest";
import { eventually } from "./eventually.js";
import { createFakeTelegramApi, type FakeTelegramApi } from "./fake-telegram.js";
import { telegramUpdate } from "./telegram-fixtures.js";

let api: FakeTelegramApi;
afterEach(() => api?.close());

async function call(method: string, params: Record<string, unknown> = {}, token = api.token) {
  const res = await fetch(`${api.apiRoot}/bot${token}/${method}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(params),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

describe("createFakeTelegramApi", () => {
  it("answers Bot API calls and records them", async () => {
    api = await createFakeTelegramApi();
    expect((await call("getMe")).body).toMatchObject({
      ok: true,
      result: { is_bot: true, username: "sessions_test_bot" },
    });
    const sent = await call("sendMessage", { chat_id: -100, text: "hi", message_thread_id: 5 });
    expect(sent.body).toMatchObject({
      ok: true,
      result: { message_id: 1000, chat: { id: -100 }, text: "hi", message_thread_id: 5 },
    });
    expect((await call("createForumTopic", { chat_id: -100900800700, name: "t" })).body).toMatchObject({
      result: { message_thread_id: 500 },
    });
    expect(await call("createForumTopic", { chat_id: -100, name: "t" })).toMatchObject({
      status: 400,
      body: { description: "Bad Request: the chat is not a forum" },
    });
    expect(api.callsOf("sendMessage")).toEqual([
      { method: "sendMessage", params: { chat_id: -100, text: "hi", message_thread_id: 5 }, status: 200 },
    ]);
    expect(api.callsOf("createForumTopic").map((c) => c.status)).toEqual([200, 400]);
  });

  it("keeps the bot's messages as each chat shows them: sent, edited, deleted", async () => {
    api = await createFakeTelegramApi();
    const sent = await call("sendMessage", { chat_id: -100, text: "thinking", message_thread_id: 7 });
    const id = (sent.body.result as { message_id: number }).message_id;
    await call("sendMessage", { chat_id: 42, text: "elsewhere" });
    expect(
      await call("editMessageText", { chat_id: -100, message_id: id, text: "thinking… done" }),
    ).toMatchObject({
      status: 200,
      body: { ok: true, result: { message_id: id, text: "thinking… done", edit_date: expect.any(Number) } },
    });
    // Telegram refuses an edit that changes nothing, and one of a message it does not have.
    expect(
      await call("editMessageText", { chat_id: -100, message_id: id, text: "thinking… done" }),
    ).toMatchObject({
      status: 400,
      body: { ok: false, error_code: 400, description: expect.stringContaining("message is not modified") },
    });
    expect(await call("editMessageText", { chat_id: -100, message_id: 999, text: "x" })).toMatchObject({
      status: 400,
      body: { description: "Bad Request: message to edit not found" },
    });
    expect(
      await call("editMessageText", { chat_id: -100, message_id: id, text: "x".repeat(4097) }),
    ).toMatchObject({
      status: 400,
      body: { description: "Bad Request: message is too long" },
    });
    expect(api.messages(-100)).toEqual([{ messageId: id, text: "thinking… done", threadId: 7, edits: 1 }]);
    expect(api.messages("42").map((message) => message.text)).toEqual(["elsewhere"]);
    expect((await call("deleteMessage", { chat_id: -100, message_id: id })).body).toEqual({
      ok: true,
      result: true,
    });
    expect((await call("deleteMessage", { chat_id: -100, message_id: id })).status).toBe(400);
    expect(api.messages(-100)).toEqual([]);
    expect((await call("sendMessage", { chat_id: 1, text: "" })).body).toMatchObject({
      description: "Bad Request: message text is empty",
    });
  });

  it("streams drafts to private chats only, keeping each draft's latest text", async () => {
    api = await createFakeTelegramApi();
    expect((await call("sendMessageDraft", { chat_id: 42, draft_id: 9, text: "Hel" })).body).toEqual({
      ok: true,
      result: true,
    });
    await call("sendMessageDraft", { chat_id: 42, draft_id: 9, text: "Hello" });
    expect(api.drafts(42)).toEqual(new Map([[9, "Hello"]]));
    expect((await call("sendMessageDraft", { chat_id: -100, draft_id: 9, text: "x" })).status).toBe(400);
    expect((await call("sendMessageDraft", { chat_id: 42, draft_id: 0, text: "x" })).status).toBe(400);
    // A draft is not a message: the chat shows none.
    expect(api.messages(42)).toEqual([]);
  });

  it("fails on demand with Telegram's error shape, and rejects unknown methods and tokens", async () => {
    api = await createFakeTelegramApi();
    api.failNext("sendMessage", 1);
    expect(await call("sendMessage", { chat_id: 1, text: "x" })).toMatchObject({
      status: 429,
      body: { ok: false, error_code: 429, parameters: { retry_after: 1 } },
    });
    expect((await call("sendMessage", { chat_id: 1, text: "x" })).body.ok).toBe(true);
    expect((await call("sendDice")).status).toBe(404);
    expect((await call("getMe", {}, "wrong")).status).toBe(404);
  });

  it("holds the next call of a method once it arrived, until released, then serves it", async () => {
    api = await createFakeTelegramApi();
    const sent = await call("sendMessage", { chat_id: -100, text: "one" });
    const held = api.holdNext("editMessageText");
    const message_id = (sent.body.result as { message_id: number }).message_id;
    const editing = call("editMessageText", { chat_id: -100, message_id, text: "two" });
    const arrived = await held.arrived;
    expect(arrived).toMatchObject({ method: "editMessageText", params: { text: "two" } });
    // Arrived, recorded, not served: the chat still shows the old text and the caller still waits.
    expect(api.messages(-100).map((m) => m.text)).toEqual(["one"]);
    let answered = false;
    void editing.then(() => {
      answered = true;
    });
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(answered).toBe(false);
    held.release();
    expect((await editing).status).toBe(200);
    expect(api.messages(-100).map((m) => m.text)).toEqual(["two"]);
    // One call only: the next one is served at once.
    expect((await call("editMessageText", { chat_id: -100, message_id, text: "three" })).status).toBe(200);
  });

  it("long-polls getUpdates until an update is pushed, honouring offset", async () => {
    api = await createFakeTelegramApi();
    const polling = call("getUpdates", { offset: 0, timeout: 10 });
    await eventually(() => api.waitingPolls() === 1, "the poll held open");
    api.pushUpdate(telegramUpdate("private-text"));
    const first = (await polling).body.result as { update_id: number }[];
    expect(first).toHaveLength(1);
    const next = await call("getUpdates", { offset: (first[0]?.update_id as number) + 1, timeout: 0 });
    expect(next.body.result).toEqual([]);
  });

  it("hands out recorded updates as fresh copies", () => {
    const a = telegramUpdate("forum-topic-text", { text: "changed" });
    const b = telegramUpdate("forum-topic-text");
    expect(a.update_id).not.toBe(b.update_id);
    expect((a.message as { text: string }).text).toBe("changed");
    expect((b.message as { text: string; message_thread_id: number }).message_thread_id).toBe(77);
  });
});
