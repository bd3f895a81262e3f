/**
 * Migration 10: `run_end` as migration 2 wrote it, except that an end moves its session's `updated_at` only when it
 * is a second or more behind the end (`TOUCH_GRAIN_MS` of @sessions/gateway, whose own unit of work does the same),
 * and rewrites the entry only when the end changes it: the ends of a busy session's runs (a backlog) do not each
 * rewrite its entry and every index on it. Tokens and flags an end brings are written at once, the `updated_at` and
 * the list indexes on it left alone (the update can stay on its page: no index entry). The entry is answered as
 * before (`entry_put`: the session has one). Derived from migration 2's text, which never changes, so that the two
 * stay one function; `planWithoutSeqScans` (migration 9) is set again on the function it replaces.
 */
export function endTouchingOncePerSecond(version2: string, s: string): string {
  const from = version2.indexOf(`CREATE FUNCTION ${s}.run_end(`);
  const end = from < 0 ? "" : version2.slice(from, version2.indexOf("$$;", from) + 3);
  const read = `  SELECT e.data INTO v_entry FROM ${s}.entries e WHERE e.key = p_key;`;
  const fields = `    v_fields := jsonb_build_object('updatedAt', p_delta->'updatedAt');`;
  const write = `    UPDATE ${s}.entries e SET updated_at = (p_delta->>'updatedAt')::bigint, data = ${s}.json_with(v_entry, v_fields)
      WHERE e.key = p_key;`;
  const declared = "  v_token text;\n";
  for (const part of [read, fields, write, declared])
    if (!end.includes(part)) throw new Error("migration 10: migration 2's run_end is not the one expected");
  return end
    .replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION")
    .replace(declared, `${declared}  v_updated bigint;\n`)
    .replace(
      read,
      `  SELECT e.data, e.updated_at INTO v_entry, v_updated FROM ${s}.entries e WHERE e.key = p_key;`,
    )
    .replace(fields, `    v_fields := '{}';`)
    .replace(
      write,
      `    IF v_updated <= (p_delta->>'updatedAt')::bigint - 1000 THEN
      v_fields := v_fields || jsonb_build_object('updatedAt', p_delta->'updatedAt');
      UPDATE ${s}.entries e SET updated_at = (p_delta->>'updatedAt')::bigint, data = ${s}.json_with(v_entry, v_fields)
        WHERE e.key = p_key;
    ELSIF EXISTS (SELECT 1 FROM jsonb_each(v_fields) f WHERE (v_doc->f.key)::jsonb IS DISTINCT FROM f.value) THEN
      UPDATE ${s}.entries e SET data = ${s}.json_with(v_entry, v_fields) WHERE e.key = p_key;
    END IF;`,
    );
}
