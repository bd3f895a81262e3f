// The five session tools as a registry: each tool's contract (its LLM-facing description, zod schemas and JSON
// Schema for any provider) and the validation of a call's parameters. The schemas themselves are in tools.ts.
import { z } from "zod";
import { describeValue, SessionsError } from "./errors.js";
import { toSessionsError } from "./schema-errors.js";
import { SESSION_TOOL_NAMES, type SessionToolName } from "./tool-names.js";
import {
  AgentsListParams,
  AgentsListResult,
  SessionsHistoryParams,
  SessionsHistoryResult,
  SessionsListParams,
  SessionsListResult,
  SessionsSendParams,
  SessionsSendResult,
  SessionsSpawnParams,
  SessionsSpawnResult,
  type SessionToolParamsMap,
  type SessionToolResultMap,
} from "./tools.js";

/** A JSON Schema (draft 2020-12) object for a tool's parameters: `type: "object"`, no top-level anyOf/oneOf. */
export type ToolJsonSchema = { type: "object"; properties: Record<string, unknown> } & Record<
  string,
  unknown
>;

/** One tool's contract: name, description for the model, zod schemas, and the JSON Schema for any provider. */
export interface SessionToolContract<N extends SessionToolName = SessionToolName> {
  name: N;
  description: string;
  parameters: z.ZodType<SessionToolParamsMap[N]>;
  result: z.ZodType<SessionToolResultMap[N]>;
  jsonSchema: ToolJsonSchema;
}

/** Drops the ±2^53 bounds zod adds to every integer: noise to a model, and some providers reject them. */
function dropSafeIntegerBounds(node: unknown): void {
  if (node === null || typeof node !== "object") return;
  if (Array.isArray(node)) {
    for (const item of node) dropSafeIntegerBounds(item);
    return;
  }
  const record = node as Record<string, unknown>;
  if (record.minimum === Number.MIN_SAFE_INTEGER) delete record.minimum;
  if (record.maximum === Number.MAX_SAFE_INTEGER) delete record.maximum;
  for (const value of Object.values(record)) dropSafeIntegerBounds(value);
}

function toolJsonSchema(schema: z.ZodType): ToolJsonSchema {
  const json = z.toJSONSchema(schema, { target: "draft-2020-12", io: "input", unrepresentable: "any" });
  dropSafeIntegerBounds(json);
  return json as ToolJsonSchema;
}

function contract<N extends SessionToolName>(
  name: N,
  description: string,
  parameters: z.ZodType<SessionToolParamsMap[N]>,
  result: z.ZodType<SessionToolResultMap[N]>,
): SessionToolContract<N> {
  let jsonSchema: ToolJsonSchema | undefined;
  return {
    name,
    description,
    parameters,
    result,
    get jsonSchema(): ToolJsonSchema {
      jsonSchema ??= toolJsonSchema(parameters);
      return jsonSchema;
    },
  };
}

/** The five session tools: name, LLM-facing description, zod params and result, JSON Schema for any provider. */
export const sessionTools: { readonly [N in SessionToolName]: SessionToolContract<N> } = {
  sessions_list: contract(
    "sessions_list",
    "List the chat sessions you can see (newest first): key, kind, channel, label, last update. Filter by kinds or recent activity; optionally include the last few messages of each. With query, search them instead: the sessions whose transcript, key or label contain those words, best match first, each with the matching snippet.",
    SessionsListParams,
    SessionsListResult,
  ),
  sessions_history: contract(
    "sessions_history",
    "Read the recent transcript of one session (by key or sessionId from sessions_list), oldest first. Tool results are left out unless includeTools is true.",
    SessionsHistoryParams,
    SessionsHistoryResult,
  ),
  sessions_send: contract(
    "sessions_send",
    "Send a message into another session and, unless timeoutSeconds is 0, wait for that session's reply. The message is marked as coming from your session, not from a user. With label (or labels, optionally agentId) instead of sessionKey, send it to every session with that label you can see: each answers on its own, listed in targets. A remote agent from agents_list is sent to at its sessionKey.",
    SessionsSendParams,
    SessionsSendResult,
  ),
  sessions_spawn: contract(
    "sessions_spawn",
    "Start a sub-agent on a task in its own new session. Returns at once (status accepted); the sub-agent reports its result back to this chat when it finishes.",
    SessionsSpawnParams,
    SessionsSpawnResult,
  ),
  agents_list: contract(
    "agents_list",
    "List the agent ids you may use as agentId in sessions_spawn (your own agent first), then the remote agents you may talk to with sessions_send (remote: true, with the sessionKey to send to).",
    AgentsListParams,
    AgentsListResult,
  ),
};

/**
 * Validates and defaults a tool's parameters.
 * @throws SessionsError `invalid_params` naming the field (`field: "limit"`), or for an unknown tool name.
 */
export function parseToolParams<N extends SessionToolName>(name: N, input: unknown): SessionToolParamsMap[N] {
  const tool = Object.hasOwn(sessionTools, name)
    ? (sessionTools as Record<string, SessionToolContract>)[name]
    : undefined;
  if (tool === undefined) {
    throw new SessionsError(
      "invalid_params",
      `Unknown tool: ${describeValue(name)} (one of ${SESSION_TOOL_NAMES.join(", ")})`,
      {
        field: "name",
      },
    );
  }
  const result = tool.parameters.safeParse(input ?? {});
  if (!result.success) throw toSessionsError(result.error, "invalid_params", `Invalid ${name} parameters`);
  return result.data as SessionToolParamsMap[N];
}
