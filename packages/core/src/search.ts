// What a session search matches and shows, the same for every store: the words of a query, the text of a message
// and of a session that is searched, and the snippet that shows a match.

/** One word of a search query, lowercased: matched as the start of a word when `prefix`, else as a whole word. */
export interface SearchTerm {
  text: string;
  prefix: boolean;
}

/** A short piece of a message around its first match; `highlights` are `[start, end)` ranges of `text` that matched. */
export interface SearchSnippet {
  text: string;
  highlights: [number, number][];
}

/**
 * Terms this long (in code points) or longer match words that start with them (`deploy` finds `deployment`);
 * shorter ones match only whole words, so that a one-letter term does not match most of a transcript.
 */
export const SEARCH_PREFIX_MIN_LENGTH = 3;
/**
 * How many matching messages a search ranks unless told otherwise: the bound on the work of a query whose words are
 * in most messages (beyond it, the messages of the most recent sessions are ranked).
 */
export const SEARCH_MAX_MESSAGES = 20_000;
/** Longest snippet, in UTF-16 code units, not counting the `…` marks of a cut. */
export const SEARCH_SNIPPET_LENGTH = 160;
/** How much of the text before the first match a snippet keeps, roughly. */
const LEAD = 50;

/**
 * A word: a run of letters, digits, combining marks and private-use characters (Unicode categories L, N, M, Co).
 * Everything else (spaces, punctuation, symbols, quotes, operators of any query syntax) separates words.
 */
const WORD = /[\p{L}\p{N}\p{M}\p{Co}]+/gu;

const codePoints = (text: string) => {
  let n = 0;
  for (const _ of text) n++;
  return n;
};

/**
 * The terms of a user's query: its words, lowercased, each once, in order. Never throws; a query with no word
 * (only punctuation, or empty) has no terms and matches nothing. Query syntax is never interpreted: `"`, `*`, `-`,
 * `OR`, `NEAR(` are separators or plain words.
 */
export function searchTerms(query: unknown): SearchTerm[] {
  if (typeof query !== "string") return [];
  const seen = new Set<string>();
  const terms: SearchTerm[] = [];
  for (const match of query.matchAll(WORD)) {
    const text = match[0].toLowerCase();
    if (seen.has(text)) continue;
    seen.add(text);
    terms.push({ text, prefix: codePoints(text) >= SEARCH_PREFIX_MIN_LENGTH });
  }
  return terms;
}

/** The words of `text` with where each starts, lowercased alongside (for the memory store and snippets). */
export function searchWords(text: string): { word: string; lower: string; start: number }[] {
  const words: { word: string; lower: string; start: number }[] = [];
  for (const match of text.matchAll(WORD)) {
    words.push({ word: match[0], lower: match[0].toLowerCase(), start: match.index ?? 0 });
  }
  return words;
}

/** Whether a lowercased word matches a term. */
export function matchesTerm(lowerWord: string, term: SearchTerm): boolean {
  return term.prefix ? lowerWord.startsWith(term.text) : lowerWord === term.text;
}

/**
 * The searched text of a transcript message: its string content, or its text parts joined by newlines. Tool
 * results (`toolResult`, `tool`) are not searched: `undefined`, as for a message without text.
 */
export function searchableText(message: { role?: unknown; content?: unknown }): string | undefined {
  if (message.role === "toolResult" || message.role === "tool") return undefined;
  const { content } = message;
  let text: string;
  if (typeof content === "string") text = content;
  else if (Array.isArray(content)) {
    text = content
      .filter(
        (part): part is { type: "text"; text: string } =>
          part !== null &&
          typeof part === "object" &&
          (part as { type?: unknown }).type === "text" &&
          typeof (part as { text?: unknown }).text === "string",
      )
      .map((part) => part.text)
      .join("\n");
  } else return undefined;
  return text === "" ? undefined : text;
}

/** The part of a session key that is searched: without its `agent:<id>:` prefix, which every session of an agent shares. */
export function searchableKey(key: string): string {
  return key.replace(/^agent:[^:]*:/, "");
}

/** The searched text of a session: its key (as {@link searchableKey}), label and display name. */
export function searchableSessionText(entry: {
  key: string;
  label?: string | undefined;
  displayName?: string | undefined;
}): string {
  return `${searchableKey(entry.key)} ${entry.label ?? ""} ${entry.displayName ?? ""}`;
}

/** Whether every term matches some word of `text` (what a store's index decides, done by scanning). */
export function textMatches(text: string, terms: readonly SearchTerm[]): boolean {
  if (terms.length === 0) return false;
  const words = searchWords(text).map((w) => w.lower);
  return terms.every((term) => words.some((word) => matchesTerm(word, term)));
}

const isLowSurrogate = (code: number) => code >= 0xdc00 && code <= 0xdfff;

/** `index` moved off the second half of a surrogate pair, so a cut never splits a character. */
function onCharacter(text: string, index: number): number {
  return index > 0 && index < text.length && isLowSurrogate(text.charCodeAt(index)) ? index - 1 : index;
}

/**
 * A snippet of `text` around its first word matching a term, at most {@link SEARCH_SNIPPET_LENGTH} long (plus `…`
 * where it was cut), whitespace collapsed, every matching word in it highlighted. Text with no match gives its
 * beginning, without highlights. Never throws.
 */
export function searchSnippet(text: string, terms: readonly SearchTerm[]): SearchSnippet {
  const flat = text.replace(/\s+/g, " ").trim();
  const words = searchWords(flat);
  const matched = words.filter((w) => terms.some((term) => matchesTerm(w.lower, term)));
  const first = matched[0];
  let start = 0;
  if (first !== undefined && first.start > LEAD) {
    // Start at a word boundary near LEAD characters before the match.
    const from = first.start - LEAD;
    const next = words.find((w) => w.start >= from);
    start = next === undefined || next.start > first.start ? first.start : next.start;
  }
  start = onCharacter(flat, start);
  let end = Math.min(flat.length, start + SEARCH_SNIPPET_LENGTH);
  if (end < flat.length) {
    // End after the last whole word that fits, unless that would leave nothing.
    const last = words.filter((w) => w.start >= start && w.start + w.word.length <= end).pop();
    if (last !== undefined && last.start + last.word.length > start) end = last.start + last.word.length;
    end = onCharacter(flat, end);
  }
  const head = start > 0 ? "…" : "";
  const tail = end < flat.length ? "…" : "";
  const highlights: [number, number][] = [];
  for (const w of matched) {
    const wordEnd = w.start + w.word.length;
    if (w.start >= start && wordEnd <= end) {
      highlights.push([w.start - start + head.length, wordEnd - start + head.length]);
    }
  }
  return { text: `${head}${flat.slice(start, end)}${tail}`, highlights };
}

/** A snippet with its highlights marked inline as `«word»` (for a model to read). */
export function markSnippet(snippet: SearchSnippet): string {
  let out = "";
  let at = 0;
  for (const [from, to] of snippet.highlights) {
    out += `${snippet.text.slice(at, from)}«${snippet.text.slice(from, to)}»`;
    at = to;
  }
  return out + snippet.text.slice(at);
}

/** What a store reads of a search query to bound its work (`searchSessions` in `@sessions/gateway`'s contract). */
export interface SearchQueryBounds {
  text: string;
  keys?: readonly string[] | undefined;
  agentIds?: readonly string[] | undefined;
  kinds?: readonly string[] | undefined;
  limit: number;
  offset?: number | undefined;
  messagesPerSession?: number | undefined;
  maxMessages?: number | undefined;
}

/**
 * A search query's terms and bounds as every store applies them: whole numbers, never negative, the defaults filled
 * in (one message per session, at most `SEARCH_MAX_MESSAGES` ranked). `none`: it cannot match anything (no term, or
 * a scope list given empty).
 */
export function searchBounds(query: SearchQueryBounds): {
  terms: SearchTerm[];
  none: boolean;
  limit: number;
  offset: number;
  perSession: number;
  cap: number;
} {
  const terms = searchTerms(query.text);
  const whole = (n: number) => Math.max(0, Math.floor(n));
  return {
    terms,
    none: terms.length === 0 || [query.keys, query.agentIds, query.kinds].some((list) => list?.length === 0),
    limit: whole(query.limit),
    offset: whole(query.offset ?? 0),
    perSession: whole(query.messagesPerSession ?? 1),
    cap: whole(query.maxMessages ?? SEARCH_MAX_MESSAGES),
  };
}

/** A matching message as a search hit shows it: where it is, who wrote it, and its snippet with the words marked. */
export function searchMessageMatch(
  message: { seq: number; role: string; ts?: unknown },
  text: string,
  terms: readonly SearchTerm[],
): {
  seq: number;
  role: string;
  ts?: number | undefined;
  snippet: string;
  highlights: SearchSnippet["highlights"];
} {
  const snippet = searchSnippet(text, terms);
  return {
    seq: message.seq,
    role: message.role,
    ...(typeof message.ts === "number" ? { ts: message.ts } : {}),
    snippet: snippet.text,
    highlights: snippet.highlights,
  };
}
