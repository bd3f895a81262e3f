import { type SearchTerm, searchableText, searchTerms } from "@sessions/core";
import type Database from "better-sqlite3";
import { messageMatch } from "../search-match.js";
import type {
  SearchSessionsQuery,
  SessionSearchHit,
  SessionSearchPage,
  StoredEntry,
  StoredMessage,
} from "../types.js";

/** A message's row in `messages_search` is `id << 32 | seq` (schema version 4): the low half is its seq. */
const SEQ_BITS = 32n;

/**
 * The FTS5 query of a user's terms: each a quoted string (so nothing in it is FTS5 syntax), a prefix query when
 * the term is one, all of them required.
 */
export function ftsQuery(terms: readonly SearchTerm[]): string {
  return terms.map((t) => `"${t.text.replaceAll('"', '""')}"${t.prefix ? "*" : ""}`).join(" ");
}

type HitRow = { data: string; sid: number; rank: number | null; n: number; title: number };

/**
 * `searchSessions` and `listAgentIds` on the FTS5 indexes of schema version 4. The SQL text depends only on which
 * filters are present (arrays are one JSON parameter each), so at most 2^6 statements are cached per connection.
 */
export function createSqliteSearch(db: Database.Database) {
  const cache = new Map<string, Database.Statement>();
  const statement = (sql: string) => {
    let stmt = cache.get(sql);
    if (stmt === undefined) {
      stmt = db.prepare(sql);
      cache.set(sql, stmt);
    }
    return stmt;
  };
  let bestMessages: Database.Statement | undefined;
  let readMessage: Database.Statement | undefined;
  let agentIds: Database.Statement | undefined;

  function hitsQuery(query: SearchSessionsQuery): { sql: string; params: Record<string, unknown> } {
    const clauses: string[] = [];
    const params: Record<string, unknown> = {};
    if (!query.includeArchived) clauses.push("e.archived = 0");
    const json = (name: string, values: readonly string[] | undefined, clause: string) => {
      if (values === undefined) return;
      clauses.push(clause);
      params[name] = JSON.stringify(values);
    };
    json("keys", query.keys, "e.key IN (SELECT value FROM json_each(@keys))");
    json("agentIds", query.agentIds, "e.agent_id IN (SELECT value FROM json_each(@agentIds))");
    json("kinds", query.kinds, "e.kind IN (SELECT value FROM json_each(@kinds))");
    json("excludeKeys", query.excludeKeys, "e.key NOT IN (SELECT value FROM json_each(@excludeKeys))");
    if (query.updatedSince !== undefined) {
      clauses.push("e.updated_at >= @updatedSince");
      params.updatedSince = query.updatedSince;
    }
    // Every matching message, grouped by session (its best rank: BM25, lower is better), and every session whose
    // key, label or display name match; then only those in scope, best first.
    const sql = `WITH
      hits AS MATERIALIZED (SELECT rowid >> 32 AS sid, bm25(messages_search) AS rank
        FROM messages_search WHERE messages_search MATCH @match),
      per AS (SELECT sid, MIN(rank) AS rank, COUNT(*) AS n FROM hits GROUP BY sid),
      found AS (
        SELECT sid, rank, n, 0 AS title FROM per
        UNION ALL SELECT rowid, NULL, 0, 1 FROM entries_search WHERE entries_search MATCH @match),
      merged AS (SELECT sid, MIN(rank) AS rank, MAX(n) AS n, MAX(title) AS title FROM found GROUP BY sid)
    SELECT e.data AS data, m.sid AS sid, m.rank AS rank, m.n AS n, m.title AS title
    FROM merged m JOIN search_keys k ON k.id = m.sid JOIN entries e ON e.key = k.key
    ${clauses.length > 0 ? `WHERE ${clauses.join(" AND ")}` : ""}
    ORDER BY m.title DESC, coalesce(m.rank, 0) ASC, e.updated_at DESC, e.key ASC
    LIMIT @limit OFFSET @offset`;
    return { sql, params };
  }

  function messagesOf(sid: number, match: string, count: number, terms: readonly SearchTerm[]) {
    bestMessages ??= db.prepare(`SELECT rowid - @low AS seq FROM messages_search
      WHERE messages_search MATCH @match AND rowid BETWEEN @low AND @high
      ORDER BY bm25(messages_search) ASC, rowid DESC LIMIT @count`);
    readMessage ??=
      db.prepare(`SELECT m.data AS data FROM messages m JOIN search_keys k ON k.key = m.session_key
      WHERE k.id = ? AND m.seq = ?`);
    // As BigInts: rows past 2^53 are beyond a double's exact integers.
    const low = BigInt(sid) << SEQ_BITS;
    const high = low + (1n << SEQ_BITS) - 1n;
    const rows = bestMessages.all({ match, low, high, count }) as { seq: number }[];
    return rows.flatMap(({ seq }) => {
      const row = readMessage?.get(sid, seq) as { data: string } | undefined;
      if (row === undefined) return [];
      const message = JSON.parse(row.data) as StoredMessage;
      return [messageMatch({ ...message, seq }, searchableText(message) ?? "", terms)];
    });
  }

  return {
    /** Prepared statements held now (for the store's statement count). */
    size: () => cache.size + (bestMessages ? 1 : 0) + (readMessage ? 1 : 0) + (agentIds ? 1 : 0),
    searchSessions(query: SearchSessionsQuery): SessionSearchPage {
      const terms = searchTerms(query.text);
      const empty = [query.keys, query.agentIds, query.kinds].some((list) => list?.length === 0);
      if (terms.length === 0 || empty) return { hits: [], hasMore: false };
      const limit = Math.max(0, Math.floor(query.limit));
      const offset = Math.max(0, Math.floor(query.offset ?? 0));
      const perSession = Math.max(0, Math.floor(query.messagesPerSession ?? 1));
      const match = ftsQuery(terms);
      const { sql, params } = hitsQuery(query);
      const rows = statement(sql).all({ ...params, match, limit: limit + 1, offset }) as HitRow[];
      const hits: SessionSearchHit[] = rows.slice(0, limit).map((row) => {
        const relevance = row.rank === null ? 0 : Math.max(0, -row.rank);
        return {
          entry: JSON.parse(row.data) as StoredEntry,
          score: row.title + relevance / (1 + relevance),
          matchedMessages: row.n,
          messages: row.n > 0 && perSession > 0 ? messagesOf(row.sid, match, perSession, terms) : [],
        };
      });
      return { hits, hasMore: rows.length > limit };
    },
    listAgentIds(): string[] {
      // A skip scan of entries_agent (archived, agent_id, …): one index seek per agent, not a read of every entry.
      agentIds ??= db.prepare(`WITH RECURSIVE a(archived, id) AS (
          SELECT 0, (SELECT MIN(agent_id) FROM entries WHERE archived = 0)
          UNION ALL SELECT 1, (SELECT MIN(agent_id) FROM entries WHERE archived = 1)
          UNION ALL SELECT a.archived, (SELECT MIN(agent_id) FROM entries WHERE archived = a.archived AND agent_id > a.id)
            FROM a WHERE a.id IS NOT NULL)
        SELECT DISTINCT id FROM a WHERE id IS NOT NULL`);
      return (agentIds.all() as { id: string }[]).map((row) => row.id);
    },
  };
}
