import { type SearchTerm, searchableText, searchBounds, searchMessageMatch } from "@sessions/core";
import type Database from "better-sqlite3";
import type {
  SearchSessionsQuery,
  SessionSearchHit,
  SessionSearchPage,
  StoredEntry,
  StoredMessage,
} from "../types.js";
import { statementCache } from "./statements.js";

/**
 * The FTS5 query of a user's terms: each a quoted string (so nothing in it is FTS5 syntax), a prefix query when
 * the term is one, all of them required.
 */
export function ftsQuery(terms: readonly SearchTerm[]): string {
  return terms.map((t) => `"${t.text.replaceAll('"', '""')}"${t.prefix ? "*" : ""}`).join(" ");
}

/** A matching message (`title` 0: its session's id and seq, BM25 rank, lower is better) or session (`title` 1). */
type MatchRow = { title: 0 | 1; sid: number; seq: number; rank: number };
/** What a session found has: its best rank, its matching messages, whether its key, label or name matched. */
interface Found {
  sid: number;
  rank: number;
  messages: { seq: number; rank: number }[];
  title: boolean;
  key: string;
  updatedAt: number;
}

/** The searches of a SQLite store. */
export type SqliteSearch = ReturnType<typeof createSqliteSearch>;

/**
 * `searchSessions` and `listAgentIds` on the FTS5 indexes (rows of `messages_search` are `id << 32 | seq`, `id` a
 * session key's number in `search_keys`), on a connection that sees the store's tables and `messages_search` by
 * their bare names: the index's own connection (the index as `main`, the store attached), or an in-memory store's.
 * The SQL text depends only on which filters are present (arrays are one JSON parameter each), so at most 2^6
 * statements are cached per connection.
 */
export function createSqliteSearch(db: Database.Database) {
  const { statement, size } = statementCache(db);

  /**
   * One pass over the index: the sessions in scope first, so that only their messages get a BM25 rank (most of a
   * query's cost); their matching messages, the most recently created session's first (its id is the highest),
   * up to the cap and one more (which tells that there were more); and the sessions whose key, label or display
   * name match. `+rowid` keeps SQLite from handing the scope to FTS5 as rowids to look up one by one.
   */
  function matchesQuery(query: SearchSessionsQuery): { sql: string; params: Record<string, unknown> } {
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
    const sql = `WITH
      scope AS MATERIALIZED (SELECT k.id FROM entries e CROSS JOIN search_keys k
        WHERE k.key = e.key${clauses.map((c) => ` AND ${c}`).join("")}),
      hits AS MATERIALIZED (SELECT rowid >> 32 AS sid, rowid & 4294967295 AS seq, bm25(messages_search) AS rank
        FROM messages_search WHERE messages_search MATCH @match AND (rowid >> 32) IN scope
        ORDER BY rowid DESC LIMIT @cap + 1)
    SELECT 0 AS title, sid, seq, rank FROM hits
    UNION ALL
    SELECT 1, rowid, 0, 0 FROM entries_search WHERE entries_search MATCH @match AND +rowid IN scope`;
    return { sql, params };
  }

  /** The sessions found, by what ranks them: key, label or name matched first, then best rank, newer, key. */
  function rank(rows: MatchRow[], cap: number): { found: Found[]; truncated: boolean } {
    const messages = rows.filter((row) => row.title === 0);
    const truncated = messages.length > cap;
    if (truncated) {
      // The one past the cap: the oldest, lowest row.
      let last = 0;
      messages.forEach((row, i) => {
        const l = messages[last] as MatchRow;
        if (row.sid < l.sid || (row.sid === l.sid && row.seq < l.seq)) last = i;
      });
      messages.splice(last, 1);
    }
    const bySession = new Map<number, Found>();
    const of = (sid: number) => {
      let found = bySession.get(sid);
      if (found === undefined) {
        found = { sid, rank: 0, messages: [], title: false, key: "", updatedAt: 0 };
        bySession.set(sid, found);
      }
      return found;
    };
    for (const row of messages) {
      const found = of(row.sid);
      found.messages.push({ seq: row.seq, rank: row.rank });
      found.rank = Math.min(found.rank, row.rank);
    }
    for (const row of rows) if (row.title === 1) of(row.sid).title = true;
    const found = [...bySession.values()];
    if (found.length > 0) {
      const sessions =
        statement(`SELECT k.id AS sid, e.key AS key, e.updated_at AS updatedAt FROM json_each(?) j
           CROSS JOIN search_keys k CROSS JOIN entries e WHERE k.id = j.value AND e.key = k.key`).all(
          JSON.stringify(found.map((f) => f.sid)),
        ) as { sid: number; key: string; updatedAt: number }[];
      for (const row of sessions) {
        const f = bySession.get(row.sid) as Found;
        f.key = row.key;
        f.updatedAt = row.updatedAt;
      }
    }
    found.sort(
      (a, b) =>
        Number(b.title) - Number(a.title) ||
        a.rank - b.rank ||
        b.updatedAt - a.updatedAt ||
        (a.key < b.key ? -1 : a.key > b.key ? 1 : 0),
    );
    return { found, truncated };
  }

  function hitOf(
    found: Found,
    perSession: number,
    terms: readonly SearchTerm[],
  ): SessionSearchHit | undefined {
    const row = statement("SELECT data FROM entries WHERE key = ?").get(found.key) as
      | { data: string }
      | undefined;
    if (row === undefined) return undefined;
    const relevance = Math.max(0, -found.rank);
    const best = [...found.messages].sort((a, b) => a.rank - b.rank || b.seq - a.seq).slice(0, perSession);
    const read = statement("SELECT data FROM messages WHERE session_key = ? AND seq = ?");
    return {
      entry: JSON.parse(row.data) as StoredEntry,
      score: (found.title ? 1 : 0) + relevance / (1 + relevance),
      matchedMessages: found.messages.length,
      messages: best.flatMap(({ seq }) => {
        const stored = read.get(found.key, seq) as { data: string } | undefined;
        if (stored === undefined) return [];
        const message = JSON.parse(stored.data) as StoredMessage;
        return [searchMessageMatch({ ...message, seq }, searchableText(message) ?? "", terms)];
      }),
    };
  }

  return {
    /** Prepared statements held now (for the store's statement count). */
    size,
    searchSessions(query: SearchSessionsQuery): SessionSearchPage {
      const { terms, none, limit, offset, perSession, cap } = searchBounds(query);
      if (none) return { hits: [], hasMore: false, truncated: false };
      const { sql, params } = matchesQuery(query);
      const rows = statement(sql).all({ ...params, match: ftsQuery(terms), cap }) as MatchRow[];
      const { found, truncated } = rank(rows, cap);
      const hits = found.slice(offset, offset + limit).flatMap((f) => hitOf(f, perSession, terms) ?? []);
      return { hits, hasMore: found.length > offset + limit, truncated };
    },
    listAgentIds(): string[] {
      // A skip scan of entries_agent (archived, agent_id, …): one index seek per agent, not a read of every entry.
      const rows = statement(`WITH RECURSIVE a(archived, id) AS (
          SELECT 0, (SELECT MIN(agent_id) FROM entries WHERE archived = 0)
          UNION ALL SELECT 1, (SELECT MIN(agent_id) FROM entries WHERE archived = 1)
          UNION ALL SELECT a.archived, (SELECT MIN(agent_id) FROM entries WHERE archived = a.archived AND agent_id > a.id)
            FROM a WHERE a.id IS NOT NULL)
        SELECT DISTINCT id FROM a WHERE id IS NOT NULL`).all() as { id: string }[];
      return rows.map((row) => row.id);
    },
  };
}
