import { buildPeerSessionKey } from "@sessions/core";

export type DmScope = "main" | "per-peer" | "per-channel-peer" | "per-account-channel-peer";

/**
 * The visitor's session key, per the key model (SPEC 1.4): a web visitor is a direct peer of channel `webchat`,
 * so the gateway's `session.dmScope` decides between the agent's main session and one session per visitor.
 */
export function webchatKey(options: {
  agentId: string;
  visitor: string;
  dmScope: DmScope;
  mainKey: string;
}): string {
  return buildPeerSessionKey({
    agentId: options.agentId,
    channel: "webchat",
    peerKind: "direct",
    peerId: options.visitor,
    dmScope: options.dmScope,
    mainKey: options.mainKey,
  });
}
