import { checkSessionAccess, remoteSessionKey, sessionKindOf } from "@sessions/core";
import type { GatewayContext } from "../context.js";
import { ensureEntry, storeKey } from "../sessions/entries.js";
import type { Resolved } from "../tools/resolve.js";
import { type ToolContext, visibilityFor } from "../tools/tool-context.js";

/**
 * The session of a remote agent that a `sessions_send` names, made on first use (each is one A2A context), or
 * undefined when the key is not a remote agent's. The policy is a local send's to another agent: visibility `all`,
 * `tools.agentToAgent` enabled and allowing the pair. A refusal says why: the remote is listed by `agents_list`, so
 * hiding it would only confuse.
 */
export async function remoteTarget(
  ctx: Pick<GatewayContext, "config" | "store" | "clock" | "emit" | "remotes">,
  tool: ToolContext,
  input: string,
): Promise<Resolved | undefined> {
  let key: string;
  try {
    key = storeKey(ctx, tool.agentId, input);
  } catch {
    return undefined;
  }
  const remote = ctx.remotes.of(key);
  if (remote === undefined) return undefined;
  if (sessionKindOf(key) !== "a2a") {
    return {
      status: "error",
      code: "invalid_key",
      error: `${remote.id} is a remote agent: its sessions are ${remoteSessionKey(remote.id, "<name>")} (start with ${remoteSessionKey(remote.id)})`,
    };
  }
  const decision = checkSessionAccess({
    action: "send",
    requesterKey: tool.requesterKey,
    targetKey: key,
    visibility: visibilityFor(ctx, tool),
    agentToAgent: ctx.config.tools.agentToAgent,
  });
  if (!decision.allowed) return { status: "forbidden", code: decision.code, error: decision.message };
  return { entry: await ensureEntry(ctx, key) };
}
