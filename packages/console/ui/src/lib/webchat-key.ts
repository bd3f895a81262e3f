import { buildPeerSessionKey, type DmScope } from "@sessions/core";

/**
 * The visitor's session key, per the key model (SPEC 1.4): a web visitor is a direct peer of channel `webchat`,
 * so the gateway's `session.dmScope` (named in its `hello-ok`, `dmScopeOf`) decides between the agent's main session
 * and one session per visitor.
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
