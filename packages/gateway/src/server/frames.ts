import { type Logger, PRE_CONNECT_MAX_PAYLOAD, RequestFrameSchema, type WireError } from "@sessions/core";
import type { RawData } from "ws";
import type { Connection, FrameWriter } from "./connection.js";
import { wireError } from "./wire-errors.js";

export interface FrameLimits {
  /** Largest frame after `connect`; before it, PRE_CONNECT_MAX_PAYLOAD. */
  maxPayload: number;
  /** Requests one connection may have in flight. */
  maxInFlight: number;
}

export interface FrameHandlers {
  out: FrameWriter;
  logger: Logger;
  connect(conn: Connection, id: string, params: unknown): void;
  request(conn: Connection, id: string, method: string, params: unknown): Promise<void>;
}

/** The request id of a frame too large to parse, read from its first bytes (`{"type":"req","id":"…"`). */
function peekId(data: RawData): string {
  const head = (Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data as ArrayBuffer))
    .subarray(0, 512)
    .toString("utf8");
  const match = /"id"\s*:\s*"((?:[^"\\]|\\.){1,256})"/.exec(head);
  return match?.[1] ?? "";
}

function sizeOf(data: RawData): number {
  if (Array.isArray(data)) return data.reduce((n, b) => n + b.length, 0);
  return data instanceof ArrayBuffer ? data.byteLength : data.length;
}

/**
 * Reads one connection's frames (docs/protocol.md, transport): size caps, text only, valid request frames, `connect`
 * first and once, a bounded number of requests in flight. A socket that keeps sending garbage before connecting
 * is closed.
 */
export function createFrameReader(limits: FrameLimits, handlers: FrameHandlers) {
  const { out, logger } = handlers;

  function reject(conn: Connection, id: string, error: WireError): void {
    if (!conn.connected) conn.invalidBeforeConnect++;
    out.error(conn, id, error);
  }

  function read(conn: Connection, data: RawData, isBinary: boolean): void {
    const size = sizeOf(data);
    const cap = conn.connected ? limits.maxPayload : PRE_CONNECT_MAX_PAYLOAD;
    if (size > cap) {
      out.error(
        conn,
        peekId(data),
        wireError("INVALID_REQUEST", "PAYLOAD_TOO_LARGE", `frame of ${size} bytes exceeds ${cap}`),
      );
      if (!conn.connected) conn.ws.close(1009, "pre-connect frame too large");
      return;
    }
    if (isBinary) {
      reject(conn, "", wireError("INVALID_REQUEST", "INVALID_FRAME", "binary frames are not supported"));
      return;
    }
    let json: unknown;
    try {
      json = JSON.parse(String(data));
    } catch {
      reject(conn, "", wireError("INVALID_REQUEST", "MALFORMED_FRAME", "frame is not valid JSON"));
      return;
    }
    const frame = RequestFrameSchema.safeParse(json);
    if (!frame.success) {
      const id =
        typeof (json as { id?: unknown })?.id === "string" ? ((json as { id: string }).id ?? "") : "";
      const issue = frame.error.issues[0];
      const where = issue?.path.join(".") || "frame";
      reject(
        conn,
        id,
        wireError("INVALID_REQUEST", "INVALID_FRAME", `invalid frame: ${where}: ${issue?.message}`),
      );
      return;
    }
    const { id, method, params } = frame.data;
    if (!conn.connected) {
      if (method !== "connect") {
        out.error(
          conn,
          id,
          wireError("INVALID_REQUEST", "NOT_CONNECTED", "the first request must be connect"),
        );
        conn.ws.close(1008, "connect first");
        return;
      }
      handlers.connect(conn, id, params);
      return;
    }
    if (method === "connect") {
      out.error(conn, id, wireError("INVALID_REQUEST", "ALREADY_CONNECTED", "already connected"));
      return;
    }
    if (conn.inFlight >= limits.maxInFlight) {
      out.error(
        conn,
        id,
        wireError("UNAVAILABLE", "TOO_MANY_REQUESTS", `more than ${limits.maxInFlight} requests in flight`, {
          retryable: true,
          retryAfterMs: 1000,
        }),
      );
      return;
    }
    conn.inFlight++;
    void handlers
      .request(conn, id, method, params)
      .catch((error) => logger.error("request handler crashed", { method, error: String(error) }))
      .finally(() => {
        conn.inFlight--;
      });
  }

  return function onMessage(conn: Connection, data: RawData, isBinary: boolean): void {
    if (!conn.connected && conn.invalidBeforeConnect >= 3) return;
    read(conn, data, isBinary);
    if (!conn.connected && conn.invalidBeforeConnect >= 3)
      conn.ws.close(1008, "invalid frames before connect");
  };
}
