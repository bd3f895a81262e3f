import type { InterSessionProvenance } from "@sessions/core";

/** Provenance of a message one session puts into another (SPEC 3.3): never mistaken for user input. */
export function interSession(
  sourceSessionKey: string,
  sourceChannel: string | undefined,
  sourceTool: "sessions_send" | "sessions_spawn",
  /** How many messages from the tree's first this one is. */
  hops?: number,
): InterSessionProvenance {
  const provenance: InterSessionProvenance = {
    kind: "inter_session",
    sourceSessionKey,
    ...(sourceChannel === undefined ? {} : { sourceChannel }),
    sourceTool,
  };
  if (hops !== undefined && hops > 0) provenance.hops = hops;
  return provenance;
}

/** The system note a target agent gets with a message from another agent's session. */
export function agentToAgentContext(
  requesterKey: string,
  requesterChannel: string,
  targetKey: string,
): string {
  return [
    "Agent-to-agent message context:",
    `- This message comes from another agent's session, not from the end user.`,
    `- Requester session: ${requesterKey} (channel ${requesterChannel}).`,
    `- Target session: ${targetKey}.`,
  ].join("\n");
}
