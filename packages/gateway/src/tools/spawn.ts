import {
  buildSubagentSessionKey,
  checkSessionAccess,
  findAgentConfig,
  findRemoteAgent,
  type parseToolParams,
  remoteSessionKey,
  type SessionsSpawnResult,
} from "@sessions/core";
import { interSession } from "../a2a/provenance.js";
import { bindThread } from "../bindings/bind.js";
import { unbind } from "../bindings/expiry.js";
import type { GatewayContext } from "../context.js";
import { type BudgetExceeded, budgetSpentFor, isBudgetExceeded } from "../runs/budget.js";
import { type ToolCall, toolCause } from "../runs/cause.js";
import { startRun } from "../runs/start.js";
import { channelFor, ensureEntry } from "../sessions/entries.js";
import { timeOrderedId } from "../store/time-ordered-id.js";
import type { SubagentRecord } from "../store/types.js";
import { budgetRefusal, guardTree, noteGuard } from "./guards.js";
import { type ToolContext, toolContextFor } from "./tool-context.js";

/** `sessions_spawn` (SPEC 6): checks, reserves a child slot, creates the child (thread-bound if asked), runs it. */
export async function spawnTool(
  ctx: GatewayContext,
  tool: ToolContext,
  params: ReturnType<typeof parseToolParams<"sessions_spawn">>,
  call?: ToolCall,
): Promise<SessionsSpawnResult> {
  const { config, store, clock } = ctx;
  const defaults = config.agents.defaults.subagents;
  const requester = await store.getEntry(tool.requesterKey);
  const targetAgent = params.agentId ?? tool.agentId;
  if (findRemoteAgent(config, targetAgent) !== undefined) {
    return {
      status: "forbidden",
      code: "spawn_agent_not_allowed",
      error: `${targetAgent} is a remote agent (A2A): talk to it with sessions_send at ${remoteSessionKey(targetAgent)}`,
    };
  }
  const requesterConfig = findAgentConfig(config, tool.agentId);
  const decision = checkSessionAccess({
    action: "spawn",
    requesterKey: tool.requesterKey,
    targetKey: `agent:${targetAgent}:subagent:new`,
    requesterDepth: tool.depth,
    maxSpawnDepth: defaults.maxSpawnDepth,
    allowAgents: requesterConfig?.subagents.allowAgents ?? [],
  });
  if (!decision.allowed) return { status: "forbidden", code: decision.code, error: decision.message };
  const refused = await guardTree(ctx, tool, call, `agent:${targetAgent}:subagent:new`, "sessions_spawn");
  if (refused !== undefined) {
    if (call !== undefined) noteGuard(ctx, call.run.runId, "sessions_spawn", refused);
    return refused;
  }
  // A spent tree's spawn is refused before anything of the child is written (its start draws the budget again).
  const spent = call === undefined ? undefined : await budgetSpentFor(ctx, call.run);
  if (spent !== undefined) return refuseSpent(ctx, call, `agent:${targetAgent}:subagent:new`, spent);
  const model =
    params.model ??
    findAgentConfig(config, targetAgent)?.subagents.model ??
    requesterConfig?.subagents.model ??
    defaults.model;
  if (
    params.model !== undefined &&
    ctx.knownModels !== undefined &&
    !ctx.knownModels.includes(params.model)
  ) {
    return {
      status: "error",
      code: "unknown_model",
      error: `Unknown model "${params.model}" (known: ${ctx.knownModels.join(", ")})`,
    };
  }
  const childKey = buildSubagentSessionKey(targetAgent);
  const runId = timeOrderedId();
  const record: SubagentRecord = {
    childKey,
    requesterKey: tool.requesterKey,
    runId,
    task: params.task,
    mode: params.mode,
    cleanup: params.cleanup,
    status: "running",
    createdAt: clock.now(),
    owner: ctx.owner,
    ...(params.label === undefined ? {} : { label: params.label }),
  };
  // Count and reserve under one lock per requester, so parallel spawns cannot overshoot the limit.
  const activeCount = await ctx.locks.spawns.run(tool.requesterKey, async () => {
    const active = await store.listSubagents({
      requesterKey: tool.requesterKey,
      statuses: ["running", "announcing"],
    });
    if (active.length >= defaults.maxChildrenPerAgent) return active.length;
    await store.putSubagent(record);
    return undefined;
  });
  if (activeCount !== undefined) {
    return {
      status: "forbidden",
      code: "max_children",
      error: `This session already has ${activeCount} active sub-agents (agents.defaults.subagents.maxChildrenPerAgent is ${defaults.maxChildrenPerAgent})`,
    };
  }
  const child = await ensureEntry(ctx, childKey, {
    spawnedBy: tool.requesterKey,
    spawnDepth: tool.depth + 1,
    ...(tool.sandboxed ? { sandboxed: true } : {}),
    ...(params.label === undefined ? {} : { label: params.label }),
    ...(model === undefined ? {} : { model }),
    ...(params.thinking === undefined ? {} : { thinkingLevel: params.thinking }),
  });
  if (params.thread) {
    const bound = await bindThread(ctx, tool, requester, child, params.label ?? params.task.slice(0, 60));
    if (!bound.ok) {
      await store.deleteEntry(childKey, { transcript: true });
      await store.putSubagent({
        ...record,
        status: "done",
        outcome: "error",
        error: bound.error,
        endedAt: clock.now(),
      });
      return { status: "error", code: "thread_unavailable", error: bound.error };
    }
  }
  const timeoutSeconds = params.runTimeoutSeconds ?? defaults.runTimeoutSeconds;
  const place = toolCause(call, "sessions_spawn", tool.traceparent);
  const started = await startRun(ctx, {
    runId,
    sessionKey: childKey,
    kind: "subagent",
    ...place,
    input: {
      role: "user",
      content: params.task,
      ts: clock.now(),
      provenance: interSession(
        tool.requesterKey,
        await channelFor(ctx, tool.requesterKey),
        "sessions_spawn",
        place.hops,
      ),
    },
    system: [
      `You are a sub-agent spawned by ${tool.requesterKey}. Do the task; your final reply is reported back to it.`,
    ],
    tools: toolContextFor(ctx, child, childKey, tool.sandboxed),
    ...(timeoutSeconds > 0 ? { timeoutMs: timeoutSeconds * 1000 } : {}),
    ...(model === undefined ? {} : { model }),
    ...(params.thinking === undefined ? {} : { thinking: params.thinking }),
    subagentSlot: true,
  }).catch(async (error: unknown) => {
    if (!isBudgetExceeded(error)) throw error;
    // The child never ran: it goes, and its slot is given back.
    await store.deleteEntry(childKey, { transcript: true });
    await store.putSubagent({
      ...record,
      status: "done",
      outcome: "error",
      error: error.message,
      endedAt: clock.now(),
    });
    for (const binding of await store.listThreadBindings({ sessionKey: childKey }))
      await unbind(ctx, binding, "ended");
    return refuseSpent(ctx, call, childKey, error);
  });
  if (!("run" in started)) return started;
  return { status: "accepted", runId: started.run.runId, childSessionKey: childKey, mode: params.mode };
}

/** A spawn the tree's spent budget refused: the `budget_exceeded` result, recorded like the tree's guards. */
async function refuseSpent(
  ctx: GatewayContext,
  call: ToolCall | undefined,
  targetKey: string,
  spent: BudgetExceeded,
): Promise<SessionsSpawnResult> {
  const refusal = await budgetRefusal(ctx, call, targetKey, "sessions_spawn", spent);
  if (call !== undefined) noteGuard(ctx, call.run.runId, "sessions_spawn", refusal);
  return refusal;
}
