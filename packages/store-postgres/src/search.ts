import { type SearchTerm, searchableText, searchBounds, searchMessageMatch } from "@sessions/core";
import type {
  SearchMessageMatch,
  SearchSessionsQuery,
  SessionSearchHit,
  SessionSearchPage,
  StoredEntry,
  StoredMessage,
} from "@sessions/gateway";
import type { Db } from "./units.js";

// Full text search on Postgres (migration 4). The `simple` configuration lowercases words and does nothing else: no
// stemming and no stop words, which would suit one language and mangle the others a chat is written in (and drop
// words such as "who" or "not" that people search for). It is what FTS5's unicode61 tokenizer does on SQLite.

/**
 * The words of a text expression as a tsvector. Punctuation becomes space first, so that Postgres's parser sees the
 * words @sessions/core's `searchTerms` sees (it would keep `v1.2.3`, `a@b.com` or `x.org/p` whole). Part of
 * migration 4 (the generated column and the index): never change it.
 */
export const searchVector = (text: string) =>
  `to_tsvector('simple'::regconfig, regexp_replace(${text}, '[[:punct:]]+', ' ', 'g'))`;

/**
 * The searched text of a session as an expression on `entries` (`searchableSessionText` of @sessions/core). Part of
 * migration 4's index `entries_search`, which only a query spelling it exactly the same uses: never change it.
 */
export const SESSION_SEARCH_TEXT = searchVector(
  "regexp_replace(key, '^agent:[^:]*:', '') || ' ' || coalesce(label, '') || ' ' || coalesce(display_name, '')",
);

/** The tsquery of a user's terms: each a quoted lexeme (nothing in it is tsquery syntax), `:*` for a prefix, all required. */
export function tsQuery(terms: readonly SearchTerm[]): string {
  return terms
    .map((t) => `'${t.text.replaceAll("'", "''").replaceAll("\\", "\\\\")}'${t.prefix ? ":*" : ""}`)
    .join(" & ");
}

type HitRow = {
  data: string;
  key: string;
  rank: number | null;
  n: number;
  title: boolean;
  truncated: boolean;
};
type MessageRow = { key: string; seq: string; data: string };

const messageMatch = (message: StoredMessage, terms: readonly SearchTerm[]): SearchMessageMatch =>
  searchMessageMatch(message, searchableText(message) ?? "", terms);

/** `searchSessions` and `listAgentIds` on the tables of schema `s` (quoted). */
export function createSearchOperations(s: string) {
  function hitsQuery(query: SearchSessionsQuery, match: string, cap: number, limit: number, offset: number) {
    const values: unknown[] = [match, cap];
    const param = (value: unknown) => {
      values.push(value);
      return `$${values.length}`;
    };
    const clauses: string[] = [];
    if (!query.includeArchived) clauses.push("e.archived = false");
    if (query.keys !== undefined) clauses.push(`e.key = ANY(${param([...query.keys])}::text[])`);
    if (query.agentIds !== undefined) clauses.push(`e.agent_id = ANY(${param([...query.agentIds])}::text[])`);
    if (query.kinds !== undefined) clauses.push(`e.kind = ANY(${param([...query.kinds])}::text[])`);
    if (query.excludeKeys !== undefined)
      clauses.push(`NOT (e.key = ANY(${param([...query.excludeKeys])}::text[]))`);
    if (query.updatedSince !== undefined) clauses.push(`e.updated_at >= ${param(query.updatedSince)}`);
    const scope = clauses.map((c) => ` AND ${c}`).join("");
    // The matching messages of sessions in scope, the most recently updated session's first, up to the cap and one
    // more (which tells that there were more); only those are ranked (ts_rank reads each one's tsvector again). Each
    // session by its best message, with the sessions whose key, label or display name match; best first.
    const text = `WITH q AS (SELECT to_tsquery('simple', $1) AS q),
      hits AS MATERIALIZED (SELECT e.updated_at AS u, m.session_key AS key, m.seq
        FROM ${s}.messages m JOIN ${s}.entries e ON e.key = m.session_key, q
        WHERE m.search @@ q.q${scope}
        ORDER BY e.updated_at DESC, m.session_key DESC, m.seq DESC LIMIT $2 + 1),
      ranked AS (SELECT * FROM hits h WHERE (SELECT count(*) FROM hits) <= $2
        OR (h.u, h.key, h.seq) > (SELECT l.u, l.key, l.seq FROM hits l ORDER BY l.u, l.key, l.seq LIMIT 1)),
      per AS (SELECT h.key, max(ts_rank(m.search, q.q, 1)) AS rank, count(*)::int AS n
        FROM ranked h JOIN ${s}.messages m ON m.session_key = h.key AND m.seq = h.seq, q GROUP BY h.key),
      titles AS (SELECT e.key FROM ${s}.entries e, q WHERE ${SESSION_SEARCH_TEXT} @@ q.q${scope}),
      found AS (SELECT coalesce(per.key, titles.key) AS key, per.rank, coalesce(per.n, 0) AS n,
          titles.key IS NOT NULL AS title
        FROM per FULL JOIN titles ON titles.key = per.key)
    SELECT e.data, f.key, f.rank, f.n, f.title, (SELECT count(*) FROM hits) > $2 AS truncated
    FROM found f JOIN ${s}.entries e ON e.key = f.key
    ORDER BY f.title DESC, coalesce(f.rank, 0) DESC, e.updated_at DESC, e.key ASC
    LIMIT ${param(limit + 1)} OFFSET ${param(offset)}`;
    const probe = `WITH q AS (SELECT to_tsquery('simple', $1) AS q)
    SELECT count(*) > $2 AS truncated FROM (
      SELECT 1 FROM ${s}.messages m JOIN ${s}.entries e ON e.key = m.session_key, q
      WHERE m.search @@ q.q${scope} LIMIT $2 + 1) m`;
    return { text, probe, values };
  }

  return {
    async searchSessions(db: Db, query: SearchSessionsQuery): Promise<SessionSearchPage> {
      const { terms, none, limit, offset, perSession, cap } = searchBounds(query);
      if (none) return { hits: [], hasMore: false, truncated: false };
      const match = tsQuery(terms);
      const { text, probe, values } = hitsQuery(query, match, cap, limit, offset);
      const rows = (await db.query<HitRow>(text, values)).rows;
      const truncated =
        rows[0]?.truncated ??
        (await db.query<{ truncated: boolean }>(probe, values.slice(0, values.length - 2))).rows[0]
          ?.truncated === true;
      const page = rows.slice(0, limit);
      const withMessages = page.filter((row) => row.n > 0).map((row) => row.key);
      const best = new Map<string, SearchMessageMatch[]>();
      if (perSession > 0 && withMessages.length > 0) {
        const messages = await db.query<MessageRow>(
          `WITH q AS (SELECT to_tsquery('simple', $1) AS q)
           SELECT key, seq, data FROM (
             SELECT m.session_key AS key, m.seq, m.data, row_number() OVER (
               PARTITION BY m.session_key ORDER BY ts_rank(m.search, q.q, 1) DESC, m.seq DESC) AS r
             FROM ${s}.messages m, q WHERE m.session_key = ANY($2::text[]) AND m.search @@ q.q) ranked
           WHERE r <= $3 ORDER BY key, r`,
          [match, withMessages, perSession],
        );
        for (const row of messages.rows) {
          const message = { ...(JSON.parse(row.data) as StoredMessage), seq: Number(row.seq) };
          const list = best.get(row.key) ?? [];
          list.push(messageMatch(message, terms));
          best.set(row.key, list);
        }
      }
      const hits: SessionSearchHit[] = page.map((row) => {
        const relevance = row.rank === null ? 0 : Math.max(0, Number(row.rank));
        return {
          entry: JSON.parse(row.data) as StoredEntry,
          score: (row.title ? 1 : 0) + relevance / (1 + relevance),
          matchedMessages: row.n,
          messages: best.get(row.key) ?? [],
        };
      });
      return { hits, hasMore: rows.length > limit, truncated };
    },
    async listAgentIds(db: Db): Promise<string[]> {
      // A skip scan of entries_agent (archived, agent_id, …): one index probe per agent, not a read of every entry.
      const { rows } = await db.query<{ id: string }>(
        `WITH RECURSIVE a(archived, id) AS (
           SELECT v.archived, (SELECT min(agent_id) FROM ${s}.entries e WHERE e.archived = v.archived)
             FROM (VALUES (false), (true)) v(archived)
           UNION ALL
           SELECT a.archived, (SELECT min(agent_id) FROM ${s}.entries e WHERE e.archived = a.archived AND e.agent_id > a.id)
             FROM a WHERE a.id IS NOT NULL)
         SELECT DISTINCT id FROM a WHERE id IS NOT NULL`,
      );
      return rows.map((row) => row.id);
    },
  };
}
