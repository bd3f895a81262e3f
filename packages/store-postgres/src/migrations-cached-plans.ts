import { UNREADABLE_ESCAPE } from "./search.js";

// Migration 8 (see MIGRATIONS in migrations.ts). Part of released migrations once shipped: never change it, add a
// migration instead.

/**
 * The two SQL-language functions that run for every row a run writes, as PL/pgSQL, with the same results. Postgres
 * parses and plans a SQL function that it cannot inline each time a statement calls it, and tries to inline it each
 * time it sets up an expression that calls it: `message_search_text` on every message inserted (the generated
 * `messages.search` column's expression is set up per insert) and `json_with` on every entry a run start or end
 * rewrites. Profiled through `serve` on a run's path, these were a quarter of Postgres's CPU. A PL/pgSQL function's
 * statements are planned once per connection and kept.
 *
 * Replacing an immutable function's body leaves the stored `search` values as they are: they were computed by the
 * same text operations, so they stay what this function gives.
 */
export const VERSION_8 = (s: string) => `
CREATE OR REPLACE FUNCTION ${s}.message_search_text(doc text) RETURNS text LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
  j json := regexp_replace(doc, ${UNREADABLE_ESCAPE}, '\\1 ', 'g')::json;
BEGIN
  IF j->>'role' IN ('toolResult', 'tool') THEN
    RETURN NULL;
  END IF;
  CASE json_typeof(j->'content')
    WHEN 'string' THEN
      RETURN j->>'content';
    WHEN 'array' THEN
      RETURN (SELECT string_agg(p.value->>'text', chr(10) ORDER BY p.i)
        FROM json_array_elements(j->'content') WITH ORDINALITY AS p(value, i)
        WHERE json_typeof(p.value) = 'object' AND p.value->>'type' = 'text' AND json_typeof(p.value->'text') = 'string');
    ELSE
      RETURN NULL;
  END CASE;
END
$$;

CREATE OR REPLACE FUNCTION ${s}.json_with(doc text, fields jsonb) RETURNS text LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
  RETURN (SELECT json_object_agg(k, v)::text FROM (
    SELECT key AS k, value AS v FROM json_each(doc::json) WHERE NOT fields ? key
    UNION ALL
    SELECT key, value::json FROM jsonb_each(fields)
  ) f);
END
$$;
`;
