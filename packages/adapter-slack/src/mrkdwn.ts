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
