/**
 * Migration 7: `run_start` as migration 2 wrote it, except that a start leaves its session's entry as it is when the
 * entry's `updated_at` is less than a second behind the start (`TOUCH_GRAIN_MS` of @sessions/gateway, which
 * the gateway's own unit of work applies too): the starts of a busy session (a backlog, a burst of messages) do not
 * each rewrite the entry and every index on it. The entry is still answered (`entry_data`); a run's end does the
 * same since migration 10 (end-touch.ts). Derived from migration 2's text, which never changes, so that the two stay
 * one function.
 */
export function startTouchingOncePerSecond(version2: string, s: string): string {
  const from = version2.indexOf(`CREATE FUNCTION ${s}.run_start(`);
  const to = version2.indexOf(`CREATE FUNCTION ${s}.run_end(`, from);
  const touch = `  UPDATE ${s}.entries e SET updated_at = p_now, data = ${s}.json_with(e.data, jsonb_build_object('updatedAt', p_now))
    WHERE e.key = p_key RETURNING e.data INTO entry_data;`;
  const start = from < 0 || to < 0 ? "" : version2.slice(from, to);
  if (!start.includes(touch)) throw new Error("migration 7: migration 2's run_start is not the one expected");
  return start.replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION").replace(
    touch,
    `  SELECT e.data INTO entry_data FROM ${s}.entries e WHERE e.key = p_key AND e.updated_at > p_now - 1000;
  IF NOT FOUND THEN
${touch}
  END IF;`,
  );
}
