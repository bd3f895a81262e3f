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
  parseQueueCommand,
  parseSendCommand,
  type ReceiveResult,
  SessionsError,
} from "@sessions/core";
import type { DeliveryTarget } from "../adapter.js";
import { boundSession } from "../bindings/expiry.js";
import type { GatewayContext } from "../context.js";
import { budgetOf, rootBudget } from "../runs/budget.js";
import { refuseWhenBusy } from "../runs/queue-modes.js";
import { startRun } from "../runs/start.js";
import { kindOf, newEntry } from "../sessions/entries.js";
import type { RouteRecord, StoredEntry, StoreOps } from "../store/types.js";
import { toolContextFor } from "../tools/tool-context.js";
import { validateInbound } from "./inbound-schema.js";
import { applyQueueCommand } from "./queue-command.js";
import { applySendCommand } from "./send-command.js";

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
  if (threadId !== undefined) sessionKey = await boundSession(ctx, channel, accountId, threadId);
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
  // The session entry (created if new), its route, and where replies go — one unit of work, which for a run
  // is the run's own first one (`prepare`): a message costs no write transaction of its own.
  const init: Partial<StoredEntry> = {
    channel,
    chatType: inbound.chatType,
    ...(inbound.displayName ? { displayName: inbound.displayName } : {}),
  };
  const patch: Partial<StoredEntry> = {
    // Internal surfaces (web chat UI, internal) are recorded as routes but never replace the session's route.
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
  };
  const routeRecord: RouteRecord = {
    sessionKey: key,
    channel,
    accountId,
    to: inbound.to,
    ...(threadId === undefined ? {} : { threadId }),
    updatedAt: clock.now(),
  };
  let recorded: { created: boolean } | undefined;
  const record = async (tx: StoreOps) => {
    recorded = await recordInbound(ctx, tx, key, init, patch, routeRecord);
  };
  const announce = () => {
    if (recorded?.created) ctx.emit({ type: "sessions.changed", key, reason: "created" });
    if (recorded !== undefined) ctx.emit({ type: "sessions.changed", key, reason: "updated" });
  };

  // A chat command records the session and its route, applies, and posts its notice back.
  const notify = async (notice: string) => {
    await ctx.outbox.enqueue({
      idempotencyKey: `notice:${channel}:${accountId}:${inbound.messageId ?? randomUUID()}`,
      kind: "notice",
      sessionKey: key,
      target: route as DeliveryTarget,
      text: notice,
    });
  };
  const command = parseSendCommand(inbound.text);
  if (command !== null) {
    await store.transaction(record);
    announce();
    const applied = inbound.isOwner === true && command.mode !== null;
    await notify(await applySendCommand(ctx, key, inbound.isOwner === true, command.mode));
    return { sessionKey: key, command: { mode: command.mode, applied } };
  }
  const queueCommand = parseQueueCommand(inbound.text);
  if (queueCommand !== null) {
    await store.transaction(record);
    announce();
    const applied = inbound.isOwner === true && queueCommand.mode !== null;
    await notify(await applyQueueCommand(ctx, key, inbound.isOwner === true, queueCommand.mode));
    return { sessionKey: key, queueCommand: { mode: queueCommand.mode, applied } };
  }

  const entry = await store.getEntry(key);
  const idempotencyKey =
    inbound.messageId === undefined ? undefined : `inbound:${channel}:${accountId}:${inbound.messageId}`;
  let repeat: Awaited<ReturnType<typeof refuseWhenBusy>>;
  try {
    repeat = await refuseWhenBusy(ctx, key, entry, idempotencyKey);
  } catch (error) {
    // Queue mode `reject`: nothing of the message is recorded, and the sender hears why (never a silent drop).
    if (!SessionsError.isInstance(error) || error.code !== "busy") throw error;
    await notify(BUSY_NOTICE);
    return {
      sessionKey: key,
      rejected: { code: "busy", message: error.message, retryAfterMs: error.retryAfterMs ?? 0 },
    };
  }
  if (repeat !== undefined) return { sessionKey: key, runId: repeat.runId, duplicate: true };
  const { run, created } = await startRun(ctx, {
    prepare: record,
    sessionKey: key,
    kind: "chat",
    cause: {
      kind: "inbound",
      channel,
      ...(inbound.messageId === undefined ? {} : { messageId: inbound.messageId }),
    },
    ...(inbound.traceparent === undefined ? {} : { traceparent: inbound.traceparent }),
    input: {
      role: "user",
      content: inbound.text,
      ts: clock.now(),
      sender: { id: inbound.senderId, ...(inbound.senderName ? { name: inbound.senderName } : {}), channel },
    },
    ...(idempotencyKey === undefined ? {} : { idempotencyKey }),
    deliverTo: route,
    userMessage: true,
    ...budgetOf(rootBudget(ctx, key, entry, undefined, clock.now())),
    tools: toolContextFor(ctx, entry, key, findAgentConfig(config, agentId)?.sandboxed === true),
  });
  announce();
  return { sessionKey: key, runId: run.runId, ...(created ? {} : { duplicate: true }) };
}

/** What the sender of a message refused by queue mode `reject` is told. */
export const BUSY_NOTICE =
  "Still working on the previous message, so this one was not taken. Send it again once I have answered.";

/** What a message records on its session: the entry (created if new) with `patch`, touched, and its route. */
async function recordInbound(
  ctx: GatewayContext,
  tx: StoreOps,
  key: string,
  init: Partial<StoredEntry>,
  patch: Partial<StoredEntry>,
  route: RouteRecord,
): Promise<{ created: boolean }> {
  const current = await tx.getEntry(key);
  const next: StoredEntry = {
    ...(current ?? newEntry(ctx, key, init)),
    ...patch,
    updatedAt: ctx.clock.now(),
  };
  next.kind = kindOf(ctx, next);
  await tx.putEntry(next);
  await tx.putRoute(route);
  return { created: current === undefined };
}
