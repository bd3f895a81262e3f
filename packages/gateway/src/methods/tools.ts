import {
  parseMethodParams,
  SessionsError,
  type SessionToolName,
  sessionTools,
  toSessionsError,
} from "@sessions/core";
import type { GatewayContext, ToolContext } from "../context.js";
import type { RequestToolCallInfo } from "../lifecycle.js";
import { ensureEntry, operatorKey } from "../sessions/entries.js";
import { executeTool } from "../tools/build.js";
import { allowedToolNames, markSandboxed, toolContextFor, toolNotAllowed } from "../tools/tool-context.js";

/**
 * Executes one tool as `requesterKey` outside a run (operators, MCP, bound tokens). A sandboxed call sandboxes the
 * session from then on, so the runs the gateway later starts for it are clamped too. The lifecycle hears of the
 * call (`requestToolCalled`, `requestToolReturned`): tracing makes its `execute_tool` span from them.
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
  const extra = Object.hasOwn(sessionTools, name) ? undefined : ctx.extraTools.find((t) => t.name === name);
  if (extra === undefined && !Object.hasOwn(sessionTools, name))
    throw new SessionsError("invalid_params", `Unknown tool: ${name}`, { field: "name" });
  const tool = toolContextFor(ctx, await entryOf(ctx, key, sandboxed, extra !== undefined), key, sandboxed);
  const call: RequestToolCallInfo = { tool: name, params, requesterKey: key, sandboxed: tool.sandboxed };
  ctx.lifecycle.emit("requestToolCalled", call);
  let result: unknown;
  try {
    const traced = call.traceparent === undefined ? tool : { ...tool, traceparent: call.traceparent };
    result = await execute(ctx, traced, name, params, extra);
  } catch (error) {
    ctx.lifecycle.emit("requestToolReturned", call, undefined, {
      message: error instanceof Error ? error.message : String(error),
      code: SessionsError.isInstance(error) ? error.code : "internal",
    });
    throw error;
  }
  ctx.lifecycle.emit("requestToolReturned", call, result);
  return result;
}

/** The requester's entry: a session tool's call creates it, an extra tool's only reads it (or marks it sandboxed). */
async function entryOf(ctx: GatewayContext, key: string, sandboxed: boolean, extra: boolean) {
  if (extra) return sandboxed ? markSandboxed(ctx, key) : ctx.store.getEntry(key);
  const entry = await ensureEntry(ctx, key);
  return sandboxed ? ((await markSandboxed(ctx, key)) ?? entry) : entry;
}

/** Runs a session tool, or an extra tool the session may use, with its params checked. */
async function execute(
  ctx: GatewayContext,
  tool: ToolContext,
  name: string,
  params: unknown,
  extra: GatewayContext["extraTools"][number] | undefined,
): Promise<unknown> {
  if (extra === undefined) return executeTool(ctx, tool, name as SessionToolName, params);
  if (!allowedToolNames(ctx, tool).has(name)) return toolNotAllowed(name);
  const checked = extra.parameters.safeParse(params ?? {});
  if (!checked.success) throw toSessionsError(checked.error, "invalid_params", `Invalid ${name} parameters`);
  return extra.execute(checked.data);
}

export const toolMethods = {
  async "sessions.tools.call"(ctx: GatewayContext, params: unknown): Promise<unknown> {
    const p = parseMethodParams("sessions.tools.call", params);
    return callTool(ctx, p.requesterKey, p.name, p.params ?? {}, { sandboxed: p.sandboxed === true });
  },
};
