import {
  parseToolParams,
  SESSION_TOOL_NAMES,
  type SessionToolName,
  type SessionToolParamsMap,
  type SessionToolResultMap,
  sessionTools,
  type ToolJsonSchema,
} from "@sessions/core";
import type { z } from "zod";
import type { GatewayClient } from "./client.js";

/** One session tool, bound to a requester session and executed by the gateway (`sessions.tools.call`). */
export interface SessionTool<N extends SessionToolName = SessionToolName> {
  name: N;
  description: string;
  /** zod schema of the parameters (validation happens before anything is sent). */
  parameters: z.ZodType<SessionToolParamsMap[N]>;
  /** JSON Schema (draft 2020-12) of the parameters, as the core exports it. */
  jsonSchema: ToolJsonSchema;
  /** Runs the tool on the gateway; validates `params` first (invalid → `invalid_params`). */
  execute(params: unknown, options?: { signal?: AbortSignal | undefined }): Promise<SessionToolResultMap[N]>;
}

/** Options of `createSessionTools`. */
export interface SessionToolsOptions {
  /** The session the tools act for (`main`, `agent:ops:discord:group:123`, …). */
  requesterKey: string;
  /** Sandboxed sessions see at most their own tree (SPEC 7). */
  sandboxed?: boolean | undefined;
  /** Only these tools (default: all five). */
  only?: readonly SessionToolName[] | undefined;
}

/** The five session tools for any LLM stack, executing through the gateway as `requesterKey`. */
export function createSessionTools(client: GatewayClient, options: SessionToolsOptions): SessionTool[] {
  const names = options.only ?? SESSION_TOOL_NAMES;
  return names.map((name) => {
    const contract = sessionTools[name];
    return {
      name,
      description: contract.description,
      parameters: contract.parameters,
      jsonSchema: contract.jsonSchema,
      async execute(params: unknown, exec: { signal?: AbortSignal | undefined } = {}) {
        parseToolParams(name, params);
        return (await client.callTool(
          {
            requesterKey: options.requesterKey,
            name,
            params: params ?? {},
            ...(options.sandboxed ? { sandboxed: true } : {}),
          },
          exec.signal ? { signal: exec.signal } : {},
        )) as never;
      },
    } as SessionTool;
  });
}

/** The parameters schema as providers take it (`$schema` dropped: some strict modes reject it). */
export function providerJsonSchema(tool: Pick<SessionTool, "jsonSchema">): Record<string, unknown> {
  const { $schema: _dialect, ...rest } = tool.jsonSchema;
  return rest;
}

/** OpenAI Chat Completions / Responses function-calling definitions. */
export function toOpenAiTools(tools: readonly SessionTool[]) {
  return tools.map((tool) => ({
    type: "function" as const,
    function: { name: tool.name, description: tool.description, parameters: providerJsonSchema(tool) },
  }));
}

/** Anthropic Messages API tool definitions. */
export function toAnthropicTools(tools: readonly SessionTool[]) {
  return tools.map((tool) => ({
    name: tool.name,
    description: tool.description,
    input_schema: providerJsonSchema(tool) as { type: "object"; [key: string]: unknown },
  }));
}

/**
 * Runs a model's tool call by name. `args` may be the JSON string OpenAI sends or an object (Anthropic).
 * Unknown tools and invalid arguments come back as `{ status: "error" }` results the model can read.
 */
export async function runToolCall(
  tools: readonly SessionTool[],
  name: string,
  args: unknown,
): Promise<unknown> {
  const tool = tools.find((t) => t.name === name);
  if (tool === undefined) return { status: "error", code: "unknown_tool", error: `Unknown tool: ${name}` };
  let params = args;
  if (typeof args === "string") {
    try {
      params = args.trim() === "" ? {} : JSON.parse(args);
    } catch {
      return { status: "error", code: "invalid_params", error: "Tool arguments are not valid JSON" };
    }
  }
  try {
    return await tool.execute(params);
  } catch (error) {
    const e = error as { code?: string | undefined; message?: string | undefined };
    return { status: "error", code: e.code ?? "error", error: e.message ?? String(error) };
  }
}
