import {
  checkSessionAccess,
  findAgentConfig,
  parseSessionKey,
  resolveVisibility,
  sessionTools,
} from "@sessions/core";
import type { GatewayContext, ToolContext } from "../context.js";

export type { ToolContext } from "../context.js";

import { updateEntry } from "../sessions/entries.js";
import type { StoredEntry } from "../store/types.js";

/**
 * The tool context of a session. Sandboxing belongs to the session: the entry's flag, the agent's config or the
 * caller's say-so each clamp it, whoever starts the run.
 */
export function toolContextFor(
  ctx: Pick<GatewayContext, "config">,
  entry: StoredEntry | undefined,
  requesterKey: string,
  sandboxed: boolean,
): ToolContext {
  const parsed = parseSessionKey(requesterKey);
  const isSubagent = parsed?.subagent === true;
  const agentId = parsed?.agentId ?? "main";
  return {
    requesterKey,
    agentId,
    sandboxed:
      sandboxed || entry?.sandboxed === true || findAgentConfig(ctx.config, agentId)?.sandboxed === true,
    isSubagent,
    depth: entry?.spawnDepth ?? (isSubagent ? 1 : 0),
    ...(entry?.visibility === undefined ? {} : { visibility: entry.visibility }),
  };
}

/** Records that a session is sandboxed from now on (a no-op when it already is, or does not exist). */
export async function markSandboxed(
  ctx: Pick<GatewayContext, "config" | "store" | "clock" | "emit">,
  key: string,
): Promise<StoredEntry | undefined> {
  return updateEntry(
    ctx,
    key,
    (entry) => (entry === undefined || entry.sandboxed === true ? undefined : { ...entry, sandboxed: true }),
    "sandboxed",
  );
}

export function allowedToolNames(
  ctx: Pick<GatewayContext, "config" | "extraTools">,
  tool: ToolContext,
): Set<string> {
  const names = new Set<string>([...Object.keys(sessionTools), ...ctx.extraTools.map((t) => t.name)]);
  if (!tool.isSubagent) return names;
  const filter = ctx.config.tools.subagents.tools;
  for (const name of [...names]) {
    if (filter.allow !== undefined && !filter.allow.includes(name)) names.delete(name);
    if (filter.deny.includes(name)) names.delete(name);
  }
  return names;
}

export function toolNotAllowed(name: string) {
  return {
    status: "forbidden" as const,
    code: "tool_not_allowed",
    error: `${name} is not available to this session (tools.subagents.tools)`,
  };
}

export function visibilityFor(ctx: Pick<GatewayContext, "config">, tool: ToolContext) {
  return resolveVisibility({
    visibility: tool.visibility ?? ctx.config.tools.sessions.visibility,
    sandboxed: tool.sandboxed,
    sandboxVisibility: ctx.config.agents.defaults.sandbox.sessionToolsVisibility,
  });
}

export function accessTo(
  ctx: Pick<GatewayContext, "config">,
  tool: ToolContext,
  action: "list" | "history" | "send",
  entry: StoredEntry,
) {
  return checkSessionAccess({
    action,
    requesterKey: tool.requesterKey,
    targetKey: entry.key,
    visibility: visibilityFor(ctx, tool),
    agentToAgent: ctx.config.tools.agentToAgent,
    spawnedBy: entry.spawnedBy,
  });
}
