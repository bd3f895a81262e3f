export const SESSION_TOOL_NAMES = [
  "sessions_list",
  "sessions_history",
  "sessions_send",
  "sessions_spawn",
  "agents_list",
] as const;

export type SessionToolName = (typeof SESSION_TOOL_NAMES)[number];

export function isSessionToolName(name: unknown): name is SessionToolName {
  return typeof name === "string" && (SESSION_TOOL_NAMES as readonly string[]).includes(name);
}
