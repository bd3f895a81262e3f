import { randomUUID } from "node:crypto";
import type { AddressInfo } from "node:net";
import { type WebSocket, WebSocketServer } from "ws";

/**
 * A stand-in for an OpenClaw gateway (the outside world, for tests): it speaks OpenClaw's shapes where they differ
 * from ours — `hello-ok` without our capabilities, `chat` events with `status` states and the message as content
 * parts, history messages with `timestamp` and `__openclaw.seq` (no `ts`/`seq`), a `sessions.patch` entry without
 * `key`, and `agent` refusing `spawnedBy`. Shapes follow OpenClaw's published protocol schema (2026.9.x).
 */
export interface FakeOpenClawGateway {
  url: string;
  /** Every request received, in order. */
  requests: { method: string; params: Record<string, unknown> }[];
  /** Sends a `chat` event to every connection (its `seq` per connection, as OpenClaw does). */
  chat(payload: Record<string, unknown>): void;
  close(): Promise<void>;
}

const TOKEN = "openclaw-token";

export async function startFakeOpenClawGateway(): Promise<FakeOpenClawGateway & { token: string }> {
  const wss = new WebSocketServer({ host: "127.0.0.1", port: 0 });
  await new Promise<void>((resolve) => wss.once("listening", () => resolve()));
  const requests: FakeOpenClawGateway["requests"] = [];
  const seqs = new Map<WebSocket, number>();
  const send = (ws: WebSocket, frame: unknown) => ws.send(JSON.stringify(frame));
  const event = (ws: WebSocket, name: string, payload: unknown) => {
    const seq = (seqs.get(ws) ?? 0) + 1;
    seqs.set(ws, seq);
    send(ws, { type: "event", event: name, payload, seq });
  };
  const answer = (method: string, params: Record<string, unknown>) => {
    switch (method) {
      case "chat.send":
        return { ok: true, payload: { runId: params.idempotencyKey, status: "started" } };
      case "chat.history":
        return {
          ok: true,
          payload: {
            sessionKey: "agent:main:main",
            sessionId: "s-1",
            messages: [
              {
                role: "user",
                content: [{ type: "text", text: "hi" }],
                timestamp: 1_700_000_000_000,
                __openclaw: { seq: 1, id: "m-1" },
              },
              {
                role: "assistant",
                content: [{ type: "text", text: "hello" }],
                timestamp: 1_700_000_001_000,
                __openclaw: { seq: 2, id: "m-2", runId: "r-1" },
              },
            ],
          },
        };
      case "sessions.patch":
        return {
          ok: true,
          payload: {
            ok: true,
            key: "agent:main:main",
            entry: { sessionId: "s-1", updatedAt: 1_700_000_002_000, label: params.label },
          },
        };
      case "sessions.subscribe":
        return { ok: true, payload: { subscribed: true } };
      case "agent.wait":
        return { ok: true, payload: { runId: params.runId, status: "timeout" } };
      case "agent":
        if ("spawnedBy" in params) {
          return {
            ok: false,
            error: {
              code: "INVALID_REQUEST",
              message: "invalid agent params: at root: unexpected property 'spawnedBy'",
            },
          };
        }
        return {
          ok: true,
          payload: { runId: params.idempotencyKey, status: "accepted", acceptedAt: 1_700_000_003_000 },
        };
      default:
        return { ok: false, error: { code: "INVALID_REQUEST", message: `unknown method: ${method}` } };
    }
  };
  wss.on("connection", (ws) => {
    event(ws, "connect.challenge", { nonce: randomUUID(), ts: Date.now() });
    ws.on("message", (data) => {
      const frame = JSON.parse(String(data)) as {
        id: string;
        method: string;
        params?: Record<string, unknown> | undefined;
      };
      const params = frame.params ?? {};
      requests.push({ method: frame.method, params });
      if (frame.method === "connect") {
        const auth = params.auth as { token?: string | undefined } | undefined;
        if (auth?.token !== TOKEN) {
          send(ws, {
            type: "res",
            id: frame.id,
            ok: false,
            error: {
              code: "INVALID_REQUEST",
              message: "unauthorized",
              details: { code: "AUTH_TOKEN_MISMATCH" },
            },
          });
          ws.close(1008, "unauthorized");
          return;
        }
        send(ws, {
          type: "res",
          id: frame.id,
          ok: true,
          payload: {
            type: "hello-ok",
            protocol: 4,
            server: { version: "2026.9.6", connId: randomUUID() },
            features: {
              methods: ["chat.send", "chat.history", "sessions.patch", "agent", "agent.wait"],
              events: ["chat", "agent", "tick"],
            },
            snapshot: {
              presence: [{ ts: Date.now(), host: "gateway", mode: "gateway" }],
              health: { ok: true, ts: Date.now() },
              stateVersion: { presence: 1, health: 1 },
              uptimeMs: 12_345,
              sessionDefaults: { defaultAgentId: "main", mainKey: "main", mainSessionKey: "agent:main:main" },
            },
            auth: { role: "operator", scopes: ["operator.read", "operator.write", "operator.admin"] },
            policy: { maxPayload: 26_214_400, maxBufferedBytes: 52_428_800, tickIntervalMs: 30_000 },
          },
        });
        return;
      }
      send(ws, { type: "res", id: frame.id, ...answer(frame.method, params) });
    });
    ws.on("close", () => seqs.delete(ws));
  });
  const { port } = wss.address() as AddressInfo;
  return {
    url: `ws://127.0.0.1:${port}`,
    token: TOKEN,
    requests,
    chat(payload) {
      for (const ws of wss.clients) event(ws, "chat", payload);
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const ws of wss.clients) ws.terminate();
        wss.close(() => resolve());
      }),
  };
}
