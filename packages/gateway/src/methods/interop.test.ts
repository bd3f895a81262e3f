import { chatMessageText, isTerminalChatState } from "@sessions/core";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import type { GatewayEvent } from "../gateway.js";
import type { ScriptedAgent } from "../runner/scripted.js";
import { cleanupDirs, type Harness, harness, STORE_KINDS } from "../test-kit.js";

/** The wire methods' OpenClaw-compatible behaviour (PROTOCOL.md, interop), on both stores. */
const echo: ScriptedAgent = (turn) => `echo: ${turn.text}`;

afterAll(cleanupDirs);

describe.each(STORE_KINDS)("OpenClaw-compatible method results on the %s store", (kind) => {
  let h: Harness;
  afterEach(async () => h?.close());

  it("answers chat.history on a session that does not exist with an empty page, not an error", async () => {
    h = await harness(kind, { main: echo });
    const page = await h.gateway.chat.history({ sessionKey: "nobody-here" });
    expect(page).toEqual({
      sessionKey: "agent:main:nobody-here",
      messages: [],
      totalMessages: 0,
      hasMore: false,
      nextOffset: null,
      nextCursor: null,
    });
    // Asking does not create the session.
    expect((await h.gateway.sessions.list({})).sessions).toEqual([]);
    // Invalid keys are still refused, naming the field.
    await expect(h.gateway.chat.history({ sessionKey: " " })).rejects.toMatchObject({
      code: "invalid_params",
      field: "sessionKey",
    });
  });

  it("gives history messages OpenClaw's timestamp and __openclaw.seq beside ts and seq", async () => {
    h = await harness(kind, { main: echo });
    const { runId } = await h.gateway.chat.send({ sessionKey: "main", message: "hi", idempotencyKey: "h1" });
    await h.gateway.agentWait({ runId, timeoutMs: 5000 });
    const { messages } = await h.gateway.chat.history({ sessionKey: "main" });
    expect(messages).toHaveLength(2);
    for (const message of messages) {
      expect(message.timestamp).toBe(message.ts);
      expect(message.__openclaw).toEqual({ seq: message.seq, runId });
    }
    expect(messages.map((m) => m.seq)).toEqual([1, 2]);
  });

  it("uses chat.send's idempotency key as the run id, and a fresh id when a run already has that id", async () => {
    h = await harness(kind, { main: echo });
    const first = await h.gateway.chat.send({ sessionKey: "main", message: "a", idempotencyKey: " key-1 " });
    expect(first).toEqual({ runId: "key-1", status: "started" });
    expect(await h.gateway.agentWait({ runId: "key-1", timeoutMs: 5000 })).toMatchObject({ status: "ok" });
    // The same key again reports the same run.
    expect(await h.gateway.chat.send({ sessionKey: "main", message: "a", idempotencyKey: "key-1" })).toEqual({
      runId: "key-1",
      status: "ok",
    });
    // An `agent` run has a generated id; a chat.send whose key equals it gets a run of its own.
    const agentRun = await h.gateway.agent({ message: "b", idempotencyKey: "agent-key" });
    await h.gateway.agentWait({ runId: agentRun.runId, timeoutMs: 5000 });
    const clash = await h.gateway.chat.send({
      sessionKey: "main",
      message: "c",
      idempotencyKey: agentRun.runId,
    });
    expect(clash.status).toBe("started");
    expect(clash.runId).not.toBe(agentRun.runId);
    expect(await h.gateway.agentWait({ runId: clash.runId, timeoutMs: 5000 })).toMatchObject({
      status: "ok",
      reply: "echo: c",
    });
    expect(await h.gateway.agentWait({ runId: agentRun.runId, timeoutMs: 0 })).toMatchObject({
      reply: "echo: b",
    });
  });

  it("pages sessions.list 100 rows at a time by default", async () => {
    h = await harness(kind, { main: echo });
    for (let i = 0; i < 101; i++) {
      await h.store.putEntry({
        key: `agent:main:s${i}`,
        sessionId: `id-${i}`,
        agentId: "main",
        createdAt: i,
        updatedAt: i,
        kind: "other",
      });
    }
    const page = await h.gateway.sessions.list({});
    expect(page).toMatchObject({ count: 100, hasMore: true, nextOffset: 100 });
    const rest = await h.gateway.sessions.list({ offset: 100 });
    expect(rest).toMatchObject({ count: 1, hasMore: false, nextOffset: null });
  });

  it("reports the list row's kind from sessions.patch, for direct and group sessions", async () => {
    h = await harness(kind, { main: echo });
    await h.store.putEntry({
      key: "agent:main:chat:group:dev",
      sessionId: "g",
      agentId: "main",
      createdAt: 1,
      updatedAt: 1,
      kind: "group",
      chatType: "group",
    });
    await h.store.putEntry({
      key: "agent:main:main",
      sessionId: "m",
      agentId: "main",
      createdAt: 2,
      updatedAt: 2,
      kind: "main",
      chatType: "direct",
    });
    const rows = new Map((await h.gateway.sessions.list({})).sessions.map((r) => [r.key, r.kind]));
    for (const key of ["agent:main:chat:group:dev", "agent:main:main"]) {
      const { entry } = await h.gateway.sessions.patch({ key, label: `label ${key}` });
      expect(entry.kind).toBe(rows.get(key));
      expect(entry).toMatchObject({ key, label: `label ${key}` });
    }
    expect([...rows.values()].sort()).toEqual(["direct", "group"]);
  });

  it("sends the final chat event's reply as { role, content: [{ type: text, text }] }", async () => {
    h = await harness(kind, { main: echo });
    const events: GatewayEvent[] = [];
    const off = h.gateway.subscribe((event) => events.push(event));
    const { runId } = await h.gateway.chat.send({ sessionKey: "main", message: "yo", idempotencyKey: "f1" });
    await h.gateway.agentWait({ runId, timeoutMs: 5000 });
    off();
    const chat = events.filter((e) => e.type === "chat" && e.runId === runId);
    const last = chat.at(-1);
    expect(last).toMatchObject({
      state: "final",
      message: { role: "assistant", content: [{ type: "text", text: "echo: yo" }] },
    });
    expect(chatMessageText(last?.type === "chat" ? last.message : undefined)).toBe("echo: yo");
    expect(chat.filter((e) => e.type === "chat" && isTerminalChatState(e.state))).toHaveLength(1);
  });
});
