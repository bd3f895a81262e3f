import { z } from "zod";
import { normalizeAgentId } from "./keys.js";

/** The session of a remote agent that `agents_list` offers first: `agent:<id>:a2a:main`. */
export const REMOTE_MAIN_NAME = "main";

/** An absolute http(s) URL with a host (core parses no URLs: it only checks the shape). */
const httpUrl = z
  .string()
  .trim()
  .regex(/^https?:\/\/[^\s/?#]+[^\s]*$/i, "must be an http:// or https:// URL");

/**
 * One `agents.remotes[]` entry: an agent that lives behind another server and speaks A2A. Its sessions are
 * `agent:<id>:a2a:<name>`, each one A2A context; `sessions_send` to one becomes an A2A `SendMessage`.
 */
export const RemoteAgentConfigSchema = z.strictObject({
  /** The id the session tools know it by (an agent id: not one of `agents.list`). */
  id: z
    .string()
    .trim()
    .min(1)
    .transform((id) => normalizeAgentId(id)),
  /**
   * Where its Agent Card is: the card's own URL (ending in `.json`), or the agent's base URL, under which the card is
   * at `.well-known/agent-card.json`.
   */
  url: httpUrl,
  name: z.string().trim().min(1).optional(),
  /** What the agent does, for `agents_list` (default: the card's description). */
  description: z.string().trim().min(1).optional(),
  /** How calls to it authenticate: a bearer token, given or read from an environment variable when they are made. */
  auth: z
    .strictObject({
      token: z.string().min(1).optional(),
      tokenEnv: z.string().trim().min(1).optional(),
    })
    .refine((auth) => (auth.token === undefined) !== (auth.tokenEnv === undefined), {
      message: "give one of token and tokenEnv",
    })
    .optional(),
  /** Other HTTP headers sent with every call (an API key header, say). */
  headers: z.record(z.string(), z.string()).optional(),
});

/** One parsed `agents.remotes[]` entry. */
export type RemoteAgentConfig = z.output<typeof RemoteAgentConfigSchema>;

/** The configured remote agent with that id, if any. */
export function findRemoteAgent(
  config: { agents: { remotes: readonly RemoteAgentConfig[] } },
  agentId: string | undefined,
): RemoteAgentConfig | undefined {
  if (agentId === undefined) return undefined;
  return config.agents.remotes.find((remote) => remote.id === agentId);
}

/** The session key of conversation `name` with remote agent `id`. */
export function remoteSessionKey(id: string, name: string = REMOTE_MAIN_NAME): string {
  return `agent:${id}:a2a:${name}`;
}
