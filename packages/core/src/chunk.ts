/**
 * Splits text into pieces of at most `limit` characters for platforms with a message cap (Discord 2,000,
 * Telegram 4,096), cutting at the best boundary available: a blank line, then a line break, then a space, then
 * anywhere. Code fences cut in two are closed and reopened so each piece renders on its own. Never loses text.
 */
export function chunkMessage(text: string, limit: number): string[] {
  if (typeof text !== "string" || text === "") return [];
  const max = Number.isFinite(limit) && limit >= 16 ? Math.floor(limit) : 16;
  if (text.length <= max) return [text];
  const pieces: string[] = [];
  let rest = text;
  let openFence: string | undefined;
  while (rest.length > 0) {
    // A fence line too long to repeat is dropped rather than starve the piece of room.
    if (openFence !== undefined && openFence.length + 13 > max) openFence = undefined;
    const prefix = openFence === undefined ? "" : `${openFence}\n`;
    // Four characters stay free for a closing fence the piece may need.
    const room = max - prefix.length - 4;
    if (prefix.length + rest.length <= max) {
      pieces.push(prefix + rest);
      break;
    }
    const window = rest.slice(0, room);
    let cut = Math.max(window.lastIndexOf("\n\n"), -1);
    if (cut < room / 2) cut = Math.max(cut, window.lastIndexOf("\n"));
    if (cut < room / 2) cut = Math.max(cut, window.lastIndexOf(" "));
    if (cut <= 0) cut = room;
    // Never split a surrogate pair.
    const code = rest.charCodeAt(cut - 1);
    if (code >= 0xd800 && code <= 0xdbff) cut--;
    const head = rest.slice(0, cut);
    rest = rest
      .slice(cut)
      .replace(/^\s*\n/, "")
      .replace(/^ /, "");
    const fences = head.match(/^```.*$/gm) ?? [];
    let fence = openFence;
    for (const line of fences) fence = fence === undefined ? line.trim() : undefined;
    pieces.push(prefix + head + (fence === undefined ? "" : "\n```"));
    openFence = fence;
  }
  return pieces;
}
