import { randomUUID } from "node:crypto";
import {
  buildPeerSessionKey,
  type DeliveryContext,
  defaultAgentId,
  findAgentConfig,
  type InboundMessage,
  normalizeAccountId,
  normalizeAgentId,
  normalizeChannelId,
  parseSendCommand,
  type ReceiveResult,
} from "@sessions/core";
import type { DeliveryTarget } from "../adapter.js";
import { touchThreadBinding } from "../bindings/expiry.js";
import type { GatewayContext } from "../context.js";
import { startRun } from "../runs/start.js";
import { ensureEntry, touchEntry, updateEntry } from "../sessions/entries.js";
import { toolContextFor } from "../tools/tool-context.js";
import { validateInbound } from "./inbound-schema.js";

/** Turns on these surfaces are recorded but never overwrite a session's route (SPEC 8.1). */
const INTERNAL_ROUTE_CHANNELS = new Set(["webchat", "internal"]);

/**
 * A chat message from an adapter: thread binding or key model → session, route recorded, `/send` handled, else a
 * run whose reply goes back where the message came from. A repeated `messageId` is the same run (`duplicate`).
 */
export async function receive(ctx: GatewayContext, raw: InboundMessage): Promise<ReceiveResult> {
  const { config, store, clock } = ctx;
  const inbound = validateInbound(raw);
  const channel = normalizeChannelId(inbound.channel, ctx.channels.aliases) as string;
  const accountId = normalizeAccountId(inbound.accountId);
  const agentId = normalizeAgentId(inbound.agentId ?? defaultAgentId(config));
  const threadId = inbound.threadId?.trim() || undefined;
  let sessionKey: string | undefined;
  if (threadId !== undefined) sessionKey = await touchThreadBinding(ctx, channel, accountId, threadId);
  if (sessionKey === undefined) {
    const base = buildPeerSessionKey({
      agentId,
      channel,
      accountId,
      peerKind: inbound.chatType,
      peerId: inbound.peerId,
      dmScope: config.session.dmScope,
      identityLinks: config.session.identityLinks,
      mainKey: config.session.mainKey,
    });
    sessionKey =
      threadId === undefined ? base : `${base}:${inbound.threadKind ?? "thread"}:${threadId.toLowerCase()}`;
  }
  const key = sessionKey;
  const route: DeliveryContext = {
    channel,
    to: inbound.to,
    accountId,
    ...(threadId === undefined ? {} : { threadId }),
  };
  await ensureEntry(ctx, key, {
    channel,
    chatType: inbound.chatType,
    ...(inbound.displayName ? { displayName: inbound.displayName } : {}),
  });
  await store.putRoute({
    sessionKey: key,
    channel,
    accountId,
    to: inbound.to,
    ...(threadId === undefined ? {} : { threadId }),
    updatedAt: clock.now(),
  });
  // Internal surfaces (web chat UI, internal) are recorded as routes but never replace the session's route.
  await touchEntry(ctx, key, {
    ...(INTERNAL_ROUTE_CHANNELS.has(channel)
      ? {}
      : {
          deliveryContext: route,
          lastChannel: channel,
          lastTo: inbound.to,
          lastAccountId: accountId,
          ...(threadId === undefined ? {} : { lastThreadId: threadId }),
        }),
    ...(inbound.displayName ? { displayName: inbound.displayName } : {}),
  });

  const command = parseSendCommand(inbound.text);
  if (command !== null) {
    const applied = inbound.isOwner === true && command.mode !== null;
    const notice = await applySendCommand(ctx, key, inbound.isOwner === true, command.mode);
    await ctx.outbox.enqueue({
      idempotencyKey: `notice:${channel}:${accountId}:${inbound.messageId ?? randomUUID()}`,
      kind: "notice",
      sessionKey: key,
      target: route as DeliveryTarget,
      text: notice,
    });
    return { sessionKey: key, command: { mode: command.mode, applied } };
  }

  const entry = await store.getEntry(key);
  const { run, created } = await startRun(ctx, {
    sessionKey: key,
    kind: "chat",
    input: {
      role: "user",
      content: inbound.text,
      ts: clock.now(),
      sender: { id: inbound.senderId, ...(inbound.senderName ? { name: inbound.senderName } : {}), channel },
    },
    ...(inbound.messageId === undefined
      ? {}
      : { idempotencyKey: `inbound:${channel}:${accountId}:${inbound.messageId}` }),
    deliverTo: route,
    tools: toolContextFor(ctx, entry, key, findAgentConfig(config, agentId)?.sandboxed === true),
  });
  return { sessionKey: key, runId: run.runId, ...(created ? {} : { duplicate: true }) };
}

/** `/send on|off|inherit` from the chat (SPEC 8.3): owners only; returns the notice to post back. */
async function applySendCommand(
  ctx: GatewayContext,
  key: string,
  isOwner: boolean,
  mode: "allow" | "deny" | "inherit" | null,
): Promise<string> {
  if (!isOwner) return "Only the owner can change this session's send policy.";
  if (mode === null) return "Usage: /send on | off | inherit";
  await updateEntry(
    ctx,
    key,
    (entry) => {
      if (entry === undefined) return undefined;
      const next = { ...entry, updatedAt: ctx.clock.now() };
      if (mode === "inherit") delete next.sendPolicy;
      else next.sendPolicy = mode;
      return next;
    },
    "send-policy",
  );
  return mode === "inherit"
    ? "Send policy: inherit (config rules apply)."
    : `Send policy: ${mode === "allow" ? "on" : "off"} for this session.`;
}
