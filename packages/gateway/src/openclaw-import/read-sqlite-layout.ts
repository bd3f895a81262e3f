import Database from "better-sqlite3";
import { decompress } from "fzstd";
import {
  activeBranch,
  asObject,
  describeError,
  findAgentFiles,
  type OpenClawImportProblem,
  type OpenClawSource,
  type OpenClawSourceSession,
} from "./source.js";

/**
 * OpenClaw's 2026.9 layout: per agent, `agents/<agentId>/agent/openclaw-agent.sqlite`. Session rows live in
 * `session_nodes` (key, current session id, the entry as JSON); transcript events in `transcript_events` (JSON, or
 * zstd-compressed JSON for large ones), the active branch in `session_transcript_active_events`. The database is
 * opened read-only: the import never writes to OpenClaw's state.
 */

/** The agent databases of a state directory, by agent id. */
export function findAgentDatabases(stateDir: string): { agentId: string; file: string }[] {
  return findAgentFiles(stateDir, "agent", "openclaw-agent.sqlite");
}
const decoder = new TextDecoder("utf-8", { fatal: true });

interface EventRow {
  seq: number;
  event_json: string | null;
  event_zstd: Buffer | null;
}

/** One stored event as an object; throws naming what is wrong with it. */
function parseEvent(row: EventRow): Record<string, unknown> {
  let text: string;
  if (row.event_json !== null) text = row.event_json;
  else if (row.event_zstd !== null) {
    try {
      text = decoder.decode(decompress(new Uint8Array(row.event_zstd)));
    } catch (error) {
      throw new Error(`event ${row.seq} cannot be decompressed (${describeError(error)})`);
    }
  } else throw new Error(`event ${row.seq} has no content`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new Error(`event ${row.seq} is not valid JSON (${describeError(error)})`);
  }
  const event = asObject(parsed);
  if (event === undefined) throw new Error(`event ${row.seq} is not a JSON object`);
  return event;
}

const hasTable = (db: Database.Database, name: string) =>
  db.prepare("select 1 from sqlite_master where type = 'table' and name = ?").get(name) !== undefined;

/** Reads one agent database's sessions and their transcripts (active branch). */
export function readAgentDatabase(agentId: string, file: string): OpenClawSource {
  const sessions: OpenClawSourceSession[] = [];
  const problems: OpenClawImportProblem[] = [];
  let db: Database.Database;
  try {
    db = new Database(file, { readonly: true, fileMustExist: true });
  } catch (error) {
    return {
      sessions,
      problems: [{ path: file, reason: `cannot open the database: ${describeError(error)}` }],
    };
  }
  try {
    if (!hasTable(db, "session_nodes") || !hasTable(db, "transcript_events")) {
      return {
        sessions,
        problems: [
          { path: file, reason: "not an OpenClaw agent database (no session_nodes/transcript_events)" },
        ],
      };
    }
    const activeTable = hasTable(db, "session_transcript_active_events");
    const rows = db
      .prepare("select session_key, current_session_id, entry_json from session_nodes order by session_key")
      .all() as { session_key: string; current_session_id: string; entry_json: string }[];
    const events = db.prepare(
      "select seq, event_json, event_zstd from transcript_events where session_id = ? order by seq",
    );
    const active = activeTable
      ? db.prepare(
          "select event_seq from session_transcript_active_events where session_id = ? order by active_position",
        )
      : undefined;
    for (const row of rows) {
      const key = row.session_key;
      const where = `${file} → session_nodes ${JSON.stringify(key)}`;
      try {
        let parsed: unknown;
        try {
          parsed = JSON.parse(row.entry_json);
        } catch (error) {
          throw new Error(`entry_json is not valid JSON (${describeError(error)})`);
        }
        const entry = asObject(parsed);
        if (entry === undefined) throw new Error("entry_json is not a JSON object");
        const sessionId = row.current_session_id;
        const all = (events.all(sessionId) as EventRow[]).map((r) => ({ seq: r.seq, event: parseEvent(r) }));
        const order = (active?.all(sessionId) as { event_seq: number }[] | undefined) ?? [];
        let branch: Record<string, unknown>[];
        if (order.length > 0) {
          const bySeq = new Map(all.map((e) => [e.seq, e.event]));
          branch = order.flatMap((o) => {
            const event = bySeq.get(o.event_seq);
            return event === undefined ? [] : [event];
          });
        } else branch = activeBranch(all.map((e) => e.event));
        sessions.push({
          layout: "sqlite",
          agentId,
          key,
          entry: { ...entry, sessionId },
          events: branch,
          source: where,
        });
      } catch (error) {
        problems.push({ path: where, key, reason: describeError(error) });
      }
    }
  } catch (error) {
    problems.push({ path: file, reason: `cannot read the database: ${describeError(error)}` });
  } finally {
    db.close();
  }
  return { sessions, problems };
}
