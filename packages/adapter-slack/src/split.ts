import { escapeMrkdwn } from "./mrkdwn.js";

/**
 * The text Slack shows for one message is best kept under 4,000 characters: longer messages are cut or collapsed
 * by clients, and Slack truncates at 40,000. Replies are split at this size.
 */
export const SLACK_MAX_MESSAGE_LENGTH = 4000;

/** One cut of the escaped text: the slice itself, and the code fence repair around it when it is sent. */
export interface SlackPiece {
  /** A slice of the escaped text; the slices of a plan, joined, are exactly the escaped text. */
  text: string;
  /** The slice starts inside a code block cut in two: the message reopens it (a "```" line first). */
  reopen: boolean;
  /** The slice ends inside a code block: the message closes it ("```" last), the next one reopens it. */
  close: boolean;
  /** Nothing but whitespace (a run longer than a message, or the text's tail): not sent, as Slack refuses it. */
  blank: boolean;
}

const FENCE = "```";
const REOPEN = `${FENCE}\n`;

function fences(text: string): number {
  return text.split(FENCE).length - 1;
}

/** Where to cut `rest` so the slice holds at most `room` characters: a paragraph, line or word end when one is near. */
function cutAt(rest: string, room: number): number {
  const window = rest.slice(0, room);
  const half = room / 2;
  let cut = -1;
  for (const boundary of ["\n\n", "\n", " "]) {
    const at = window.lastIndexOf(boundary);
    // The boundary stays with the slice it ends, so nothing is dropped at the cut.
    if (at >= 0 && at + boundary.length >= half) {
      cut = at + boundary.length;
      break;
    }
  }
  if (cut <= 0) cut = room;
  // Never inside an entity (`&amp;`, `&lt;`, `&gt;`: every `&` of escaped text starts one).
  const amp = rest.lastIndexOf("&", cut - 1);
  if (amp >= 0 && amp > cut - 5 && rest.indexOf(";", amp) >= cut) cut = amp;
  // Never between the halves of a surrogate pair.
  const code = rest.charCodeAt(cut - 1);
  if (code >= 0xd800 && code <= 0xdbff) cut--;
  // Never inside a run of backticks (it may be a fence).
  let run = cut;
  while (run > 0 && rest[run - 1] === "`" && rest[run] === "`") run--;
  if (run > 0) cut = run;
  return Math.max(1, cut);
}

/**
 * How `text` is cut into Slack messages of at most `limit` characters each, after mrkdwn escaping: at paragraph,
 * line or word ends (the whitespace stays at the end of the earlier message), never inside an entity, a surrogate
 * pair or a run of backticks. The slices, joined, are exactly `escapeMrkdwn(text)`. A code block cut in two is
 * closed at the end of one message and reopened at the start of the next, so both render as code.
 */
export function planSlackMessages(text: string, limit: number = SLACK_MAX_MESSAGE_LENGTH): SlackPiece[] {
  const max = Math.max(80, Math.floor(limit));
  const escaped = escapeMrkdwn(typeof text === "string" ? text : "");
  const pieces: SlackPiece[] = [];
  let rest = escaped;
  let open = false;
  while (rest.length > 0) {
    const reopen: boolean = open;
    const prefix: number = reopen ? REOPEN.length : 0;
    // Four characters stay free for a closing fence the message may need.
    let slice: string = prefix + rest.length <= max ? rest : rest.slice(0, cutAt(rest, max - prefix - 4));
    // A cut just before trailing whitespace: the whitespace goes with the slice when it fits.
    const tail = rest.slice(slice.length);
    if (tail !== "" && tail.trim() === "" && prefix + slice.length + tail.length + 4 <= max) slice = rest;
    open = open !== (fences(slice) % 2 === 1);
    const close = open && slice.length < rest.length;
    pieces.push({ text: slice, reopen, close, blank: slice.trim() === "" });
    rest = rest.slice(slice.length);
  }
  return pieces;
}

/** The message a piece is sent as: its slice, with the code fence repair it needs. */
export function renderSlackPiece(piece: SlackPiece): string {
  const start = piece.reopen ? REOPEN : "";
  const end = piece.close ? (piece.text.endsWith("\n") ? FENCE : `\n${FENCE}`) : "";
  return `${start}${piece.text}${end}`;
}

/**
 * Splits text into escaped Slack messages of at most `limit` characters each (see `planSlackMessages`). No text is
 * lost: without code blocks cut in two, the messages joined are exactly `escapeMrkdwn(text)`, except whitespace
 * that could only be sent as a message of its own (Slack refuses those).
 */
export function splitForSlack(text: string, limit: number = SLACK_MAX_MESSAGE_LENGTH): string[] {
  return planSlackMessages(text, limit)
    .filter((piece) => !piece.blank)
    .map(renderSlackPiece);
}
