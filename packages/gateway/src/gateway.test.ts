import { SessionsError } from "@sessions/core";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { createManualClock } from "./clock.js";
import { createGateway } from "./create-gateway.js";
import { createScriptedRunner, type ScriptedAgent } from "./runner/scripted.js";
import { createMemoryStore } from "./store/memory.js";
import type { SessionStore, StoredMessage } from "./store/types.js";
import {
  cleanupDirs,
  createFakeChannel,
  eventually,
  type Harness,
  harness,
  openStore,
  rateLimited,
  STORE_KINDS,
} from "./test-kit.js";
import { messageText } from "./transcript.js";

afterAll(cleanupDirs);

const echo: ScriptedAgent = (turn) => {
  if (turn.kind === "ping_pong") return "REPLY_SKIP";
  if (turn.kind === "announce" || turn.kind === "subagent_announce") return "ANNOUNCE_SKIP";
  return `echo: ${turn.text}`;
};

const dm = (text: string, extra: Record<string, unknown> = {}) => ({
  channel: "chat",
  chatType: "direct" as const,
  peerId: "alice",
  senderId: "alice",
  to: "user:alice",
  text,
  ...extra,
});
const group = (peerId: string, text: string, extra: Record<string, unknown> = {}) => ({
  channel: "chat",
  chatType: "group" as const,
  peerId,
  senderId: "bob",
  to: `group:${peerId}`,
  text,
  ...extra,
});

describe.each(STORE_KINDS)("gateway on the %s store", (kind) => {
  let h: Harness;
  afterEach(async () => {
    await h?.close();
  });

  async function receiveAndWait(inbound: Parameters<Harness["gateway"]["receive"]>[0]) {
    const result = await h.gateway.receive(inbound);
    if (result.runId === undefined) return { result, wait: undefined };
    return { result, wait: await h.gateway.agentWait({ runId: result.runId, timeoutMs: 60_000 }) };
  }

  describe("inbound and delivery (SPEC 8)", () => {
    it("derives the key, records the route, runs the agent and delivers the reply", async () => {
      h = await harness(kind, { main: echo });
      const { result, wait } = await receiveAndWait(group("dev", "hello", { threadId: "42" }));
      expect(result.sessionKey).toBe("agent:main:chat:group:dev:thread:42");
      expect(wait).toMatchObject({ status: "ok", reply: "echo: hello" });
      await eventually(() => expect(h.channel.sent).toHaveLength(1));
      expect(h.channel.sent[0]).toMatchObject({
        target: { channel: "chat", to: "group:dev", accountId: "default", threadId: "42" },
        message: { text: "echo: hello", kind: "reply" },
      });
      const entry = await h.store.getEntry(result.sessionKey);
      expect(entry).toMatchObject({
        kind: "group",
        chatType: "group",
        lastChannel: "chat",
        lastTo: "group:dev",
        lastThreadId: "42",
      });
      // The receipt is recorded after the platform answered: a read may come before that write commits.
      await eventually(async () => {
        const [receipt] = (await h.gateway.deliveries.list({ sessionKey: result.sessionKey })).deliveries;
        expect(receipt).toMatchObject({ status: "delivered", attempts: 1, receipt: ["m1"] });
      });
    });

    it("applies dm scopes and identity links", async () => {
      h = await harness(
        kind,
        { main: echo },
        {
          config: { session: { dmScope: "per-peer", identityLinks: { alice: ["chat:alice", "other:a1"] } } },
        },
      );
      const first = await h.gateway.receive(dm("hi"));
      expect(first.sessionKey).toBe("agent:main:direct:alice");
      const second = await h.gateway.receive(dm("hi again", { channel: "other", peerId: "a1", to: "a1" }));
      expect(second.sessionKey).toBe(first.sessionKey);
      await h.gateway.agentWait({ runId: second.runId as string });
      const routes = await h.store.listRoutes(first.sessionKey);
      expect(routes.map((r) => r.channel).sort()).toEqual(["chat", "other"]);
    });

    it("does not run a redelivered platform message twice", async () => {
      h = await harness(kind, { main: echo });
      const a = await h.gateway.receive(dm("once", { messageId: "p-1" }));
      const b = await h.gateway.receive(dm("once", { messageId: "p-1" }));
      expect(b).toMatchObject({ runId: a.runId, duplicate: true });
      await h.gateway.agentWait({ runId: a.runId as string });
      expect(
        (await h.store.readMessages(a.sessionKey, { limit: 10 })).filter((m) => m.role === "user"),
      ).toHaveLength(1);
    });

    it("handles the owner-only /send command and enforces the override at delivery", async () => {
      h = await harness(kind, { main: echo });
      const denied = await h.gateway.receive(group("dev", "/send off"));
      expect(denied.command).toEqual({ mode: "deny", applied: false });
      const applied = await h.gateway.receive(group("dev", "/send off", { isOwner: true }));
      expect(applied.command).toEqual({ mode: "deny", applied: true });
      expect((await h.store.getEntry(applied.sessionKey))?.sendPolicy).toBe("deny");
      const usage = await h.gateway.receive(group("dev", "/send maybe", { isOwner: true }));
      expect(usage.command).toEqual({ mode: null, applied: false });
      const { wait } = await receiveAndWait(group("dev", "still runs"));
      expect(wait?.status).toBe("ok");
      await eventually(async () => {
        const replies = (
          await h.gateway.deliveries.list({ sessionKey: applied.sessionKey })
        ).deliveries.filter((d) => d.kind === "reply");
        expect(replies).toHaveLength(1);
        expect(replies[0]).toMatchObject({ status: "suppressed" });
        expect(replies[0]?.lastError).toContain("override");
      });
      expect(h.channel.sent.map((s) => s.message.text)).toEqual([
        "Only the owner can change this session's send policy.",
        "Send policy: off for this session.",
        "Usage: /send on | off | inherit",
      ]);
      await h.gateway.receive(group("dev", "/send inherit", { isOwner: true }));
      expect((await h.store.getEntry(applied.sessionKey))?.sendPolicy).toBeUndefined();
    });

    it("suppresses deliveries a send-policy rule denies and records the rule", async () => {
      h = await harness(
        kind,
        { main: echo },
        {
          config: {
            session: {
              sendPolicy: { rules: [{ match: { channel: "chat", chatType: "group" }, action: "deny" }] },
            },
          },
        },
      );
      const { result } = await receiveAndWait(group("dev", "hello"));
      await eventually(async () => {
        const [d] = (await h.gateway.deliveries.list({ sessionKey: result.sessionKey })).deliveries;
        expect(d).toMatchObject({
          status: "suppressed",
          lastError: expect.stringContaining("session.sendPolicy.rules[0]"),
        });
      });
      expect(h.channel.sent).toHaveLength(0);
    });

    it("retries failed deliveries with backoff and honours retryAfterMs", async () => {
      h = await harness(kind, { main: echo }, { outbox: { baseDelayMs: 1000, maxAttempts: 5 } });
      h.channel.failNext(1, rateLimited(7000));
      const { result } = await receiveAndWait(dm("hi"));
      await eventually(async () => {
        const [d] = (await h.gateway.deliveries.list({ sessionKey: result.sessionKey })).deliveries;
        expect(d).toMatchObject({ status: "queued", attempts: 1, lastError: "429 Too Many Requests" });
      });
      await h.clock.advance(6000);
      expect(h.channel.sent).toHaveLength(0);
      await h.clock.advance(1500);
      await eventually(() => expect(h.channel.sent).toHaveLength(1));
      h.channel.failNext(10);
      const second = await receiveAndWait(dm("again"));
      for (let i = 0; i < 6; i++) await h.clock.advance(60_000);
      await eventually(async () => {
        const d = (await h.gateway.deliveries.list({ runId: second.result.runId })).deliveries[0];
        expect(d).toMatchObject({ status: "failed", attempts: 5, lastError: "platform unavailable" });
      });
    });

    it("sends a delivery whose first reads met a store outage once the store is back, not when its claim lapses", async () => {
      const { store } = openStore(kind);
      // The store answers `unavailable` (a database restarting) to the outbox's first two reads of a delivery.
      let outage = 2;
      const flaky: SessionStore = new Proxy(store, {
        get(target, prop, receiver) {
          if (prop === "getDelivery" && outage > 0) {
            return async () => {
              outage--;
              throw new SessionsError("unavailable", "the database is restarting", { retryAfterMs: 1000 });
            };
          }
          const value = Reflect.get(target, prop, receiver);
          return typeof value === "function" ? value.bind(target) : value;
        },
      });
      h = await harness(
        kind,
        { main: echo },
        {},
        { clock: createManualClock(), channel: createFakeChannel(), store: flaky },
      );
      const { result } = await receiveAndWait(dm("through the outage"));
      await eventually(() => expect(outage).toBe(1));
      expect(h.channel.sent).toHaveLength(0);
      // A pause of the hinted second after each failure, far inside the claim (60 s): the delivery goes then.
      await h.clock.advance(1000);
      await eventually(() => expect(outage).toBe(0));
      expect(h.channel.sent).toHaveLength(0);
      await h.clock.advance(1000);
      await eventually(() =>
        expect(h.channel.sent.map((m) => m.message.text)).toEqual(["echo: through the outage"]),
      );
      await eventually(async () => {
        const [d] = (await h.gateway.deliveries.list({ runId: result.runId })).deliveries;
        expect(d).toMatchObject({ status: "delivered", attempts: 1 });
      });
    });

    it("rejects malformed inbound messages with a typed error naming the field", async () => {
      h = await harness(kind, { main: echo });
      await expect(h.gateway.receive({ ...dm("x"), chatType: "room" as never })).rejects.toMatchObject({
        code: "invalid_params",
        field: "chatType",
      });
      await expect(h.gateway.receive({ ...dm("x"), peerId: "" })).rejects.toMatchObject({
        code: "invalid_params",
        field: "peerId",
      });
      await expect(h.gateway.receive(null as never)).rejects.toSatisfy(SessionsError.isInstance);
    });
  });

  describe("sessions_list and sessions_history (SPEC 3.1, 3.2, 7)", () => {
    it("applies visibility and kinds before the limit, with the spec's row shape", async () => {
      h = await harness(
        kind,
        { main: echo, ops: echo },
        { config: { tools: { sessions: { visibility: "agent" } } } },
      );
      await receiveAndWait(dm("hi"));
      for (let i = 0; i < 5; i++) {
        await h.clock.advance(1000);
        await receiveAndWait(group(`g${i}`, "x", { agentId: "ops" }));
      }
      await h.clock.advance(1000);
      await receiveAndWait(group("dev", "x"));
      const list = (await h.gateway.callTool("main", "sessions_list", { limit: 2 })) as {
        count: number;
        sessions: Record<string, unknown>[];
      };
      expect(list.count).toBe(2);
      expect(list.sessions.map((s) => s.key)).toEqual(["agent:main:chat:group:dev", "main"]);
      expect(list.sessions[1]).toMatchObject({
        key: "main",
        kind: "main",
        channel: "chat",
        lastChannel: "chat",
        lastTo: "user:alice",
        deliveryContext: { channel: "chat", to: "user:alice", accountId: "default" },
      });
      expect(list.sessions[1]).not.toHaveProperty("messages");
      const groups = (await h.gateway.callTool("main", "sessions_list", { kinds: ["group"] })) as {
        sessions: { key: string }[];
      };
      expect(groups.sessions.map((s) => s.key)).toEqual(["agent:main:chat:group:dev"]);
      await h.clock.advance(10 * 60_000);
      await receiveAndWait(dm("fresh"));
      const active = (await h.gateway.callTool("main", "sessions_list", { activeMinutes: 5 })) as {
        sessions: { key: string }[];
      };
      expect(active.sessions.map((s) => s.key)).toEqual(["main"]);
    });

    it("attaches the last messages without tool results when messageLimit > 0", async () => {
      h = await harness(kind, {
        main: async (turn) => {
          if (turn.text === "use a tool") await turn.callTool("agents_list");
          return `done: ${turn.text}`;
        },
      });
      await receiveAndWait(dm("use a tool"));
      const list = (await h.gateway.callTool("main", "sessions_list", { messageLimit: 5 })) as {
        sessions: { messages: StoredMessage[] }[];
      };
      const messages = list.sessions[0]?.messages ?? [];
      expect(messages.map((m) => m.role)).toEqual(["user", "assistant", "assistant"]);
      expect(messages.map((m) => messageText(m))).toEqual(["use a tool", "", "done: use a tool"]);
      expect(messages[1]?.content).toMatchObject([{ type: "tool-call", toolName: "agents_list" }]);
    });

    it("reads history newest-N oldest-first, filters tools, resolves sessionIds, and hides invisible sessions", async () => {
      h = await harness(
        kind,
        {
          main: async (turn) => {
            await turn.callTool("agents_list");
            return `r${turn.text}`;
          },
        },
        { config: { tools: { sessions: { visibility: "tree" } } } },
      );
      for (let i = 1; i <= 4; i++) await receiveAndWait(dm(String(i)));
      const history = (await h.gateway.callTool("main", "sessions_history", {
        sessionKey: "main",
        limit: 3,
      })) as { status: string; messages: StoredMessage[] };
      expect(history.status).toBe("ok");
      // Tool results are filtered; the assistant's tool-call message stays (SPEC 3.2 filters results only).
      expect(history.messages.map((m) => m.role)).toEqual(["user", "assistant", "assistant"]);
      expect(history.messages.map((m) => messageText(m))).toEqual(["4", "", "r4"]);
      const withTools = (await h.gateway.callTool("main", "sessions_history", {
        sessionKey: "main",
        limit: 3,
        includeTools: true,
      })) as { messages: StoredMessage[] };
      expect(withTools.messages.map((m) => m.role)).toEqual(["assistant", "toolResult", "assistant"]);
      const entry = await h.store.getEntry("agent:main:main");
      const byId = (await h.gateway.callTool("main", "sessions_history", {
        sessionKey: entry?.sessionId,
        limit: 1,
      })) as { status: string; sessionKey: string };
      expect(byId).toMatchObject({ status: "ok", sessionKey: "main" });

      const other = await receiveAndWait(group("secret", "x"));
      const hidden = await h.gateway.callTool("main", "sessions_history", {
        sessionKey: other.result.sessionKey,
      });
      const missing = await h.gateway.callTool("main", "sessions_history", {
        sessionKey: "agent:main:chat:group:nope",
      });
      expect(hidden).toMatchObject({
        status: "not_found",
        error: `Session not found: ${other.result.sessionKey} (use the key from sessions_list)`,
      });
      expect(missing).toMatchObject({ status: "not_found" });
      const otherEntry = await h.store.getEntry(other.result.sessionKey);
      expect(
        await h.gateway.callTool("main", "sessions_history", { sessionKey: otherEntry?.sessionId }),
      ).toMatchObject({ status: "not_found" });
    });

    it("bounds large history: 4000 characters a field and 80 KiB in all, oldest dropped", async () => {
      h = await harness(kind, { main: (turn) => (turn.text === "big" ? "y".repeat(10_000) : "ok") });
      await receiveAndWait(dm("big"));
      const one = (await h.gateway.callTool("main", "sessions_history", {
        sessionKey: "main",
        limit: 1,
      })) as { truncated?: boolean; messages: StoredMessage[] };
      expect(one.truncated).toBe(true);
      expect(messageText(one.messages[0])).toMatch(/^y{4000}… \[truncated 6000 chars\]$/);
      for (let i = 0; i < 30; i++) await receiveAndWait(dm("big"));
      const many = (await h.gateway.callTool("main", "sessions_history", {
        sessionKey: "main",
        limit: 100,
      })) as { messages: StoredMessage[]; droppedMessages?: number };
      expect(JSON.stringify(many.messages).length).toBeLessThanOrEqual(80 * 1024);
      expect(many.droppedMessages).toBeGreaterThan(0);
      expect(messageText(many.messages[many.messages.length - 1])).toMatch(/^y{4000}/);
    });

    it("clamps sandboxed sessions to tree and gates cross-agent access", async () => {
      h = await harness(
        kind,
        { main: echo, ops: echo },
        {
          config: { tools: { sessions: { visibility: "all" }, agentToAgent: { enabled: false } } },
        },
      );
      await receiveAndWait(dm("hi"));
      const ops = await receiveAndWait(group("ops", "x", { agentId: "ops" }));
      const mine = await receiveAndWait(group("dev", "x"));
      const keys = async (options?: { sandboxed: boolean }) =>
        (
          (await h.gateway.callTool("main", "sessions_list", {}, options)) as { sessions: { key: string }[] }
        ).sessions.map((s) => s.key);
      expect(await keys()).toEqual([mine.result.sessionKey, "main"]);
      expect(await keys({ sandboxed: true })).toEqual(["main"]);
      // Sandboxing belongs to the session: later callers that do not say so are clamped all the same.
      expect(await keys()).toEqual(["main"]);
      // A session behind the agent-to-agent gate reads exactly like a missing one, by key or by sessionId.
      const opsEntry = await h.store.getEntry(ops.result.sessionKey);
      for (const sessionKey of [ops.result.sessionKey, opsEntry?.sessionId]) {
        expect(await h.gateway.callTool("main", "sessions_history", { sessionKey })).toEqual({
          status: "not_found",
          code: "not_found",
          error: `Session not found: ${sessionKey} (use the key from sessions_list)`,
          sessionKey,
          messages: [],
        });
      }
    });

    it("keeps a sandboxed session clamped in the runs the gateway starts for it", async () => {
      const seen: string[][] = [];
      h = await harness(
        kind,
        {
          main: async (turn) => {
            if (turn.kind === "inter_session") {
              const listed = await turn.callTool<{ sessions: { key: string }[] }>("sessions_list", {});
              seen.push(listed.sessions.map((s) => s.key));
              return "REPLY_SKIP";
            }
            return echo(turn);
          },
        },
        { config: { tools: { sessions: { visibility: "agent" } } } },
      );
      await receiveAndWait(dm("hi"));
      await receiveAndWait(group("dev", "x"));
      const ops = await receiveAndWait(group("ops", "x"));
      const opsKey = ops.result.sessionKey;
      await h.gateway.callTool(opsKey, "agents_list", {}, { sandboxed: true });
      await h.gateway.callTool("main", "sessions_send", {
        sessionKey: opsKey,
        message: "status?",
        timeoutSeconds: 30,
      });
      expect(seen).toEqual([[opsKey]]);
      expect(await h.store.getEntry(opsKey)).toMatchObject({ sandboxed: true });
    });

    it("rejects invalid tool params with a typed error naming the field", async () => {
      h = await harness(kind, { main: echo });
      await expect(h.gateway.callTool("main", "sessions_list", { kinds: ["bogus"] })).rejects.toMatchObject({
        code: "invalid_params",
        field: "kinds[0]",
      });
      await expect(h.gateway.callTool("main", "nope", {})).rejects.toMatchObject({
        code: "invalid_params",
        field: "name",
      });
    });
  });

  describe("sessions_send (SPEC 3.3, 4, 5)", () => {
    const a2aConfig = { tools: { sessions: { visibility: "agent" as const } } };

    it("fire-and-forget returns accepted; waiting returns this run's reply, stores provenance and the a2a context", async () => {
      let seenSystem: string[] = [];
      h = await harness(
        kind,
        {
          main: (turn) => {
            if (turn.sessionKey.includes("group:ops")) {
              seenSystem = turn.system;
              if (turn.kind === "ping_pong") return "REPLY_SKIP";
              if (turn.kind === "announce") return "ANNOUNCE_SKIP";
              return `ops says: ${turn.text}`;
            }
            return echo(turn);
          },
        },
        { config: a2aConfig },
      );
      await receiveAndWait(dm("hi"));
      const ops = await receiveAndWait(group("ops", "earlier"));
      const accepted = (await h.gateway.callTool("main", "sessions_send", {
        sessionKey: ops.result.sessionKey,
        message: "ping",
        timeoutSeconds: 0,
      })) as Record<string, string>;
      expect(accepted).toMatchObject({ status: "accepted", runId: expect.any(String) });
      await h.gateway.agentWait({ runId: accepted.runId as string });
      const ok = (await h.gateway.callTool("main", "sessions_send", {
        sessionKey: ops.result.sessionKey,
        message: "status?",
      })) as Record<string, unknown>;
      expect(ok).toMatchObject({ status: "ok", reply: "ops says: status?", delivery: { status: "pending" } });
      const transcript = await h.store.readMessages(ops.result.sessionKey, { limit: 50 });
      const injected = transcript.find((m) => messageText(m) === "status?");
      expect(injected?.provenance).toEqual({
        kind: "inter_session",
        sourceSessionKey: "agent:main:main",
        sourceChannel: "chat",
        sourceTool: "sessions_send",
      });
      expect(seenSystem.join("\n")).toContain("Requester session: agent:main:main (channel chat)");
    });

    it("reports timeout without cancelling the run, and error when the run fails", async () => {
      h = await harness(
        kind,
        {
          main: async (turn) => {
            if (turn.text === "slow") {
              await turn.sleep(5000);
              return "finally";
            }
            if (turn.text === "boom") throw new Error("model exploded");
            return echo(turn);
          },
        },
        { config: a2aConfig },
      );
      await receiveAndWait(dm("hi"));
      const ops = await receiveAndWait(group("ops", "x"));
      const pending = h.gateway.callTool("main", "sessions_send", {
        sessionKey: ops.result.sessionKey,
        message: "slow",
        timeoutSeconds: 2,
      });
      await h.clock.advance(2000);
      const timedOut = (await pending) as Record<string, string>;
      expect(timedOut).toMatchObject({
        status: "timeout",
        error: expect.stringContaining("sessions_history"),
      });
      await h.clock.advance(4000);
      expect(await h.gateway.agentWait({ runId: timedOut.runId as string })).toMatchObject({
        status: "ok",
        reply: "finally",
      });
      const failed = await h.gateway.callTool("main", "sessions_send", {
        sessionKey: ops.result.sessionKey,
        message: "boom",
      });
      expect(failed).toMatchObject({ status: "error", error: "model exploded" });
    });

    it("refuses self-sends and unknown targets without creating sessions", async () => {
      h = await harness(kind, { main: echo }, { config: a2aConfig });
      await receiveAndWait(dm("hi"));
      expect(
        await h.gateway.callTool("main", "sessions_send", { sessionKey: "main", message: "x" }),
      ).toMatchObject({ status: "error", code: "send_to_self" });
      expect(
        await h.gateway.callTool("main", "sessions_send", {
          sessionKey: "agent:main:chat:group:ghost",
          message: "x",
        }),
      ).toMatchObject({ status: "not_found" });
      expect(await h.store.getEntry("agent:main:chat:group:ghost")).toBeUndefined();
    });

    it("runs the reply-back loop up to the turn cap, then announces to the target's channel and thread", async () => {
      const turns: string[] = [];
      h = await harness(
        kind,
        {
          main: (turn) => {
            if (turn.kind === "ping_pong") {
              turns.push(`${turn.sessionKey.includes("ops") ? "ops" : "main"}<-${turn.text}`);
              return `${turn.sessionKey.includes("ops") ? "ops" : "main"} turn ${turns.length}`;
            }
            if (turn.kind === "announce") return `Announcing after: ${turn.text.split("\n").pop()}`;
            return turn.sessionKey.includes("ops") ? "round one" : echo(turn);
          },
        },
        { config: { ...a2aConfig, session: { agentToAgent: { maxPingPongTurns: 3 } } } },
      );
      await receiveAndWait(dm("hi"));
      const ops = await receiveAndWait(group("ops", "x", { threadId: "77" }));
      const result = (await h.gateway.callTool("main", "sessions_send", {
        sessionKey: ops.result.sessionKey,
        message: "deploy?",
      })) as { runId: string };
      await eventually(async () => {
        const [d] = (await h.gateway.deliveries.list({ runId: result.runId })).deliveries;
        expect(d).toMatchObject({ kind: "announce", status: "delivered" });
      });
      expect(turns).toEqual(["main<-round one", "ops<-main turn 1", "main<-ops turn 2"]);
      const announce = h.channel.sent.find((s) => s.message.kind === "announce");
      expect(announce).toMatchObject({
        target: { channel: "chat", to: "group:ops", threadId: "77" },
        message: { text: "Announcing after: main turn 3" },
      });
      const mainTranscript = await h.store.readMessages("agent:main:main", { limit: 50 });
      expect(mainTranscript.some((m) => m.provenance?.sourceSessionKey === ops.result.sessionKey)).toBe(true);
    });

    it("stops the loop on a skip token and stays silent on ANNOUNCE_SKIP", async () => {
      let pingPongs = 0;
      h = await harness(
        kind,
        {
          main: (turn) => {
            if (turn.kind === "ping_pong") {
              pingPongs++;
              return '"REPLY_SKIP."';
            }
            if (turn.kind === "announce") return "ANNOUNCE_SKIP";
            return "reply";
          },
        },
        { config: a2aConfig },
      );
      await receiveAndWait(dm("hi"));
      const ops = await receiveAndWait(group("ops", "x"));
      const before = h.channel.sent.length;
      const result = (await h.gateway.callTool("main", "sessions_send", {
        sessionKey: ops.result.sessionKey,
        message: "q",
      })) as { runId: string };
      await eventually(async () => {
        expect((await h.gateway.deliveries.list({ runId: result.runId })).deliveries[0]).toMatchObject({
          status: "suppressed",
          lastError: "ANNOUNCE_SKIP",
        });
      });
      expect(pingPongs).toBe(1);
      expect(h.channel.sent.length).toBe(before);
    });
  });

  describe("sessions_spawn and the sub-agent announce (SPEC 3.4, 3.5, 6)", () => {
    const spawner: ScriptedAgent = async (turn) => {
      if (turn.kind === "subagent") {
        if (turn.text.startsWith("slow")) await turn.sleep(60_000);
        if (turn.text === "fail") throw new Error("tool crashed");
        return `Result: findings for ${turn.text}\nNotes:\n- checked 3 sources`;
      }
      if (turn.kind === "subagent_announce")
        return turn.text.includes("status ok") ? "Result: 3 papers found\nNotes:\n- none missing" : "";
      return echo(turn);
    };

    it("returns accepted at once, runs the child, and announces a normalised result with stats", async () => {
      h = await harness(kind, { main: spawner });
      await receiveAndWait(dm("hi"));
      const spawned = (await h.gateway.callTool("main", "sessions_spawn", {
        task: "papers on X",
        label: "papers",
      })) as Record<string, string>;
      expect(spawned).toMatchObject({
        status: "accepted",
        runId: expect.any(String),
        childSessionKey: expect.stringMatching(/^agent:main:subagent:[0-9a-f-]{36}$/),
      });
      const child = await h.store.getEntry(spawned.childSessionKey as string);
      expect(child).toMatchObject({ spawnedBy: "agent:main:main", spawnDepth: 1, label: "papers" });
      await eventually(() =>
        expect(h.channel.sent.some((s) => s.message.kind === "subagent_announce")).toBe(true),
      );
      const announce = h.channel.sent.find((s) => s.message.kind === "subagent_announce");
      expect(announce?.target).toMatchObject({ channel: "chat", to: "user:alice" });
      const text = announce?.message.text ?? "";
      expect(text).toMatch(
        /^Status: success\n\nResult:\n3 papers found\n\nNotes:\n- none missing\n\nStats: runtime (?:\d+s|n\/a) • tokens \d+ \(in \d+ \/ out \d+\) • sessionKey agent:main:subagent:/,
      );
      expect(text).toContain(`sessionId ${child?.sessionId}`);
      const requesterTranscript = await h.store.readMessages("agent:main:main", { limit: 20 });
      expect(
        requesterTranscript.some(
          (m) => m.provenance?.sourceTool === "sessions_spawn" && messageText(m) === text,
        ),
      ).toBe(true);
    });

    it("aborts the child after runTimeoutSeconds and announces Status: timeout", async () => {
      h = await harness(kind, { main: spawner });
      await receiveAndWait(dm("hi"));
      const spawned = (await h.gateway.callTool("main", "sessions_spawn", {
        task: "slow job",
        runTimeoutSeconds: 30,
      })) as Record<string, string>;
      await h.clock.advance(30_000);
      expect(await h.gateway.agentWait({ runId: spawned.runId as string })).toMatchObject({
        status: "timeout",
        error: "run timed out after 30s",
      });
      await eventually(() =>
        expect(h.channel.sent.some((s) => s.message.kind === "subagent_announce")).toBe(true),
      );
      const text = h.channel.sent.find((s) => s.message.kind === "subagent_announce")?.message.text ?? "";
      expect(text).toContain("Status: timeout");
      expect(text).toContain("- Error: run timed out after 30s");
    });

    it("enforces the allowlist, no spawning from sub-agents, the child limit and known models", async () => {
      let nested: unknown;
      let childTools: string[] = [];
      const agent: ScriptedAgent = async (turn) => {
        if (turn.kind === "subagent") {
          childTools = turn.toolNames;
          nested = await turn.callTool("sessions_spawn", { task: "nested" }).catch((e) => e);
          return "done";
        }
        return turn.kind === "subagent_announce" ? "ANNOUNCE_SKIP" : echo(turn);
      };
      h = await harness(
        kind,
        { main: agent, research: agent },
        {
          config: {
            agents: {
              list: [
                { id: "main", subagents: { allowAgents: ["research"] } },
                { id: "research", name: "Research" },
                { id: "ops" },
              ],
              defaults: { subagents: { maxChildrenPerAgent: 2 } },
            },
          },
          models: ["small", "large"],
        },
      );
      await receiveAndWait(dm("hi"));
      expect(await h.gateway.callTool("main", "agents_list", {})).toEqual({
        requester: "main",
        allowAny: false,
        agents: [
          { id: "main", configured: true },
          { id: "research", name: "Research", configured: true },
        ],
      });
      expect(await h.gateway.callTool("main", "sessions_spawn", { task: "t", agentId: "ops" })).toMatchObject(
        {
          status: "forbidden",
          code: "spawn_agent_not_allowed",
          error: expect.stringContaining("allowed: main, research"),
        },
      );
      expect(
        await h.gateway.callTool("main", "sessions_spawn", { task: "t", model: "gigantic" }),
      ).toMatchObject({ status: "error", code: "unknown_model" });
      const ok = (await h.gateway.callTool("main", "sessions_spawn", {
        task: "t",
        agentId: "research",
        model: "small",
      })) as Record<string, string>;
      expect(ok.childSessionKey).toMatch(/^agent:research:subagent:/);
      expect((await h.store.getEntry(ok.childSessionKey as string))?.model).toBe("small");
      await eventually(() =>
        expect(nested).toMatchObject({
          code: "forbidden",
          message: "Tool sessions_spawn is not available to this run",
        }),
      );
      expect(childTools).toEqual([]);
      expect(
        await h.gateway.callTool(ok.childSessionKey as string, "sessions_spawn", { task: "x" }),
      ).toMatchObject({ status: "forbidden", code: "tool_not_allowed" });
    });

    it("caps active children per requester", async () => {
      h = await harness(
        kind,
        { main: spawner },
        { config: { agents: { defaults: { subagents: { maxChildrenPerAgent: 2 } } } } },
      );
      await receiveAndWait(dm("hi"));
      await h.gateway.callTool("main", "sessions_spawn", { task: "slow 1" });
      await h.gateway.callTool("main", "sessions_spawn", { task: "slow 2" });
      expect(await h.gateway.callTool("main", "sessions_spawn", { task: "slow 3" })).toMatchObject({
        status: "forbidden",
        code: "max_children",
        error: expect.stringContaining("agents.defaults.subagents.maxChildrenPerAgent"),
      });
    });

    it("cleanup delete removes the child after its announce was delivered; keep archives it after archiveAfterMinutes", async () => {
      h = await harness(
        kind,
        { main: spawner },
        { config: { agents: { defaults: { subagents: { archiveAfterMinutes: 10 } } } } },
      );
      await receiveAndWait(dm("hi"));
      const deleted = (await h.gateway.callTool("main", "sessions_spawn", {
        task: "a",
        cleanup: "delete",
      })) as Record<string, string>;
      const kept = (await h.gateway.callTool("main", "sessions_spawn", { task: "b" })) as Record<
        string,
        string
      >;
      await eventually(async () => {
        expect(await h.store.getEntry(deleted.childSessionKey as string)).toBeUndefined();
        expect(await h.store.countMessages(deleted.childSessionKey as string)).toBe(0);
      });
      // Deleted only after its announce went out.
      const announced = h.channel.sent.find(
        (s) =>
          s.message.kind === "subagent_announce" &&
          s.message.text.includes(deleted.childSessionKey as string),
      );
      expect(announced).toBeDefined();
      await eventually(async () =>
        expect((await h.store.getSubagent(kept.childSessionKey as string))?.archiveAt).toBeDefined(),
      );
      const listed = (await h.gateway.callTool("main", "sessions_list", {})) as {
        sessions: { key: string }[];
      };
      expect(listed.sessions.map((s) => s.key)).toContain(kept.childSessionKey);
      await h.clock.advance(9 * 60_000);
      expect((await h.store.getEntry(kept.childSessionKey as string))?.archivedAt).toBeUndefined();
      await h.clock.advance(2 * 60_000);
      await eventually(async () =>
        expect((await h.store.getEntry(kept.childSessionKey as string))?.archivedAt).toBeDefined(),
      );
      const after = (await h.gateway.callTool("main", "sessions_list", {})) as {
        sessions: { key: string }[];
      };
      expect(after.sessions.map((s) => s.key)).not.toContain(kept.childSessionKey);
    });

    it("thread=true binds a new thread, routes inbound there to the child, and announces into it", async () => {
      h = await harness(kind, { main: spawner });
      await receiveAndWait(group("dev", "hi"));
      const requester = "agent:main:chat:group:dev";
      const spawned = (await h.gateway.callTool(requester, "sessions_spawn", {
        task: "watch",
        thread: true,
        label: "watcher",
      })) as Record<string, string>;
      expect(spawned).toMatchObject({ status: "accepted", mode: "session" });
      expect(h.channel.threads).toEqual([
        {
          parent: expect.objectContaining({ to: "group:dev" }),
          name: "watcher",
          sessionKey: spawned.childSessionKey,
        },
      ]);
      await eventually(() =>
        expect(h.channel.sent.some((s) => s.message.kind === "subagent_announce")).toBe(true),
      );
      expect(h.channel.sent.find((s) => s.message.kind === "subagent_announce")?.target).toMatchObject({
        to: "group:dev",
        threadId: "t1",
      });
      const routed = await h.gateway.receive(group("dev", "how is it going?", { threadId: "t1" }));
      expect(routed.sessionKey).toBe(spawned.childSessionKey);
      h.channel.failThreads = true;
      const failed = await h.gateway.callTool(requester, "sessions_spawn", { task: "x", thread: true });
      expect(failed).toMatchObject({ status: "error", code: "thread_unavailable" });
      expect((await h.store.listEntries({ limit: 50, spawnedBy: requester })).map((e) => e.key)).toEqual([
        spawned.childSessionKey,
      ]);
    });
  });

  describe("gateway methods (SPEC 9)", () => {
    it("patches with sendPolicy, refuses to create on patch, deletes", async () => {
      h = await harness(kind, { main: echo });
      await receiveAndWait(dm("hi"));
      const patched = await h.gateway.sessions.patch({ key: "main", sendPolicy: "deny", label: "home" });
      expect(patched.entry).toMatchObject({ sendPolicy: "deny", label: "home" });
      // The entry is the session's list row: the same kind `sessions.list` reports (not the store's `main`).
      const [row] = (await h.gateway.sessions.list({})).sessions;
      expect(patched.entry).toEqual(row);
      expect(patched.entry.kind).toBe("direct");
      expect(
        (await h.gateway.sessions.patch({ key: "main", sendPolicy: null })).entry.sendPolicy,
      ).toBeUndefined();
      await expect(h.gateway.sessions.patch({ key: "agent:main:nope", label: "x" })).rejects.toMatchObject({
        code: "not_found",
        details: { code: "NOT_FOUND" },
      });
      await expect(h.gateway.sessions.patch({ key: "main", bogus: 1 } as never)).rejects.toMatchObject({
        code: "invalid_params",
      });
      expect(await h.gateway.sessions.resolve({ label: "home" })).toEqual({
        ok: true,
        key: "agent:main:main",
        agentId: "main",
      });
      expect(await h.gateway.sessions.delete({ key: "main" })).toEqual({
        ok: true,
        key: "agent:main:main",
        deleted: true,
        archived: [],
      });
      await expect(h.gateway.sessions.resolve({ key: "main" })).rejects.toMatchObject({ code: "not_found" });
    });

    it("pages sessions.list and chat.history from the newest end", async () => {
      h = await harness(kind, { main: echo });
      for (let i = 0; i < 3; i++) {
        await h.clock.advance(1000);
        await receiveAndWait(group(`g${i}`, `m${i}`));
      }
      const page = await h.gateway.sessions.list({ limit: 2 });
      expect(page).toMatchObject({ count: 2, hasMore: true, nextOffset: 2 });
      expect(page.sessions.map((s) => s.key)).toEqual([
        "agent:main:chat:group:g2",
        "agent:main:chat:group:g1",
      ]);
      expect(page.sessions[0]?.kind).toBe("group");
      const rest = await h.gateway.sessions.list({ limit: 2, offset: 2 });
      expect(rest).toMatchObject({ count: 1, hasMore: false, nextOffset: null });
      const history = await h.gateway.chat.history({ sessionKey: "agent:main:chat:group:g0", limit: 1 });
      expect(history).toMatchObject({ totalMessages: 2, hasMore: true, nextOffset: 1 });
      expect(messageText(history.messages[0])).toBe("echo: m0");
      const older = await h.gateway.chat.history({
        sessionKey: "agent:main:chat:group:g0",
        limit: 5,
        offset: 1,
      });
      expect(older.messages.map((m) => messageText(m))).toEqual(["m0"]);
    });

    it("makes chat.send idempotent and enforces the send policy when delivering", async () => {
      h = await harness(
        kind,
        { main: echo },
        {
          config: { session: { sendPolicy: { rules: [{ match: { chatType: "group" }, action: "deny" }] } } },
        },
      );
      await receiveAndWait(group("dev", "hi"));
      const first = await h.gateway.chat.send({
        sessionKey: "agent:main:chat:group:dev",
        message: "x",
        idempotencyKey: "k1",
      });
      expect(first.status).toBe("started");
      expect(
        await h.gateway.chat.send({
          sessionKey: "agent:main:chat:group:dev",
          message: "x",
          idempotencyKey: "k1",
        }),
      ).toMatchObject({ runId: first.runId });
      await h.gateway.agentWait({ runId: first.runId });
      expect(
        await h.gateway.chat.send({
          sessionKey: "agent:main:chat:group:dev",
          message: "x",
          idempotencyKey: "k1",
        }),
      ).toEqual({ runId: first.runId, status: "ok" });
      await expect(
        h.gateway.chat.send({
          sessionKey: "agent:main:chat:group:dev",
          message: "x",
          idempotencyKey: "k2",
          deliver: true,
        }),
      ).rejects.toMatchObject({
        code: "send_policy_denied",
        details: { code: "SEND_POLICY_DENIED" },
      });
    });

    it("aborts a running run; agent.wait never cancels and times out on its own", async () => {
      h = await harness(kind, {
        main: async (turn) => {
          await turn.sleep(100_000);
          return "late";
        },
      });
      const started = await h.gateway.agent({ message: "work", idempotencyKey: "a1" });
      expect(started).toMatchObject({ sessionKey: "agent:main:main", agentId: "main", status: "accepted" });
      const waiting = h.gateway.agentWait({ runId: started.runId, timeoutMs: 1000 });
      await h.clock.advance(1000);
      expect(await waiting).toMatchObject({ status: "timeout" });
      expect((await h.store.getRun(started.runId))?.status).toBe("running");
      expect(await h.gateway.chat.abort({ sessionKey: "main" })).toEqual({
        ok: true,
        aborted: true,
        runIds: [started.runId],
      });
      expect(await h.gateway.agentWait({ runId: started.runId })).toMatchObject({
        status: "error",
        error: "run aborted",
      });
      expect((await h.store.getEntry("agent:main:main"))?.abortedLastRun).toBe(true);
    });

    it("answers agent.wait for a run that finished before a restart and replays queued deliveries", async () => {
      h = await harness(kind, { main: echo });
      const done = await receiveAndWait(dm("before"));
      h.channel.failNext(100);
      const pending = await receiveAndWait(dm("queued"));
      await eventually(async () =>
        expect(
          (await h.gateway.deliveries.list({ runId: pending.result.runId })).deliveries[0]?.attempts,
        ).toBe(1),
      );
      h.channel.failNext(0);
      h = await h.restart();
      expect(await h.gateway.agentWait({ runId: done.result.runId as string })).toMatchObject({
        status: "ok",
        reply: "echo: before",
      });
      await h.clock.advance(5 * 60_000);
      await eventually(async () =>
        expect((await h.gateway.deliveries.list({ runId: pending.result.runId })).deliveries[0]?.status).toBe(
          "delivered",
        ),
      );
      expect(h.channel.sent.filter((s) => s.message.text === "echo: queued")).toHaveLength(1);
    });

    it("lists agents and rejects unknown methods", async () => {
      h = await harness(
        kind,
        { main: echo },
        { config: { agents: { list: [{ id: "main", name: "Main" }, { id: "ops" }] } } },
      );
      expect(await h.gateway.agents.list()).toEqual({
        defaultId: "main",
        mainKey: "main",
        scope: "per-sender",
        agents: [{ id: "main", name: "Main" }, { id: "ops" }],
      });
      await expect(h.gateway.call("nope" as never, {})).rejects.toMatchObject({
        code: "invalid_params",
        details: { code: "UNKNOWN_METHOD" },
      });
    });
  });
});

describe.each(STORE_KINDS)("review fixes on the %s store", (kind) => {
  let h: Harness;
  afterEach(async () => {
    await h?.close();
  });

  it("applies an agent's sandbox config on every run path, not only inbound", async () => {
    let seen: string[] = [];
    h = await harness(
      kind,
      {
        main: async (turn) => {
          const list = await turn.callTool<{ sessions: { key: string }[] }>("sessions_list");
          seen = list.sessions.map((s) => s.key);
          return "ok";
        },
      },
      {
        config: {
          tools: { sessions: { visibility: "agent" } },
          agents: { list: [{ id: "main", sandboxed: true }] },
        },
      },
    );
    await h.gateway.receive(group("dev", "x"));
    const { runId } = await h.gateway.chat.send({ sessionKey: "main", message: "look", idempotencyKey: "k" });
    await h.gateway.agentWait({ runId });
    expect(seen).toEqual(["main"]);
  });

  it("expires thread bindings after idleHours of inactivity", async () => {
    h = await harness(
      kind,
      { main: (t) => (t.kind === "subagent_announce" ? "ANNOUNCE_SKIP" : "ok") },
      {
        config: { session: { threadBindings: { idleHours: 1 } } },
      },
    );
    const first = await h.gateway.receive(group("dev", "hi"));
    await h.gateway.agentWait({ runId: first.runId as string });
    const spawned = (await h.gateway.callTool(first.sessionKey, "sessions_spawn", {
      task: "watch",
      thread: true,
    })) as { childSessionKey: string };
    expect((await h.gateway.receive(group("dev", "still there?", { threadId: "t1" }))).sessionKey).toBe(
      spawned.childSessionKey,
    );
    await h.clock.advance(59 * 60_000);
    expect((await h.gateway.receive(group("dev", "and now?", { threadId: "t1" }))).sessionKey).toBe(
      spawned.childSessionKey,
    );
    // The message's run keeps the binding alive (the bindings module follows the run lifecycle).
    const touchedAt = h.clock.now();
    await eventually(async () =>
      expect((await h.store.getThreadBinding("chat", "default", "t1"))?.lastActivityAt).toBe(touchedAt),
    );
    await h.clock.advance(59 * 60_000);
    expect((await h.gateway.receive(group("dev", "still?", { threadId: "t1" }))).sessionKey).toBe(
      spawned.childSessionKey,
    );
    await eventually(async () =>
      expect((await h.store.getThreadBinding("chat", "default", "t1"))?.lastActivityAt).toBe(h.clock.now()),
    );
    await h.clock.advance(61 * 60_000);
    const late = await h.gateway.receive(group("dev", "anyone?", { threadId: "t1" }));
    expect(late.sessionKey).toBe("agent:main:chat:group:dev:thread:t1");
    expect(await h.store.getThreadBinding("chat", "default", "t1")).toBeUndefined();
  });

  it("aliases the reserved key global to main when session.scope is global, and never lists it", async () => {
    h = await harness(kind, { main: (t) => `echo: ${t.text}` }, { config: { session: { scope: "global" } } });
    const { runId } = await h.gateway.receive(dm("hi"));
    await h.gateway.agentWait({ runId: runId as string });
    const history = (await h.gateway.callTool("main", "sessions_history", { sessionKey: "global" })) as {
      status: string;
      sessionKey: string;
    };
    expect(history).toMatchObject({ status: "ok", sessionKey: "main" });
    const list = (await h.gateway.callTool("main", "sessions_list", {})) as { sessions: { key: string }[] };
    expect(list.sessions.map((s) => s.key)).toEqual(["main"]);
  });

  it("honours per-channel and per-account thread-binding overrides", async () => {
    h = await harness(
      kind,
      { main: (t) => (t.kind === "subagent_announce" ? "ANNOUNCE_SKIP" : "ok") },
      {
        config: {
          session: { threadBindings: { idleHours: 24 } },
          channels: {
            Chat: {
              threadBindings: { idleHours: 5 },
              accounts: { "Work Bot": { threadBindings: { enabled: false } } },
            },
          },
        },
      },
    );
    const home = await h.gateway.receive(group("dev", "hi"));
    await h.gateway.agentWait({ runId: home.runId as string });
    await h.gateway.callTool(home.sessionKey, "sessions_spawn", { task: "a", thread: true });
    expect((await h.store.listThreadBindings())[0]).toMatchObject({ idleHours: 5, maxAgeHours: 0 });
    const work = await h.gateway.receive(group("ops", "hi", { accountId: "work-bot" }));
    await h.gateway.agentWait({ runId: work.runId as string });
    expect(
      await h.gateway.callTool(work.sessionKey, "sessions_spawn", { task: "b", thread: true }),
    ).toMatchObject({
      status: "error",
      code: "thread_unavailable",
      error: expect.stringContaining("disabled"),
    });
  });

  it("sweeps lapsed bindings on the gateway clock with a farewell, and unbinds closed threads", async () => {
    h = await harness(
      kind,
      { main: (t) => (t.kind === "subagent_announce" ? "ANNOUNCE_SKIP" : "ok") },
      {
        config: { session: { threadBindings: { idleHours: 1 } } },
      },
    );
    const first = await h.gateway.receive(group("dev", "hi"));
    await h.gateway.agentWait({ runId: first.runId as string });
    await h.gateway.callTool(first.sessionKey, "sessions_spawn", { task: "a", thread: true });
    await h.gateway.callTool(first.sessionKey, "sessions_spawn", { task: "b", thread: true });
    expect(await h.store.listThreadBindings()).toHaveLength(2);
    expect(await h.gateway.threadClosed({ channel: "chat", threadId: "t2" })).toBe(true);
    expect(await h.gateway.threadClosed({ channel: "chat", threadId: "t2" })).toBe(false);
    await h.clock.advance(61 * 60_000);
    await eventually(async () => expect(await h.store.listThreadBindings()).toEqual([]));
    await eventually(() => {
      const farewells = h.channel.sent.filter((s) => s.message.kind === "notice");
      expect(farewells).toHaveLength(1);
      expect(farewells[0]?.target).toMatchObject({ to: "group:dev", threadId: "t1" });
    });
  });

  it("never pairs an explicit delivery channel with another channel's account or thread", async () => {
    h = await harness(kind, { main: echo });
    await h.gateway.receive(group("dev", "hi", { accountId: "acct1", threadId: "42" }));
    const { runId } = await h.gateway.agent({
      message: "post",
      idempotencyKey: "d1",
      sessionKey: "agent:main:chat:group:dev:thread:42",
      deliver: true,
      channel: "other",
      to: "room-9",
    });
    await h.gateway.agentWait({ runId });
    const [delivery] = (await h.gateway.deliveries.list({ runId })).deliveries;
    expect(delivery).toMatchObject({ channel: "other", to: "room-9" });
    expect(delivery?.accountId).toBeUndefined();
    expect(delivery?.threadId).toBeUndefined();
  });

  it("keeps the session's route when a web chat turn comes in", async () => {
    h = await harness(kind, { main: echo });
    const tg = await h.gateway.receive(dm("hi"));
    await h.gateway.receive(dm("from the web ui", { channel: "webchat", to: "ui" }));
    expect(await h.store.getEntry(tg.sessionKey)).toMatchObject({
      lastChannel: "chat",
      deliveryContext: { channel: "chat", to: "user:alice" },
    });
    expect((await h.store.listRoutes(tg.sessionKey)).map((r) => r.channel).sort()).toEqual([
      "chat",
      "webchat",
    ]);
  });

  it("stops a session's runs before deleting it, so a new session with the key starts empty", async () => {
    h = await harness(kind, {
      main: async (turn) => {
        if (turn.text === "slow") await turn.sleep(10_000);
        return `reply to ${turn.text}`;
      },
    });
    const slow = await h.gateway.receive(dm("slow"));
    const queued = await h.gateway.receive(dm("queued"));
    expect(await h.gateway.sessions.delete({ key: "main" })).toMatchObject({ deleted: true });
    expect(await h.gateway.agentWait({ runId: slow.runId as string })).toMatchObject({
      status: "error",
      error: "run aborted",
    });
    expect(await h.gateway.agentWait({ runId: queued.runId as string })).toMatchObject({
      status: "error",
      error: "run aborted",
    });
    await h.clock.advance(20_000);
    const fresh = await h.gateway.receive(dm("new"));
    await h.gateway.agentWait({ runId: fresh.runId as string });
    const history = await h.gateway.chat.history({ sessionKey: "main" });
    expect(history.messages.map((m) => messageText(m))).toEqual(["new", "reply to new"]);
  });

  it("holds maxChildrenPerAgent and idempotency under concurrent calls", async () => {
    h = await harness(
      kind,
      {
        main: async (turn) => {
          if (turn.kind === "subagent") await turn.sleep(60_000);
          return "ok";
        },
      },
      { config: { agents: { defaults: { subagents: { maxChildrenPerAgent: 2 } } } } },
    );
    const spawns = await Promise.all(
      Array.from({ length: 5 }, () => h.gateway.callTool("main", "sessions_spawn", { task: "t" })),
    );
    expect(spawns.filter((s) => (s as { status: string }).status === "accepted")).toHaveLength(2);
    const receives = await Promise.all(
      Array.from({ length: 3 }, () =>
        h.gateway.receive(dm("once", { messageId: "m-1", peerId: "zed", senderId: "zed" })),
      ),
    );
    expect(new Set(receives.map((r) => r.runId)).size).toBe(1);
    const sends = await Promise.all(
      Array.from({ length: 3 }, () =>
        h.gateway.chat.send({ sessionKey: "agent:main:ops", message: "x", idempotencyKey: "same" }),
      ),
    );
    expect(new Set(sends.map((s) => s.runId)).size).toBe(1);
    expect(
      (await h.store.readMessages("agent:main:ops", { limit: 10 })).filter((m) => m.role === "user"),
    ).toHaveLength(1);
  });

  it("validates inbound fields and keys, and keeps reserved keys out", async () => {
    h = await harness(kind, { main: echo });
    const numeric = await h.gateway.receive(group("dev", "hi", { threadId: 42, messageId: 7 }));
    expect(numeric.sessionKey).toBe("agent:main:chat:group:dev:thread:42");
    const colon = await h.gateway.receive(group("dev", "hi", { threadId: "a:b" }));
    expect(colon.sessionKey).toBe("agent:main:chat:group:dev:thread:a_b");
    await expect(h.gateway.receive({ ...dm("x"), displayName: 5 as never })).rejects.toMatchObject({
      code: "invalid_params",
      field: "displayName",
    });
    await expect(h.gateway.callTool("global", "sessions_list", {})).rejects.toMatchObject({
      code: "invalid_params",
      field: "requesterKey",
    });
    await expect(
      h.gateway.agent({ message: "x", idempotencyKey: "r", sessionKey: "unknown" }),
    ).rejects.toMatchObject({ code: "invalid_params", field: "sessionKey" });
    expect(await h.store.getEntry("global")).toBeUndefined();
  });

  it("refuses nested spawns by depth (maxSpawnDepth), not only by the tool filter", async () => {
    let nested: unknown;
    const agent: ScriptedAgent = async (turn) => {
      if (turn.kind === "subagent" && turn.text === "outer")
        nested = await turn.callTool("sessions_spawn", { task: "inner" });
      return turn.kind === "subagent_announce" ? "ANNOUNCE_SKIP" : "done";
    };
    h = await harness(kind, { main: agent }, { config: { tools: { subagents: { tools: { deny: [] } } } } });
    await h.gateway.callTool("main", "sessions_spawn", { task: "outer" });
    await eventually(() =>
      expect(nested).toMatchObject({
        status: "forbidden",
        code: "spawn_depth_exceeded",
        error: expect.stringContaining("maxSpawnDepth"),
      }),
    );
    await h.close();
    nested = undefined;
    h = await harness(
      kind,
      { main: agent },
      {
        config: {
          tools: { subagents: { tools: { deny: [] } } },
          agents: { defaults: { subagents: { maxSpawnDepth: 2 } } },
        },
      },
    );
    await h.gateway.callTool("main", "sessions_spawn", { task: "outer" });
    await eventually(() => expect(nested).toMatchObject({ status: "accepted" }));
  });

  it("backs off exponentially between delivery attempts", async () => {
    h = await harness(kind, { main: echo }, { outbox: { baseDelayMs: 1000, maxAttempts: 5 } });
    const attempts: number[] = [];
    const deliver = h.channel.deliver.bind(h.channel);
    h.channel.deliver = (target, message, options) => {
      attempts.push(h.clock.now());
      return deliver(target, message, options);
    };
    h.channel.failNext(3);
    const { runId } = await h.gateway.receive(dm("hi"));
    await h.gateway.agentWait({ runId: runId as string });
    for (let i = 0; i < 20 && attempts.length < 4; i++) await h.clock.advance(1000);
    expect(attempts).toHaveLength(4);
    const gaps = attempts.slice(1).map((t, i) => t - (attempts[i] as number));
    expect(gaps[0]).toBeGreaterThanOrEqual(800);
    expect(gaps[1]).toBeGreaterThan(gaps[0] as number);
    expect(gaps[2]).toBeGreaterThan(gaps[1] as number);
    await eventually(() => expect(h.channel.sent).toHaveLength(1));
  });

  it("closes promptly even when an adapter never answers", async () => {
    h = await harness(kind, { main: echo }, { outbox: { attemptTimeoutMs: 50 } });
    h.channel.deliver = () => new Promise(() => {});
    const { runId } = await h.gateway.receive(dm("hi"));
    await h.gateway.agentWait({ runId: runId as string });
    await h.gateway.close({ drainMs: 100 });
  });

  it("delivers a sessions_send announce that a restart interrupted, once", async () => {
    let hold = true;
    const agents: Record<string, ScriptedAgent> = {
      main: async (turn) => {
        if (turn.kind === "announce") {
          while (hold) await turn.sleep(1000);
          return "announced after restart";
        }
        if (turn.kind === "ping_pong") return "REPLY_SKIP";
        return "reply";
      },
    };
    h = await harness(kind, agents, { config: { tools: { sessions: { visibility: "agent" } } } });
    await h.gateway.receive(dm("hi"));
    const ops = await h.gateway.receive(group("ops", "x"));
    await h.gateway.agentWait({ runId: ops.runId as string });
    const sent = (await h.gateway.callTool("main", "sessions_send", {
      sessionKey: ops.sessionKey,
      message: "q",
    })) as { runId: string };
    await eventually(async () =>
      expect((await h.store.listRunsByStatus(["running"])).some((r) => r.kind === "announce")).toBe(true),
    );
    hold = false;
    h = await h.restart();
    await eventually(async () => {
      const [d] = (await h.gateway.deliveries.list({ runId: sent.runId })).deliveries;
      expect(d).toMatchObject({ kind: "announce", status: "delivered", text: "announced after restart" });
    });
    expect(h.channel.sent.filter((s) => s.message.kind === "announce")).toHaveLength(1);
    expect((await h.store.getRun(sent.runId))?.followUpDone).toBe(true);
  });
});

describe("createGateway", () => {
  it("fails at start with a SessionsError naming the config path", () => {
    const runner = createScriptedRunner({ agents: {} });
    expect(() =>
      createGateway({
        runner,
        store: createMemoryStore(),
        config: { tools: { sessions: { visibility: "everyone" as never } } },
      }),
    ).toThrowError(expect.objectContaining({ code: "invalid_config", field: "tools.sessions.visibility" }));
    expect(() => createGateway({ runner: {} as never, store: createMemoryStore() })).toThrowError(
      expect.objectContaining({ code: "invalid_config", field: "runner" }),
    );
  });

  it("one run at a time per session: further messages queue in order", async () => {
    const order: string[] = [];
    const h = await harness("memory", {
      main: async (turn) => {
        order.push(`start ${turn.text}`);
        await turn.sleep(1000);
        order.push(`end ${turn.text}`);
        return turn.text;
      },
    });
    const a = await h.gateway.receive(dm("a"));
    const b = await h.gateway.receive(dm("b"));
    const c = await h.gateway.receive(group("other", "c"));
    await h.clock.advance(1000);
    await h.clock.advance(1000);
    await Promise.all([a, b, c].map((r) => h.gateway.agentWait({ runId: r.runId as string })));
    expect(order.filter((o) => o.endsWith(" a") || o.endsWith(" b"))).toEqual([
      "start a",
      "end a",
      "start b",
      "end b",
    ]);
    expect(order.indexOf("start c")).toBeLessThan(order.indexOf("end a"));
    await h.close();
  });
});
