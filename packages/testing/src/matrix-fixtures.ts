import dmText from "./fixtures/matrix/dm-text.json";
import edit from "./fixtures/matrix/edit.json";
import emote from "./fixtures/matrix/emote.json";
import encrypted from "./fixtures/matrix/encrypted.json";
import image from "./fixtures/matrix/image.json";
import otherBotNotice from "./fixtures/matrix/other-bot-notice.json";
import reply from "./fixtures/matrix/reply.json";
import roomText from "./fixtures/matrix/room-text.json";
import threadReply from "./fixtures/matrix/thread-reply.json";

/**
 * Recorded, sanitised Matrix timeline events as `/sync` delivers them (ids, names and server replaced). Their
 * users match the world of `createFakeMatrixHomeserver`: the bot `@sessions-bot:fake.local`, humans
 * `@alice:fake.local` and `@bob:fake.local`, another bot `@ci-bot:fake.local`.
 */
const FIXTURES = {
  /** A plain `m.text` message from Alice in a group room. */
  "room-text": roomText,
  /** A plain `m.text` message from Alice in her direct chat with the bot. */
  "dm-text": dmText,
  /** Bob's message inside a thread (`m.relates_to.rel_type: "m.thread"`, with the reply fallback). */
  "thread-reply": threadReply,
  /** Alice's rich reply (`m.in_reply_to`) to one of the bot's messages, with the quoted fallback in `body`. */
  reply,
  /** Alice's edit (`m.replace`) of her earlier message, with `m.new_content`. */
  edit,
  /** An `m.notice` from another bot ("CI Bot"): automated messages bots must not answer. */
  "other-bot-notice": otherBotNotice,
  /** An `m.emote` ("/me waves at the bot"). */
  emote,
  /** An `m.image` upload: its `body` is the file name, not something Alice said. */
  image,
  /** An end-to-end encrypted (`m.room.encrypted`) event, which a bot without crypto cannot read. */
  encrypted,
} as const;

/**
 * The recorded, sanitised Matrix events {@link matrixEvent} can build (`room-text`, `dm-text`, `thread-reply`,
 * `edit`, …).
 */
export type MatrixFixtureName = keyof typeof FIXTURES;

/** A Matrix event as a test hands it to the fake homeserver (`event_id` and `origin_server_ts` optional). */
export interface MatrixEventInput {
  type: string;
  sender: string;
  content: Record<string, unknown>;
  state_key?: string | undefined;
  event_id?: string | undefined;
  origin_server_ts?: number | undefined;
  unsigned?: Record<string, unknown> | undefined;
}

/**
 * A fresh copy of a recorded event without its `event_id` (the fake homeserver assigns a new one), optionally
 * with `sender` or `type` replaced and `content` fields overridden (`{ content: { body: "hi" } }`).
 */
export function matrixEvent(
  name: MatrixFixtureName,
  overrides: {
    sender?: string | undefined;
    type?: string | undefined;
    content?: Record<string, unknown> | undefined;
  } = {},
): MatrixEventInput {
  const base = structuredClone(FIXTURES[name]) as MatrixEventInput;
  delete base.event_id;
  delete base.unsigned;
  delete base.origin_server_ts;
  return {
    ...base,
    ...(overrides.sender === undefined ? {} : { sender: overrides.sender }),
    ...(overrides.type === undefined ? {} : { type: overrides.type }),
    content: { ...base.content, ...overrides.content },
  };
}

/** The `m.relates_to` of a message posted in the thread rooted at `rootEventId` (what Element sends). */
export function matrixThreadRelation(rootEventId: string): Record<string, unknown> {
  return {
    rel_type: "m.thread",
    event_id: rootEventId,
    is_falling_back: true,
    "m.in_reply_to": { event_id: rootEventId },
  };
}
