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
 * An escaped NUL or lone UTF-16 surrogate in JSON text, which Postgres's JSON cannot read, as a regular expression
 * literal: an escape is one after an even number of backslashes (kept in group 1). Part of migrations 4 and 8: never
 * change it.
 */
export const UNREADABLE_ESCAPE = String.raw`'(?<!\\)((?:\\\\)*)\\u(?:0000|[dD][89abcdefABCDEF][0-9a-fA-F]{2})'`;

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
  /** The session's best messages (seq as text, and record), best first; null without any. */
  seqs: string[] | null;
  datas: string[] | null;
};

const messageMatch = (message: StoredMessage, terms: readonly SearchTerm[]): SearchMessageMatch =>
  searchMessageMatch(message, searchableText(message) ?? "", terms);

/** `searchSessions` and `listAgentIds` on the tables of schema `s` (quoted). */
export function createSearchOperations(s: string) {
  function hitsQuery(
    query: SearchSessionsQuery,
    match: string,
    bounds: { cap: number; limit: number; offset: number; perSession: number },
  ) {
    const { cap, limit, offset } = bounds;
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
    // The probe takes the query's words, its cap and its scope; the page's bounds follow.
    const probeValues = [...values];
    // The matching messages of sessions in scope, the most recently updated session's first, up to the cap and one
    // more (which tells that there were more); only those are ranked (ts_rank reads each one's tsvector again). Each
    // session by its best message, with the sessions whose key, label or display name match; best first. Only the
    // page's sessions are read whole (a lookup each, rather than a pass over every session), each with its best
    // `perSession` messages of those ranked.
    const perSession = param(bounds.perSession);
    const text = `WITH q AS (SELECT to_tsquery('simple', $1) AS q),
      hits AS MATERIALIZED (SELECT e.updated_at AS u, m.session_key AS key, m.seq
        FROM ${s}.messages m JOIN ${s}.entries e ON e.key = m.session_key, q
        WHERE m.search @@ q.q${scope}
        ORDER BY e.updated_at DESC, m.session_key DESC, m.seq DESC LIMIT $2 + 1),
      ranked AS (SELECT * FROM hits h WHERE (SELECT count(*) FROM hits) <= $2
        OR (h.u, h.key, h.seq) > (SELECT l.u, l.key, l.seq FROM hits l ORDER BY l.u, l.key, l.seq LIMIT 1)),
      rows AS MATERIALIZED (SELECT h.key, h.seq, h.u, ts_rank(m.search, q.q, 1) AS rank
        FROM ranked h JOIN ${s}.messages m ON m.session_key = h.key AND m.seq = h.seq, q),
      per AS (SELECT key, max(u) AS u, max(rank) AS rank, count(*)::int AS n FROM rows GROUP BY key),
      titles AS (SELECT e.key, e.updated_at AS u FROM ${s}.entries e, q WHERE ${SESSION_SEARCH_TEXT} @@ q.q${scope}),
      found AS (SELECT coalesce(per.key, titles.key) AS key, coalesce(per.u, titles.u) AS u, per.rank,
          coalesce(per.n, 0) AS n, titles.key IS NOT NULL AS title
        FROM per FULL JOIN titles ON titles.key = per.key),
      page AS (SELECT * FROM found ORDER BY title DESC, coalesce(rank, 0) DESC, u DESC, key ASC
        LIMIT ${param(limit + 1)} OFFSET ${param(offset)})
    SELECT e.data, p.key, p.rank, p.n, p.title, (SELECT count(*) FROM hits) > $2 AS truncated, b.seqs, b.datas
    FROM page p JOIN ${s}.entries e ON e.key = p.key
      LEFT JOIN LATERAL (SELECT array_agg(t.seq ORDER BY t.rank DESC, t.seq DESC) AS seqs,
          array_agg(m.data ORDER BY t.rank DESC, t.seq DESC) AS datas
        FROM (SELECT r.seq, r.rank FROM rows r WHERE r.key = p.key ORDER BY r.rank DESC, r.seq DESC
          LIMIT ${perSession}) t
        JOIN ${s}.messages m ON m.session_key = p.key AND m.seq = t.seq) b ON true
    ORDER BY p.title DESC, coalesce(p.rank, 0) DESC, p.u DESC, p.key ASC`;
    const probe = `WITH q AS (SELECT to_tsquery('simple', $1) AS q)
    SELECT count(*) > $2 AS truncated FROM (
      SELECT 1 FROM ${s}.messages m JOIN ${s}.entries e ON e.key = m.session_key, q
      WHERE m.search @@ q.q${scope} LIMIT $2 + 1) m`;
    return { text, probe, values, probeValues };
  }

  return {
    async searchSessions(db: Db, query: SearchSessionsQuery): Promise<SessionSearchPage> {
      const { terms, none, limit, offset, perSession, cap } = searchBounds(query);
      if (none) return { hits: [], hasMore: false, truncated: false };
      const match = tsQuery(terms);
      const { text, probe, values, probeValues } = hitsQuery(query, match, {
        cap,
        limit,
        offset,
        perSession,
      });
      const rows = (await db.query<HitRow>(text, values)).rows;
      const truncated =
        rows[0]?.truncated ??
        (await db.query<{ truncated: boolean }>(probe, probeValues)).rows[0]?.truncated === true;
      const page = rows.slice(0, limit);
      const hits: SessionSearchHit[] = page.map((row) => {
        const relevance = row.rank === null ? 0 : Math.max(0, Number(row.rank));
        const datas = row.datas ?? [];
        return {
          entry: JSON.parse(row.data) as StoredEntry,
          score: (row.title ? 1 : 0) + relevance / (1 + relevance),
          matchedMessages: row.n,
          messages: datas.map((data, i) =>
            messageMatch({ ...(JSON.parse(data) as StoredMessage), seq: Number(row.seqs?.[i]) }, terms),
          ),
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
