import { type SearchTerm, searchSnippet } from "@sessions/core";
import type { SearchMessageMatch, StoredMessage } from "./types.js";

/** A matching message as a search returns it. */
export function messageMatch(
  message: Pick<StoredMessage, "seq" | "role" | "ts">,
  text: string,
  terms: readonly SearchTerm[],
): SearchMessageMatch {
  const snippet = searchSnippet(text, terms);
  return {
    seq: message.seq,
    role: message.role,
    ...(typeof message.ts === "number" ? { ts: message.ts } : {}),
    snippet: snippet.text,
    highlights: snippet.highlights,
  };
}
