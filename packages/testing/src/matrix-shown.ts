/** One of the bot's messages as its room shows it now (see `FakeMatrixHomeserver.shown`). */
export interface MatrixShownMessage {
  eventId: string;
  /** The body of its latest `m.replace` edit, or its own. */
  body: string;
  /** How many `m.replace` edits the bot sent of it. */
  edits: number;
}

/** What `shownMessages` reads of an event the bot sent (`MatrixSentEvent` of fake-matrix.ts). */
interface SentEvent {
  roomId: string;
  eventId: string;
  type: string;
  content: Record<string, unknown>;
}

/**
 * The bot's `m.room.message` events in `roomId` as a client shows them, oldest first: each with its latest
 * `m.replace` edit applied (an edit applies to an earlier message of the bot's that is not an edit itself, and is
 * not listed), redacted ones (and edits of them) gone.
 */
export function shownMessages(
  sent: readonly SentEvent[],
  redacted: ReadonlySet<string>,
  roomId: string,
): MatrixShownMessage[] {
  const messages = new Map<string, MatrixShownMessage>();
  for (const event of sent) {
    if (event.roomId !== roomId || event.type !== "m.room.message" || redacted.has(event.eventId)) continue;
    const relation = event.content["m.relates_to"] as { rel_type?: unknown; event_id?: unknown } | undefined;
    if (relation?.rel_type === "m.replace") {
      const original = messages.get(String(relation.event_id));
      const replacement = event.content["m.new_content"] as { body?: unknown } | undefined;
      if (original !== undefined && typeof replacement?.body === "string") {
        original.body = replacement.body;
        original.edits++;
      }
      continue;
    }
    const body = typeof event.content.body === "string" ? event.content.body : "";
    messages.set(event.eventId, { eventId: event.eventId, body, edits: 0 });
  }
  return [...messages.values()];
}
