import { chunkMessage } from "@sessions/core";

/**
 * The text Slack shows for one message is best kept under 4,000 characters: longer messages are cut or collapsed
 * by clients, and Slack truncates at 40,000. Replies are split at this size.
 */
export const SLACK_MAX_MESSAGE_LENGTH = 4000;

/**
 * Escapes the three characters Slack's mrkdwn treats as control characters (`&`, `<`, `>`), so model output is
 * shown as written and can never form a mention (`<@U…>`, `<!channel>`) or a link. Formatting such as `*bold*`
 * and code blocks still renders.
 */
export function escapeMrkdwn(text: string): string {
  return text.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;");
}

/** What Slack sends in `text` back to plain characters (`&lt;` → `<`, …); mentions and links stay as they are. */
export function unescapeMrkdwn(text: string): string {
  return text.replaceAll("&lt;", "<").replaceAll("&gt;", ">").replaceAll("&amp;", "&");
}

/**
 * Splits text into escaped messages of at most `limit` characters each (after escaping, which can make a piece
 * up to five times longer), cutting at paragraph, line and word boundaries and never inside an escape. No text is
 * lost: unescaped and joined, the pieces hold every non-whitespace character of `text`, in order.
 */
export function splitForSlack(text: string, limit: number = SLACK_MAX_MESSAGE_LENGTH): string[] {
  const max = Math.max(80, Math.floor(limit));
  const out: string[] = [];
  for (const piece of chunkMessage(text, max)) {
    let room = max;
    let escaped = [escapeMrkdwn(piece)];
    // Entities made the piece too long: split the raw piece smaller until every escaped part fits.
    while (escaped.some((p) => p.length > max)) {
      room = Math.max(16, Math.floor(room * 0.8));
      escaped = chunkMessage(piece, room).map(escapeMrkdwn);
    }
    out.push(...escaped);
  }
  return out;
}
