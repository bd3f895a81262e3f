import {
  matchesTerm,
  type SearchTerm,
  searchableSessionText,
  searchableText,
  searchBounds,
  searchMessageMatch,
  searchWords,
  textMatches,
} from "@sessions/core";
import type {
  SearchSessionsQuery,
  SessionSearchHit,
  SessionSearchPage,
  StoredEntry,
  StoredMessage,
} from "./types.js";

// BM25's usual constants.
const K1 = 1.2;
const B = 0.75;

/** Whether a session is inside a search's scope (its visibility and filters). */
export function inSearchScope(entry: StoredEntry, query: SearchSessionsQuery): boolean {
  if (!query.includeArchived && entry.archivedAt !== undefined) return false;
  if (query.keys !== undefined && !query.keys.includes(entry.key)) return false;
  if (query.agentIds !== undefined && !query.agentIds.includes(entry.agentId)) return false;
  if (query.kinds !== undefined && !query.kinds.includes(entry.kind)) return false;
  if (query.excludeKeys?.includes(entry.key)) return false;
  if (query.updatedSince !== undefined && entry.updatedAt < query.updatedSince) return false;
  return true;
}

interface Document {
  message: StoredMessage;
  text: string;
  words: string[];
}

/** How many words of `words` match `term`. */
const frequency = (words: readonly string[], term: SearchTerm) =>
  words.reduce((n, word) => n + (matchesTerm(word, term) ? 1 : 0), 0);

/**
 * `searchSessions` by scanning: every searchable message is a document, scored with BM25 against all of them (as a
 * full-text index would), the session by its best message, sessions whose key, label or display name match first.
 */
export function searchInMemory(
  entries: ReadonlyMap<string, StoredEntry>,
  transcripts: ReadonlyMap<string, readonly StoredMessage[]>,
  query: SearchSessionsQuery,
): SessionSearchPage {
  const { terms, none, limit, offset, perSession, cap } = searchBounds(query);
  if (none) return { hits: [], hasMore: false, truncated: false };
  let total = 0;
  let words = 0;
  const df = terms.map(() => 0);
  const allMatch = (doc: Document) =>
    terms.every((term) => doc.words.some((word) => matchesTerm(word, term)));
  // Matching messages in scope, from the most recently created transcript back (as the store's order of keys),
  // newest message first, up to the cap.
  const matching = new Map<string, Document[]>();
  let ranked = 0;
  let truncated = false;
  for (const [key, messages] of [...transcripts].reverse()) {
    const entry = entries.get(key);
    const visible = entry !== undefined && inSearchScope(entry, query);
    for (let i = messages.length - 1; i >= 0; i--) {
      const message = messages[i] as StoredMessage;
      const text = searchableText(message);
      if (text === undefined) continue;
      const doc = { message, text, words: searchWords(text).map((w) => w.lower) };
      total++;
      words += doc.words.length;
      terms.forEach((term, t) => {
        if (doc.words.some((word) => matchesTerm(word, term))) df[t] = (df[t] ?? 0) + 1;
      });
      if (!visible || !allMatch(doc)) continue;
      if (ranked >= cap) {
        truncated = true;
        continue;
      }
      ranked++;
      const list = matching.get(key) ?? [];
      list.push(doc);
      matching.set(key, list);
    }
  }
  const average = total === 0 ? 1 : Math.max(1, words / total);
  const idf = df.map((n) => Math.log(1 + (total - n + 0.5) / (n + 0.5)));
  const score = (doc: Document) =>
    terms.reduce((sum, term, i) => {
      const tf = frequency(doc.words, term);
      const norm = K1 * (1 - B + (B * doc.words.length) / average);
      return sum + ((idf[i] ?? 0) * tf * (K1 + 1)) / (tf + norm);
    }, 0);

  const hits: (SessionSearchHit & { best: { doc: Document; score: number }[] })[] = [];
  for (const entry of entries.values()) {
    if (!inSearchScope(entry, query)) continue;
    const best = (matching.get(entry.key) ?? [])
      .map((doc) => ({ doc, score: score(doc) }))
      .sort((a, b) => b.score - a.score || b.doc.message.seq - a.doc.message.seq);
    const title = textMatches(searchableSessionText(entry), terms);
    if (best.length === 0 && !title) continue;
    const relevance = best[0]?.score ?? 0;
    hits.push({
      entry,
      score: (title ? 1 : 0) + relevance / (1 + relevance),
      matchedMessages: best.length,
      messages: [],
      best,
    });
  }
  hits.sort(
    (a, b) =>
      b.score - a.score ||
      b.entry.updatedAt - a.entry.updatedAt ||
      (a.entry.key < b.entry.key ? -1 : a.entry.key > b.entry.key ? 1 : 0),
  );
  const page = hits.slice(offset, offset + limit).map(({ best, ...hit }) => ({
    ...hit,
    entry: structuredClone(hit.entry),
    messages: best.slice(0, perSession).map(({ doc }) => searchMessageMatch(doc.message, doc.text, terms)),
  }));
  return { hits: page, hasMore: hits.length > offset + limit, truncated };
}
