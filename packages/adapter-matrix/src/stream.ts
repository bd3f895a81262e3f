import { randomUUID } from "node:crypto";
import type { ChannelStreamV1, SessionsError, StreamingMode } from "@sessions/core";
import type { MatrixClientLike } from "./client.js";
import { matrixRoomId, matrixThreadRoot } from "./events.js";

/** What the Matrix stream needs: the client's HTTP, how a message is sent and shaped, the pace, the error mapping. */
export interface MatrixStreamOptions {
  client: MatrixClientLike;
  intervalMs: number;
  defaultMode: StreamingMode;
  maxMessageLength: number;
  msgtype: string;
  /** Sends an `m.room.message` with this transaction id; the event id. */
  send(roomId: string, content: Record<string, unknown>, txnId: string): Promise<string>;
  /** The content of a message (in a thread when `threadRoot` is given). */
  messageContent(body: string, threadRoot: string | undefined): Record<string, unknown>;
  toError(error: unknown): SessionsError;
}

/** A fresh transaction id: each stream request is its own. */
const txn = () => `sessions.stream.${randomUUID()}`;

/**
 * Streams replies into Matrix: a message sent, replaced (`m.replace` edits, with a `* ` fallback body for clients
 * that do not show edits) as the reply grows, redacted when not needed. No one is ever mentioned.
 */
export function createMatrixStream(options: MatrixStreamOptions): ChannelStreamV1 {
  const mapped = async <T>(call: () => Promise<T>): Promise<T> => {
    try {
      return await call();
    } catch (error) {
      throw options.toError(error);
    }
  };
  return {
    defaultMode: options.defaultMode,
    intervalMs: options.intervalMs,
    maxMessageLength: options.maxMessageLength,
    post: (target, text) =>
      mapped(() => {
        const threadRoot = target.threadId === undefined ? undefined : matrixThreadRoot(target.threadId);
        return options.send(matrixRoomId(target.to), options.messageContent(text, threadRoot), txn());
      }),
    edit: (target, eventId, text) =>
      mapped(async () => {
        await options.send(
          matrixRoomId(target.to),
          {
            msgtype: options.msgtype,
            body: `* ${text}`,
            "m.mentions": {},
            "m.new_content": { msgtype: options.msgtype, body: text, "m.mentions": {} },
            "m.relates_to": { rel_type: "m.replace", event_id: eventId },
          },
          txn(),
        );
      }),
    remove: (target, eventId) =>
      mapped(async () => {
        const roomId = matrixRoomId(target.to);
        const path = `/rooms/${encodeURIComponent(roomId)}/redact/${encodeURIComponent(eventId)}/${encodeURIComponent(txn())}`;
        await options.client.http.authedRequest("PUT", path, undefined, {}).catch((error: unknown) => {
          // Already gone.
          if ((error as { httpStatus?: number } | undefined)?.httpStatus !== 404) throw error;
        });
      }),
  };
}
