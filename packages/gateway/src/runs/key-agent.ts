import { parseSessionKey } from "@sessions/core";

/** Keys parsed lately (a hot session's key repeats on every run); cleared when full, so it stays small. */
const agentIds = new Map<string, string | null>();
const MAX_KEYS = 4096;

/**
 * The agent id a session key names (`agent:<id>:…`), or undefined for a key that names none or does not parse.
 * The same as `parseSessionKey(key)?.agentId`, parsed once per key.
 */
export function agentIdOfKey(key: string): string | undefined {
  let id = agentIds.get(key);
  if (id === undefined) {
    id = parseSessionKey(key)?.agentId ?? null;
    if (agentIds.size >= MAX_KEYS) agentIds.clear();
    agentIds.set(key, id);
  }
  return id ?? undefined;
}
