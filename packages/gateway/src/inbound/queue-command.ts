import { QUEUE_COMMAND_USAGE, type QueueMode } from "@sessions/core";
import type { GatewayContext } from "../context.js";
import { setSessionSetting } from "../sessions/entries.js";

/** `/queue <mode>` from the chat: owners only, as `/send`; sets or (`reset`) clears the session's queue mode. */
export async function applyQueueCommand(
  ctx: GatewayContext,
  key: string,
  isOwner: boolean,
  mode: QueueMode | "reset" | null,
): Promise<string> {
  if (!isOwner) return "Only the owner can change this session's queue mode.";
  if (mode === null) return QUEUE_COMMAND_USAGE;
  await setSessionSetting(ctx, key, "queueMode", mode === "reset" ? undefined : mode, "queue-mode");
  return mode === "reset"
    ? "Queue mode: reset (the agent's mode applies)."
    : `Queue mode: ${mode} for this session.`;
}
