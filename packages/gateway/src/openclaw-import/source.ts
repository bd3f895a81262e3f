import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
/** What the layout readers hand the import: OpenClaw's sessions as it stored them, and what could not be read. */

/** Which on-disk layout a session came from. */
export type OpenClawLayout = "sqlite" | "json";

/** An error's message, for a problem's `reason`. */
export const describeError = (error: unknown): string =>
  error instanceof Error ? error.message : String(error);

/** The per-agent file at `agents/<agentId>/<...segments>` of a state directory, for each agent that has one. */
export function findAgentFiles(stateDir: string, ...segments: string[]): { agentId: string; file: string }[] {
  const agentsDir = join(stateDir, "agents");
  if (!existsSync(agentsDir)) return [];
  return readdirSync(agentsDir, { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .map((d) => ({ agentId: d.name, file: join(agentsDir, d.name, ...segments) }))
    .filter((s) => existsSync(s.file))
    .sort((a, b) => a.agentId.localeCompare(b.agentId));
}

/** One OpenClaw session as stored: its key, its entry (OpenClaw's `SessionEntry` JSON) and its transcript events. */
export interface OpenClawSourceSession {
  layout: OpenClawLayout;
  /** The agent whose directory holds it (`agents/<agentId>/…`). */
  agentId: string;
  /** The key as OpenClaw stored it (early versions also kept bare keys such as `main`). */
  key: string;
  entry: Record<string, unknown>;
  /** The transcript's events on the active branch, oldest first (`message` events and others). */
  events: Record<string, unknown>[];
  /** Where it was read: a file, or a file and row, for reports. */
  source: string;
  /** The transcript was not found: the entry is imported without messages. */
  missingTranscript?: string | undefined;
}

/** An entry the import could not read, and why. Nothing of it is written. */
export interface OpenClawImportProblem {
  /** The file (and line or row) that could not be read. */
  path: string;
  /** The session key, when the problem is one session's. */
  key?: string | undefined;
  reason: string;
}

/** What a layout reader found in a state directory. */
export interface OpenClawSource {
  sessions: OpenClawSourceSession[];
  problems: OpenClawImportProblem[];
}

/** A plain JSON object, or undefined. */
export function asObject(value: unknown): Record<string, unknown> | undefined {
  return value !== null && typeof value === "object" && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : undefined;
}

/**
 * The active branch of a transcript: OpenClaw's events form a tree (`id`, `parentId`); the branch ends at the last
 * event and follows `parentId` back. Events without ids (older transcripts) keep their file order.
 */
export function activeBranch(events: Record<string, unknown>[]): Record<string, unknown>[] {
  const byId = new Map<string, Record<string, unknown>>();
  for (const event of events) if (typeof event.id === "string") byId.set(event.id, event);
  const withIds = events.filter((e) => e.type !== "session");
  const last = withIds.at(-1);
  if (last === undefined || withIds.some((e) => typeof e.id !== "string")) return withIds;
  const branch: Record<string, unknown>[] = [];
  const seen = new Set<string>();
  let current: Record<string, unknown> | undefined = last;
  while (current !== undefined && !seen.has(current.id as string)) {
    seen.add(current.id as string);
    branch.push(current);
    current = typeof current.parentId === "string" ? byId.get(current.parentId) : undefined;
  }
  return branch.reverse();
}
