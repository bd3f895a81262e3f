import { randomUUID } from "node:crypto";
import type { Duplex } from "node:stream";
import type { Logger, WireError } from "@sessions/core";
import { WebSocket } from "ws";
import { payloadJson } from "../known-json.js";
import type { Caller } from "./auth.js";
import { type Interest, newInterest } from "./event-routing.js";
import { wireError } from "./wire-errors.js";

/** One WebSocket client: its handshake state, who it is, its event `seq` and what events it asked for. */
export interface Connection extends Caller {
  readonly id: string;
  readonly ws: WebSocket;
  /** The socket under `ws`: the frame writer corks it, so that a tick's frames leave in one write. */
  readonly socket?: Duplex | undefined;
  /** Corked until the end of this turn of the event loop (see `createFrameWriter`). */
  corked: boolean;
  connected: boolean;
  /** Its socket closed: it is out of every routing table and must not be put back. */
  closed: boolean;
  /** The last event `seq` sent on this connection (docs/protocol.md: per connection, increasing). */
  seq: number;
  inFlight: number;
  invalidBeforeConnect: number;
  connectTimer?: ReturnType<typeof setTimeout> | undefined;
  readonly interest: Interest;
}

export function newConnection(ws: WebSocket, socket?: Duplex): Connection {
  return {
    id: randomUUID(),
    ws,
    socket,
    corked: false,
    connected: false,
    closed: false,
    seq: 0,
    scopes: [],
    inFlight: 0,
    invalidBeforeConnect: 0,
    interest: newInterest(),
  };
}

/** What one connection's cork may hold before it is written out (and the largest frame worth holding). */
const CORK_BYTES = 64 * 1024;

/**
 * Writes frames to connections, within the server's output limits. Frames written during one turn of the event
 * loop leave together: the first corks the connection's socket and the turn's end (`setImmediate`) uncorks every
 * corked socket, so that 500 pipelined requests cost a few writes, not one system call per frame. Order is kept:
 * a socket's frames are written in the order they were sent.
 */
export interface FrameWriter {
  ok(conn: Connection, id: string, payload: unknown): void;
  error(conn: Connection, id: string, error: WireError): void;
  event(conn: Connection, event: string, payload: unknown): void;
  /** One event to many connections: the payload is serialised once, only `seq` differs between copies. */
  fanOut(conns: Iterable<Connection>, event: string, payload: unknown): void;
  /** Writes what `conn` holds now, without waiting for the turn's end (the handshake: nothing else is coming). */
  flush(conn: Connection): void;
}

export function createFrameWriter(limits: {
  logger: Logger;
  maxBufferedBytes: number;
  maxResponseBytes: number;
}): FrameWriter {
  const { logger, maxBufferedBytes, maxResponseBytes } = limits;
  const corked: Connection[] = [];
  /** Writes out what `conn`'s cork holds, if it holds any (a connection is listed again when corked again). */
  const release = (conn: Connection) => {
    if (!conn.corked) return;
    conn.corked = false;
    conn.socket?.uncork();
  };
  const uncorkAll = () => {
    for (const conn of corked.splice(0)) release(conn);
  };
  function raw(conn: Connection, text: string): void {
    if (conn.ws.readyState !== WebSocket.OPEN) return;
    // Counts what waits in the cork too: a consumer is slow by what it has not taken, however it was written.
    if (conn.ws.bufferedAmount > maxBufferedBytes) {
      logger.warn("dropping slow consumer", { connId: conn.id, buffered: conn.ws.bufferedAmount });
      conn.ws.terminate();
      return;
    }
    const { socket } = conn;
    if (socket !== undefined) {
      // A cork holds at most about CORK_BYTES: more leaves at once, and a large frame is not held at all.
      if (socket.writableLength + text.length > CORK_BYTES) release(conn);
      if (!conn.corked && text.length < CORK_BYTES) {
        conn.corked = true;
        socket.cork();
        if (corked.push(conn) === 1) setImmediate(uncorkAll);
      }
    }
    conn.ws.send(text);
  }
  const error = (conn: Connection, id: string, err: WireError) =>
    raw(conn, JSON.stringify({ type: "res", id, ok: false, error: err }));
  const eventPrefix = (event: string, payload: unknown) =>
    `{"type":"event","event":${JSON.stringify(event)},"payload":${JSON.stringify(payload ?? null)},"seq":`;
  return {
    ok(conn, id, payload) {
      // As JSON.stringify({ type, id, ok, payload }), with the payload's known parts taken as they are.
      const body = payloadJson(payload);
      const head = `{"type":"res","id":${JSON.stringify(id)},"ok":true`;
      const text = body === undefined ? `${head}}` : `${head},"payload":${body}}`;
      if (text.length <= maxResponseBytes) return raw(conn, text);
      error(
        conn,
        id,
        wireError(
          "INVALID_REQUEST",
          "PAYLOAD_TOO_LARGE",
          `response of ${text.length} bytes exceeds ${maxResponseBytes}: ask for a smaller page (limit)`,
        ),
      );
    },
    error,
    event(conn, event, payload) {
      raw(conn, `${eventPrefix(event, payload)}${++conn.seq}}`);
    },
    flush: release,
    fanOut(conns, event, payload) {
      let prefix: string | undefined;
      for (const conn of conns) {
        if (!conn.connected || conn.boundRequester !== undefined) continue;
        prefix ??= eventPrefix(event, payload);
        raw(conn, `${prefix}${++conn.seq}}`);
      }
    },
  };
}
