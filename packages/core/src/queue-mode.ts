import { normalizeChoice } from "./choice.js";

/**
 * What a session does with a user's message that arrives while one of its runs is queued or running:
 * `followup` (default) runs each afterwards; `collect` answers every waiting message in one run; `steer` hands them
 * to the running turn at its next model boundary; `steer-backlog` does that and still runs them afterwards;
 * `interrupt` aborts the running run and starts over with every waiting message; `reject` refuses it as busy.
 */
export const QUEUE_MODES = ["followup", "collect", "interrupt", "steer", "steer-backlog", "reject"] as const;

/** A session's queue mode (see `QUEUE_MODES`). */
export type QueueMode = (typeof QUEUE_MODES)[number];

/** The mode a session uses when nothing sets one. */
export const DEFAULT_QUEUE_MODE: QueueMode = "followup";

/** A queue mode as written (trimmed, case-insensitive; `steer_backlog` and `steerbacklog` too), else `undefined`. */
export function normalizeQueueMode(value: unknown): QueueMode | undefined {
  if (typeof value !== "string") return undefined;
  const folded = value.trim().toLowerCase();
  const spelled = folded === "steer_backlog" || folded === "steerbacklog" ? "steer-backlog" : folded;
  return normalizeChoice(spelled, QUEUE_MODES);
}

/** Where a session's queue mode comes from: its own setting, else its agent's, else the agents' default. */
export interface QueueModeSources {
  session?: unknown;
  agent?: unknown;
  defaults?: unknown;
}

/** The session's queue mode: the first valid of session, agent and defaults, else `followup`. */
export function resolveQueueMode(sources: QueueModeSources): QueueMode {
  return (
    normalizeQueueMode(sources.session) ??
    normalizeQueueMode(sources.agent) ??
    normalizeQueueMode(sources.defaults) ??
    DEFAULT_QUEUE_MODE
  );
}

/** A parsed `/queue <mode>`: `reset` clears the session's own mode; `mode: null` means show usage. */
export type QueueCommand = { mode: QueueMode | "reset" | null };

/** The usage line `/queue` answers with when its argument is missing or wrong. */
export const QUEUE_COMMAND_USAGE = `Usage: /queue ${QUEUE_MODES.join(" | ")} | reset`;

/**
 * Parses the standalone chat message `/queue <mode>` (also `/queue@bot collect`; `reset` or `default` clears).
 * `null` → not a queue command; `{ mode: null }` → a queue command without a valid mode (show usage).
 */
export function parseQueueCommand(text: unknown): QueueCommand | null {
  if (typeof text !== "string") return null;
  const match = /^\/queue(?:@[\w.-]+)?(?:\s+([\s\S]*))?$/i.exec(text.trim());
  if (match === null) return null;
  const arg = (match[1] ?? "").trim().toLowerCase();
  if (arg === "reset" || arg === "default") return { mode: "reset" };
  return { mode: normalizeQueueMode(arg) ?? null };
}
