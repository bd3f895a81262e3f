import { createHmac, randomUUID } from "node:crypto";
import type { IncomingMessage, Server } from "node:http";
import type { Duplex } from "node:stream";
import { type WebSocket, WebSocketServer } from "ws";

/** One Socket Mode envelope the fake sent, and whether the app acknowledged it. */
export interface SlackEnvelope {
  envelopeId: string;
  type: string;
  payload: Record<string, unknown>;
  acked: boolean;
}

/** The Socket Mode side of the fake: `apps.connections.open` tickets, the WebSocket link, envelopes and acks. */
export interface SocketModeHub {
  /** A one-use `wss://…/link` URL for `apps.connections.open`. */
  issueUrl(): string;
  readonly envelopes: SlackEnvelope[];
  /** Open Socket Mode connections. */
  connections(): number;
  /** Resolves once at least one app is connected (after `hello`). */
  waitForConnection(timeoutMs?: number): Promise<void>;
  /** Sends an envelope to the newest connection; resolves with the app's ack, rejects when none comes in time. */
  send(payload: Record<string, unknown>, type?: string): Promise<SlackEnvelope>;
  /** Asks every connected app to reconnect (`{"type":"disconnect"}`), as Slack does when it recycles a link. */
  disconnectAll(reason?: string): void;
  /** Closes every Socket Mode connection (the fake Slack's `close` calls it). */
  close(): Promise<void>;
}

/**
 * Serves Slack's Socket Mode link on the fake's HTTP server (`/link`): a connection opened with a ticket from
 * `apps.connections.open` gets `hello`, envelopes (`events_api`, …) with an `envelope_id`, and must answer each with
 * `{"envelope_id": …}`.
 */
export function createSocketModeHub(
  server: Server,
  origin: () => string,
  options: { appId: string; ackTimeoutMs: number },
): SocketModeHub {
  const wss = new WebSocketServer({ noServer: true });
  const tickets = new Set<string>();
  const open: WebSocket[] = [];
  const envelopes: SlackEnvelope[] = [];
  const pending = new Map<string, () => void>();
  const waiters = new Set<() => void>();

  server.on("upgrade", (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    const ticket = url.searchParams.get("ticket") ?? "";
    if (url.pathname !== "/link/" || !tickets.delete(ticket)) {
      socket.end("HTTP/1.1 401 Unauthorized\r\n\r\n");
      return;
    }
    wss.handleUpgrade(req, socket, head, (ws) => {
      open.push(ws);
      ws.on("message", (data, isBinary) => {
        if (isBinary) return;
        let message: { envelope_id?: unknown };
        try {
          message = JSON.parse(String(data)) as { envelope_id?: unknown };
        } catch {
          return;
        }
        if (typeof message.envelope_id === "string") pending.get(message.envelope_id)?.();
      });
      ws.on("close", () => {
        const at = open.indexOf(ws);
        if (at >= 0) open.splice(at, 1);
      });
      ws.send(
        JSON.stringify({
          type: "hello",
          num_connections: open.length,
          debug_info: { host: "applink-fake-1", build_number: 1, approximate_connection_time: 18060 },
          connection_info: { app_id: options.appId },
        }),
      );
      for (const wake of [...waiters]) wake();
    });
  });

  function waitForConnection(timeoutMs = options.ackTimeoutMs): Promise<void> {
    if (open.length > 0) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const done = () => {
        clearTimeout(timer);
        waiters.delete(done);
        resolve();
      };
      const timer = setTimeout(() => {
        waiters.delete(done);
        reject(new Error("fake Slack: no Socket Mode connection"));
      }, timeoutMs);
      waiters.add(done);
    });
  }

  return {
    issueUrl() {
      const ticket = randomUUID();
      tickets.add(ticket);
      return `${origin().replace(/^http/, "ws")}/link/?ticket=${ticket}&app_id=${options.appId}`;
    },
    envelopes,
    connections: () => open.length,
    waitForConnection,
    async send(payload, type = "events_api") {
      await waitForConnection();
      const ws = open[open.length - 1] as WebSocket;
      const envelope: SlackEnvelope = { envelopeId: randomUUID(), type, payload, acked: false };
      envelopes.push(envelope);
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => {
          pending.delete(envelope.envelopeId);
          reject(new Error(`fake Slack: envelope ${envelope.envelopeId} was not acknowledged`));
        }, options.ackTimeoutMs);
        pending.set(envelope.envelopeId, () => {
          clearTimeout(timer);
          pending.delete(envelope.envelopeId);
          envelope.acked = true;
          resolve();
        });
        ws.send(
          JSON.stringify({
            envelope_id: envelope.envelopeId,
            payload,
            type,
            accepts_response_payload: false,
            retry_attempt: 0,
            retry_reason: "",
          }),
        );
      });
      return envelope;
    },
    disconnectAll(reason = "refresh_requested") {
      for (const ws of open) ws.send(JSON.stringify({ type: "disconnect", reason }));
    },
    async close() {
      // Apps that are stopping have sent their close frame a moment ago: let them finish the handshake, then close
      // the rest from this side, and cut off whatever has not closed after a second.
      const closed = (ws: WebSocket, ms: number) =>
        new Promise<boolean>((resolve) => {
          if (ws.readyState === ws.CLOSED) return resolve(true);
          const timer = setTimeout(() => resolve(false), ms);
          ws.once("close", () => {
            clearTimeout(timer);
            resolve(true);
          });
        });
      await Promise.all(
        [...open].map(async (ws) => {
          if (await closed(ws, 250)) return;
          if (ws.readyState === ws.OPEN) ws.close(1001, "fake Slack is closing");
          if (!(await closed(ws, 1000))) ws.terminate();
        }),
      );
      await new Promise<void>((resolve) => wss.close(() => resolve()));
    },
  };
}

/** `v0=<hex>`: Slack's request signature over `v0:<timestamp>:<body>` with the app's signing secret. */
export function signSlackRequest(signingSecret: string, timestamp: number, body: string): string {
  return `v0=${createHmac("sha256", signingSecret).update(`v0:${timestamp}:${body}`).digest("hex")}`;
}

/**
 * POSTs an Events API body to an app's request URL as Slack does: JSON, `x-slack-request-timestamp` and a
 * `x-slack-signature` made with `signingSecret` (a wrong secret or an old timestamp tests the app's verification).
 */
export async function postSlackEvent(
  url: string,
  body: Record<string, unknown>,
  options: { signingSecret: string; timestamp?: number | undefined; retryNum?: number | undefined },
): Promise<{ status: number; body: string }> {
  const raw = JSON.stringify(body);
  const timestamp = options.timestamp ?? Math.floor(Date.now() / 1000);
  const res = await fetch(url, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "x-slack-request-timestamp": String(timestamp),
      "x-slack-signature": signSlackRequest(options.signingSecret, timestamp, raw),
      ...(options.retryNum === undefined
        ? {}
        : { "x-slack-retry-num": String(options.retryNum), "x-slack-retry-reason": "http_timeout" }),
    },
    body: raw,
  });
  return { status: res.status, body: await res.text() };
}
