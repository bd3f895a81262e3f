import { QUEUE_COMMAND_USAGE, type QueueMode } from "@sessions/core";
import type { GatewayContext } from "../context.js";
import { updateEntry } from "../sessions/entries.js";

/** `/queue <mode>` from the chat: owners only, as `/send`; sets or (`reset`) clears the session's queue mode. */
export async function applyQueueCommand(
  ctx: GatewayContext,
  key: string,
  isOwner: boolean,
  mode: QueueMode | "reset" | null,
): Promise<string> {
  if (!isOwner) return "Only the owner can change this session's queue mode.";
  if (mode === null) return QUEUE_COMMAND_USAGE;
  await updateEntry(
    ctx,
    key,
    (entry) => {
      if (entry === undefined) return undefined;
      const next = { ...entry, updatedAt: ctx.clock.now() };
      if (mode === "reset") delete next.queueMode;
      else next.queueMode = mode;
      return next;
    },
    "queue-mode",
  );
  return mode === "reset"
    ? "Queue mode: reset (the agent's mode applies)."
    : `Queue mode: ${mode} for this session.`;
}
