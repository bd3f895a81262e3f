import {
  parseToolParams,
  SessionsError,
  type SessionToolName,
  sessionTools,
  type TranscriptMessage,
} from "@sessions/core";
import type { GatewayContext, RunLane } from "../context.js";
import type { GatewayTool } from "../gateway.js";
import { LaneLost } from "../run-table.js";
import type { ToolCall } from "../runs/cause.js";
import { appendUnderLane } from "../store/run-units.js";
import type { RunRecord } from "../store/types.js";
import { agentsListTool } from "./agents.js";
import { broadcastTool } from "./broadcast.js";
import { historyTool } from "./history.js";
import { listTool } from "./list.js";
import { searchListTool } from "./list-search.js";
import { sendTool } from "./send.js";
import { spawnTool } from "./spawn.js";
import { allowedToolNames, type ToolContext, toolNotAllowed } from "./tool-context.js";

/**
 * The tools a run of `tool.requesterKey` gets, bound to it. Inside a run (`runId` set) each call and its result
 * are written to the transcript; a tool that throws answers `{ status: "error" }` instead of failing the run.
 */
export function buildTools(
  ctx: GatewayContext,
  tool: ToolContext,
  run?: RunRecord,
  lane?: RunLane,
): GatewayTool[] {
  const runId = run?.runId;
  const allowed = allowedToolNames(ctx, tool);
  const tools: GatewayTool[] = [];
  let counter = 0;
  // In a cluster each line is fenced by the run's lane: refused (another gateway took the lane), the run is lost
  // and the tool does not run, so a gateway held up past its lease acts on nothing more.
  const append = async (message: TranscriptMessage) => {
    if (lane === undefined) return void (await ctx.store.appendMessage(tool.requesterKey, message));
    if ((await appendUnderLane(ctx.store, tool.requesterKey, message, lane.lease, lane.signal)) !== undefined)
      return;
    const lost = new LaneLost(lane.lease.name, "a tool call came after the run lost the session's lane");
    lane.lost(lost);
    throw lost;
  };
  const record = async (name: string, params: unknown, exec: (call?: ToolCall) => Promise<unknown>) => {
    const toolCallId = `${runId ?? "direct"}:${++counter}`;
    if (runId !== undefined) {
      await append({
        role: "assistant",
        content: [{ type: "tool-call", toolCallId, toolName: name, input: params }],
        ts: ctx.clock.now(),
        runId,
      });
    }
    const call = { toolCallId, tool: name, params, sandboxed: tool.sandboxed };
    if (run !== undefined) ctx.lifecycle.emit("toolCalled", run, call);
    let result: unknown;
    let failure: string | undefined;
    try {
      result = await exec(run === undefined ? undefined : { run, toolCallId });
    } catch (error) {
      failure = error instanceof Error ? error.message : String(error);
      result = SessionsError.isInstance(error)
        ? { status: "error", code: error.code, error: error.message }
        : { status: "error", error: failure };
    }
    if (run !== undefined) ctx.lifecycle.emit("toolReturned", run, call, result, failure);
    if (runId !== undefined) {
      await append({
        role: "toolResult",
        content: [{ type: "tool-result", toolCallId, toolName: name, output: result }],
        ts: ctx.clock.now(),
        runId,
      });
    }
    return result;
  };
  for (const contract of Object.values(sessionTools)) {
    if (!allowed.has(contract.name)) continue;
    tools.push({
      name: contract.name,
      description: contract.description,
      parameters: contract.parameters,
      jsonSchema: contract.jsonSchema,
      execute: (params) =>
        record(contract.name, params, (call) => executeTool(ctx, tool, contract.name, params, call)),
    });
  }
  for (const extra of ctx.extraTools) {
    if (!allowed.has(extra.name)) continue;
    tools.push({ ...extra, execute: (params) => record(extra.name, params, () => extra.execute(params)) });
  }
  return tools;
}

/** Validates and runs one session tool as `tool.requesterKey`. */
export async function executeTool(
  ctx: GatewayContext,
  tool: ToolContext,
  name: SessionToolName,
  raw: unknown,
  /** The run and tool call it is made in; undefined for a call from outside any run (`sessions.tools.call`). */
  call?: ToolCall,
): Promise<unknown> {
  if (!allowedToolNames(ctx, tool).has(name)) return toolNotAllowed(name);
  switch (name) {
    case "sessions_list": {
      const params = parseToolParams("sessions_list", raw);
      return params.query === undefined ? listTool(ctx, tool, params) : searchListTool(ctx, tool, params);
    }
    case "sessions_history":
      return historyTool(ctx, tool, parseToolParams("sessions_history", raw));
    case "sessions_send": {
      const params = parseToolParams("sessions_send", raw);
      const { sessionKey } = params;
      return sessionKey === undefined
        ? broadcastTool(ctx, tool, params, call)
        : sendTool(ctx, tool, { ...params, sessionKey }, call);
    }
    case "sessions_spawn":
      return spawnTool(ctx, tool, parseToolParams("sessions_spawn", raw), call);
    case "agents_list":
      parseToolParams("agents_list", raw);
      return agentsListTool(ctx, tool);
  }
}
