// Agent, account and main-key ids as session keys use them: normalised, never throwing.

/** The agent id used when none is configured or given. */
export const DEFAULT_AGENT_ID = "main";
/** The bot account id used when an adapter names none. */
export const DEFAULT_ACCOUNT_ID = "default";
/** Default of `session.mainKey`: the main session is `agent:<id>:main`. */
export const DEFAULT_MAIN_KEY = "main";

const AGENT_ID_RE = /^[a-z0-9][a-z0-9_-]{0,63}$/;

function normalizeId(id: unknown, fallback: string): string {
  if (typeof id !== "string") return fallback;
  const lower = id.trim().toLowerCase();
  if (AGENT_ID_RE.test(lower) && !lower.endsWith("-")) return lower;
  const cleaned = lower
    .replace(/[^a-z0-9_-]+/g, "-")
    .replace(/^[-_]+/, "")
    .slice(0, 64)
    .replace(/-+$/, "");
  return cleaned === "" ? fallback : cleaned;
}

/** `Foo Bar` → `foo-bar`, `../../etc/passwd` → `etc-passwd`, empty → `main`. Never throws. */
export function normalizeAgentId(id?: unknown): string {
  return normalizeId(id, DEFAULT_AGENT_ID);
}

/** Same rule as agent ids, with default `default`. */
export function normalizeAccountId(id?: unknown): string {
  return normalizeId(id, DEFAULT_ACCOUNT_ID);
}

/** `session.mainKey` as keys use it: lower case, no `:`; `main` when unusable. */
export function normalizeMainKey(mainKey: unknown): string {
  if (typeof mainKey !== "string") return DEFAULT_MAIN_KEY;
  const mk = mainKey.trim().toLowerCase();
  return mk === "" || mk.includes(":") ? DEFAULT_MAIN_KEY : mk;
}
