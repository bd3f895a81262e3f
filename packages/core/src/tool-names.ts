/** The five session tools' names. */
export const SESSION_TOOL_NAMES = [
  "sessions_list",
  "sessions_history",
  "sessions_send",
  "sessions_spawn",
  "agents_list",
] as const;

/** One of the five session tools' names. */
export type SessionToolName = (typeof SESSION_TOOL_NAMES)[number];

/** Whether `name` is one of the five session tools. */
export function isSessionToolName(name: unknown): name is SessionToolName {
  return typeof name === "string" && (SESSION_TOOL_NAMES as readonly string[]).includes(name);
}
