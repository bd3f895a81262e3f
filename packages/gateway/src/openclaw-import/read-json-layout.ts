import { existsSync, readFileSync } from "node:fs";
import { basename, join } from "node:path";
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
 * OpenClaw's early-2026 layout: per agent, `agents/<agentId>/sessions/sessions.json` (a map of session key → entry)
 * and one JSONL transcript per session (`<sessionId>.jsonl`, or the entry's `sessionFile`).
 */

/** The `sessions.json` files of a state directory, by agent id. */
export function findJsonStores(stateDir: string): { agentId: string; file: string }[] {
  return findAgentFiles(stateDir, "sessions", "sessions.json");
}

/** A transcript's events, or the line that could not be read. */
function readTranscript(file: string): { events: Record<string, unknown>[] } | OpenClawImportProblem {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (error) {
    return { path: file, reason: `cannot read the transcript: ${describeError(error)}` };
  }
  const events: Record<string, unknown>[] = [];
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const line = (lines[i] as string).trim();
    if (line === "") continue;
    let parsed: unknown;
    try {
      parsed = JSON.parse(line);
    } catch (error) {
      return {
        path: `${file}:${i + 1}`,
        reason: `line ${i + 1} is not valid JSON (${describeError(error)})`,
      };
    }
    const event = asObject(parsed);
    if (event === undefined)
      return { path: `${file}:${i + 1}`, reason: `line ${i + 1} is not a JSON object` };
    events.push(event);
  }
  return { events };
}

/** Where an entry's transcript is: its `sessionFile` (by name, in the same folder), else `<sessionId>.jsonl`. */
function transcriptFile(dir: string, entry: Record<string, unknown>, sessionId: string): string {
  if (typeof entry.sessionFile === "string" && entry.sessionFile !== "") {
    const named = join(dir, basename(entry.sessionFile.replaceAll("\\", "/")));
    if (existsSync(named)) return named;
  }
  return join(dir, `${sessionId}.jsonl`);
}

/** Reads one agent's `sessions.json` and the transcripts it names. */
export function readJsonStore(agentId: string, file: string): OpenClawSource {
  const sessions: OpenClawSourceSession[] = [];
  const problems: OpenClawImportProblem[] = [];
  let store: Record<string, unknown> | undefined;
  try {
    store = asObject(JSON.parse(readFileSync(file, "utf8")));
    if (store === undefined) problems.push({ path: file, reason: "not a JSON object of session entries" });
  } catch (error) {
    problems.push({ path: file, reason: `cannot read the session store: ${describeError(error)}` });
  }
  if (store === undefined) return { sessions, problems };
  const dir = join(file, "..");
  for (const [key, value] of Object.entries(store)) {
    const where = `${file} → ${JSON.stringify(key)}`;
    const entry = asObject(value);
    if (entry === undefined) {
      problems.push({ path: where, key, reason: "the entry is not a JSON object" });
      continue;
    }
    const sessionId = entry.sessionId;
    if (typeof sessionId !== "string" || sessionId.trim() === "") {
      problems.push({ path: where, key, reason: "the entry has no sessionId" });
      continue;
    }
    const transcript = transcriptFile(dir, entry, sessionId);
    if (!existsSync(transcript)) {
      sessions.push({
        layout: "json",
        agentId,
        key,
        entry,
        events: [],
        source: where,
        missingTranscript: transcript,
      });
      continue;
    }
    const read = readTranscript(transcript);
    if ("reason" in read) {
      problems.push({ ...read, key });
      continue;
    }
    sessions.push({ layout: "json", agentId, key, entry, events: activeBranch(read.events), source: where });
  }
  return { sessions, problems };
}
