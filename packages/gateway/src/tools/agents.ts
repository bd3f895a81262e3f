import { type AgentsListResult, findAgentConfig, normalizeAgentId, remoteSessionKey } from "@sessions/core";
import type { GatewayContext } from "../context.js";
import type { ToolContext } from "./tool-context.js";

/** `agents_list`: the requester's agent first, then the agents it may spawn (SPEC 4), then the remote agents. */
export async function agentsListTool(
  ctx: Pick<GatewayContext, "config">,
  tool: ToolContext,
): Promise<AgentsListResult> {
  const { config } = ctx;
  const allow = findAgentConfig(config, tool.agentId)?.subagents.allowAgents ?? [];
  const allowAny = allow.some((a) => a.trim() === "*");
  const ids = new Set<string>();
  if (allowAny) for (const agent of config.agents.list) ids.add(agent.id);
  else for (const id of allow) ids.add(normalizeAgentId(id));
  ids.delete(tool.agentId);
  for (const remote of config.agents.remotes) ids.delete(remote.id);
  const configured = new Map(config.agents.list.map((a) => [a.id, a]));
  const describe = (id: string) => {
    const agent = configured.get(id);
    return {
      id,
      ...(agent?.name === undefined ? {} : { name: agent.name }),
      configured: agent !== undefined,
    };
  };
  const remotes = config.agents.remotes.map((remote) => ({
    id: remote.id,
    ...(remote.name === undefined ? {} : { name: remote.name }),
    configured: true,
    remote: true,
    ...(remote.description === undefined ? {} : { description: remote.description }),
    sessionKey: remoteSessionKey(remote.id),
  }));
  return {
    requester: tool.agentId,
    allowAny,
    agents: [describe(tool.agentId), ...[...ids].sort().map(describe), ...remotes],
  };
}
