import { chunkMessage } from "./chunk.js";

/**
 * How a reply streams into a chat while the model writes it (`channels.<id>.streaming`):
 * - `off`: the reply is posted whole when the run ends;
 * - `partial`: one message shows the text so far, edited as it grows (a further message starts where the platform's
 *   length limit is passed);
 * - `block`: the text shows a block at a time (a paragraph of at least `BLOCK_MIN_CHARS`, or `BLOCK_MAX_CHARS` when
 *   no paragraph ends sooner), in messages of at most `BLOCK_MAX_CHARS`.
 */
export const STREAMING_MODES = ["off", "partial", "block"] as const;
/** One of `STREAMING_MODES`: how a channel's replies stream while they are written. */
export type StreamingMode = (typeof STREAMING_MODES)[number];

/** In `block` mode, a paragraph ends a block once the block holds this many characters. */
export const BLOCK_MIN_CHARS = 200;
/** In `block` mode, a block ends here when no paragraph ended it sooner; and no message holds more. */
export const BLOCK_MAX_CHARS = 800;

/** The most characters one message holds while a reply streams in `mode`, on a platform whose limit is `maxMessageLength`. */
export function streamingLimit(mode: StreamingMode, maxMessageLength: number): number {
  return mode === "block" ? Math.min(BLOCK_MAX_CHARS, maxMessageLength) : maxMessageLength;
}

/**
 * The part of `text` (a reply being written) that `block` mode shows: up to the end of its last whole block. As
 * the text grows, what was shown stays shown (the result for a prefix of a text is a prefix of the result for it).
 */
export function blockVisible(text: string): string {
  let end = 0;
  for (;;) {
    const window = text.slice(end, end + BLOCK_MAX_CHARS);
    const paragraph = window.indexOf("\n\n", BLOCK_MIN_CHARS);
    if (paragraph >= 0) {
      end += paragraph + 2;
      continue;
    }
    if (text.length - end <= BLOCK_MAX_CHARS) return text.slice(0, end);
    // A full window without a paragraph break: the block ends at its last line break, else word, else anywhere.
    let cut = window.lastIndexOf("\n");
    if (cut < BLOCK_MIN_CHARS) cut = window.lastIndexOf(" ");
    end += cut < BLOCK_MIN_CHARS ? BLOCK_MAX_CHARS : cut + 1;
  }
}

/**
 * The messages a reply being written shows in `mode` (none for `off`): the visible text, without trailing space,
 * cut to `streamingLimit` the way `chunkMessage` cuts a delivery. All but the last stay as they are while the text grows; once the reply is
 * whole, `chunkMessage(reply, streamingLimit(mode, max))` is what the chat ends with.
 */
export function streamedParts(text: string, mode: StreamingMode, maxMessageLength: number): string[] {
  if (mode === "off") return [];
  // Trailing space is left for the text that follows it (platforms drop it, and an edit adding it changes nothing).
  const visible = (mode === "block" ? blockVisible(text) : text).trimEnd();
  return chunkMessage(visible, streamingLimit(mode, maxMessageLength));
}
