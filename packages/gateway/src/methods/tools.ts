import {
  parseMethodParams,
  SessionsError,
  type SessionToolName,
  sessionTools,
  toSessionsError,
} from "@sessions/core";
import type { GatewayContext } from "../context.js";
import { ensureEntry, operatorKey } from "../sessions/entries.js";
import { executeTool } from "../tools/build.js";
import { allowedToolNames, markSandboxed, toolContextFor, toolNotAllowed } from "../tools/tool-context.js";

/**
 * Executes one tool as `requesterKey` outside a run (operators, MCP, bound tokens). A sandboxed call sandboxes the
 * session from then on, so the runs the gateway later starts for it are clamped too.
 */
export async function callTool(
  ctx: GatewayContext,
  requesterKey: string,
  name: string,
  params: unknown,
  options: { sandboxed?: boolean | undefined } = {},
): Promise<unknown> {
  const key = operatorKey(ctx, requesterKey, "requesterKey");
  const sandboxed = options.sandboxed === true;
  if (!Object.hasOwn(sessionTools, name)) {
    const extra = ctx.extraTools.find((t) => t.name === name);
    if (extra === undefined)
      throw new SessionsError("invalid_params", `Unknown tool: ${name}`, { field: "name" });
    const entry = sandboxed ? await markSandboxed(ctx, key) : await ctx.store.getEntry(key);
    if (!allowedToolNames(ctx, toolContextFor(ctx, entry, key, sandboxed)).has(name))
      return toolNotAllowed(name);
    const checked = extra.parameters.safeParse(params ?? {});
    if (!checked.success)
      throw toSessionsError(checked.error, "invalid_params", `Invalid ${name} parameters`);
    return extra.execute(checked.data);
  }
  let entry = await ensureEntry(ctx, key);
  if (sandboxed) entry = (await markSandboxed(ctx, key)) ?? entry;
  return executeTool(ctx, toolContextFor(ctx, entry, key, sandboxed), name as SessionToolName, params);
}

export const toolMethods = {
  async "sessions.tools.call"(ctx: GatewayContext, params: unknown): Promise<unknown> {
    const p = parseMethodParams("sessions.tools.call", params);
    return callTool(ctx, p.requesterKey, p.name, p.params ?? {}, { sandboxed: p.sandboxed === true });
  },
};
