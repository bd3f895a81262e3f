import type { GatewayContext } from "../context.js";
import { setSessionSetting } from "../sessions/entries.js";

/** `/send on|off|inherit` from the chat (SPEC 8.3): owners only; returns the notice to post back. */
export async function applySendCommand(
  ctx: GatewayContext,
  key: string,
  isOwner: boolean,
  mode: "allow" | "deny" | "inherit" | null,
): Promise<string> {
  if (!isOwner) return "Only the owner can change this session's send policy.";
  if (mode === null) return "Usage: /send on | off | inherit";
  await setSessionSetting(ctx, key, "sendPolicy", mode === "inherit" ? undefined : mode, "send-policy");
  return mode === "inherit"
    ? "Send policy: inherit (config rules apply)."
    : `Send policy: ${mode === "allow" ? "on" : "off"} for this session.`;
}
