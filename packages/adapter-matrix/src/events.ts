import { SessionsError } from "@sessions/core";

/** What an `m.relates_to` says about a message. */
export interface MatrixRelation {
  /** `m.thread`, `m.replace`, `m.annotation`, … */
  relType?: string | undefined;
  /** The thread root (`m.thread`) or the edited event (`m.replace`). */
  eventId?: string | undefined;
  /** The event this message replies to (`m.in_reply_to`). */
  inReplyTo?: string | undefined;
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === "object" && !Array.isArray(value);

/**
 * Reads the `m.relates_to` of a message's content: the thread it belongs to, the event it edits or the event it
 * replies to. Anything malformed or absent reads as "no relation"; it never throws.
 *
 * @example
 * ```ts
 * import { relationOf } from "@sessions/adapter-matrix";
 *
 * relationOf({ body: "hi", "m.relates_to": { rel_type: "m.thread", event_id: "$root" } });
 * // → { relType: "m.thread", eventId: "$root" }
 * ```
 */
export function relationOf(content: Record<string, unknown>): MatrixRelation {
  const relates = content["m.relates_to"];
  if (!isRecord(relates)) return {};
  const relation: MatrixRelation = {};
  if (typeof relates.rel_type === "string") relation.relType = relates.rel_type;
  if (typeof relates.event_id === "string") relation.eventId = relates.event_id;
  const reply = relates["m.in_reply_to"];
  if (isRecord(reply) && typeof reply.event_id === "string") relation.inReplyTo = reply.event_id;
  return relation;
}

/**
 * Removes the quoted fallback that clients put in front of a rich reply's `body` (`> <@user> quoted…` lines, then
 * an empty line). Text that does not start with such a block comes back unchanged.
 */
export function stripReplyFallback(body: string): string {
  if (!body.startsWith(">")) return body;
  const lines = body.split("\n");
  let i = 0;
  while (i < lines.length && (lines[i] as string).startsWith(">")) i++;
  if (i === lines.length || lines[i] !== "") return body;
  return lines.slice(i + 1).join("\n");
}

/** Message types whose `body` is a file name unless a `filename` field says the body is a caption. */
const MEDIA = new Set(["m.image", "m.file", "m.audio", "m.video"]);

/**
 * The text a person said in an `m.room.message`, or why there is none: `m.text` and `m.emote` bodies, media
 * captions (Matrix 1.10: `body` ≠ `filename`); `m.notice` is what bots send, so it is never answered.
 */
export function messageText(
  content: Record<string, unknown>,
): { text: string } | { ignored: "notice" | "no text" | "unsupported msgtype" } {
  const { msgtype, body } = content;
  if (typeof body !== "string") return { ignored: "no text" };
  if (msgtype === "m.notice") return { ignored: "notice" };
  let text: string | undefined;
  if (msgtype === "m.text" || msgtype === "m.emote") text = body;
  else if (typeof msgtype === "string" && MEDIA.has(msgtype)) {
    if (typeof content.filename !== "string" || content.filename === body) return { ignored: "no text" };
    text = body;
  } else return { ignored: "unsupported msgtype" };
  if (relationOf(content).inReplyTo !== undefined) text = stripReplyFallback(text);
  return text.trim() === "" ? { ignored: "no text" } : { text };
}

/**
 * A delivery target's `to` as a Matrix room id: the room id itself, or with a peer-kind prefix (`group:!abc:example.org`
 * from a key-derived announce target, `room:`, `channel:`).
 * @throws SessionsError `invalid_params` (field `to`) for anything that is not a room id.
 */
export function matrixRoomId(to: string): string {
  const id = String(to ?? "")
    .trim()
    .replace(/^(group|channel|room):/, "");
  if (!/^![^\s/]+$/.test(id)) {
    throw new SessionsError("invalid_params", `Matrix delivery needs a room id (!…), got "${to}"`, {
      field: "to",
    });
  }
  return id;
}

/**
 * A thread id as the adapter hands it out: the thread root's event id (`$…`).
 * @throws SessionsError `invalid_params` (field `threadId`) otherwise.
 */
export function matrixThreadRoot(threadId: string): string {
  const id = threadId.trim();
  if (!/^\$[^\s/]+$/.test(id)) {
    throw new SessionsError(
      "invalid_params",
      `Matrix thread ids are root event ids ($…), got "${threadId}"`,
      {
        field: "threadId",
      },
    );
  }
  return id;
}
