import { chunkMessage, SessionsError } from "@sessions/core";
import type { ChannelAdapterV1, DeliveryReceipt, DeliveryTarget } from "../adapter.js";
import type { DeliveryRecord, StreamPreview } from "../store/types.js";
import { previewTarget, sameTarget } from "./streams.js";

/** A message to edit that is gone (deleted in the chat): the reply's piece is posted instead. */
const gone = (error: unknown) => SessionsError.isInstance(error) && error.code === "invalid_params";

/**
 * Delivers a reply that was streamed (`DeliveryRecord.stream`): the streamed messages are edited into the reply,
 * cut as they were (`maxChars`), unless one already shows its piece (`shown`); the pieces beyond them are posted;
 * the messages left over removed. A retry of the
 * same delivery resumes after the last piece that went out (`progress`, by delivery id), so none is posted twice.
 * When the reply goes elsewhere than it streamed (its target changed), the streamed messages are removed and the
 * reply is delivered as usual. The receipt lists the messages that show the reply.
 */
export async function deliverStreamed(
  adapter: ChannelAdapterV1,
  record: DeliveryRecord & { stream: StreamPreview },
  target: DeliveryTarget,
  progress: Map<string, string[]>,
): Promise<DeliveryReceipt> {
  const { stream: preview } = record;
  const ops = adapter.stream;
  const message = { text: record.text, kind: record.kind, sessionKey: record.sessionKey };
  const options = { idempotencyKey: record.idempotencyKey };
  if (ops === undefined) {
    // The adapter no longer streams (a new version, say): its messages cannot be edited; the reply goes as usual.
    return record.text === "" ? { messageIds: [] } : adapter.deliver(target, message, options);
  }
  const at = previewTarget(preview);
  if (!sameTarget(at, target)) {
    for (const id of preview.messageIds) await ops.remove(at, id);
    return record.text === "" ? { messageIds: [] } : adapter.deliver(target, message, options);
  }
  const parts = chunkMessage(record.text, preview.maxChars);
  const done = progress.get(record.id) ?? [];
  try {
    for (let i = done.length; i < parts.length; i++) {
      const part = parts[i] as string;
      const streamed = preview.messageIds[i];
      let id: string | undefined;
      if (streamed !== undefined && preview.shown?.[i] === part) id = streamed;
      else if (streamed !== undefined) {
        try {
          await ops.edit(at, streamed, part);
          id = streamed;
        } catch (error) {
          if (!gone(error)) throw error;
        }
      }
      done.push(id ?? (await ops.post(at, part)));
      progress.set(record.id, done);
    }
    for (const extra of preview.messageIds.slice(parts.length)) await ops.remove(at, extra);
  } catch (error) {
    // Not retried after a refusal: its progress goes.
    if (gone(error)) progress.delete(record.id);
    throw error;
  }
  progress.delete(record.id);
  return { messageIds: done };
}
