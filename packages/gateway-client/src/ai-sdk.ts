import { jsonSchema, type Tool, tool } from "ai";
import { providerJsonSchema, type SessionTool } from "./tools.js";

/** The session tools as Vercel AI SDK `tool()` objects, ready for `generateText({ tools })`. */
export function toAiSdkTools(tools: readonly SessionTool[]): Record<string, Tool> {
  const out: Record<string, Tool> = {};
  for (const t of tools) {
    out[t.name] = tool({
      description: t.description,
      inputSchema: jsonSchema(providerJsonSchema(t) as Parameters<typeof jsonSchema>[0]),
      execute: async (input, { abortSignal }) => t.execute(input, abortSignal ? { signal: abortSignal } : {}),
    });
  }
  return out;
}
