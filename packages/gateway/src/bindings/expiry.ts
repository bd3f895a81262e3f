import { normalizeAccountId, normalizeChannelId, SessionsError } from "@sessions/core";
import type { GatewayContext } from "../context.js";
import type { LifecycleHooks } from "../lifecycle.js";
import type { ThreadBindingRecord } from "../store/types.js";

const HOUR_MS = 3_600_000;
const FAREWELL =
  "This thread is no longer connected to its agent session (it was idle too long). New messages here start a new conversation.";

const lockKey = (channel: string, accountId: string, threadId: string) =>
  `binding:${channel}:${accountId}:${threadId}`;

/** When a binding lapses: idle for `idleHours` or older than `maxAgeHours` (0 = never). */
export function bindingExpiresAt(
  binding: Pick<ThreadBindingRecord, "idleHours" | "maxAgeHours" | "lastActivityAt" | "boundAt">,
): number {
  const idle = binding.idleHours > 0 ? binding.lastActivityAt + binding.idleHours * HOUR_MS : Infinity;
  const age = binding.maxAgeHours > 0 ? binding.boundAt + binding.maxAgeHours * HOUR_MS : Infinity;
  return Math.min(idle, age);
}

/** Removes a binding and, when it expired, says goodbye in its thread (a notice: the send policy cannot drop it). */
export async function unbind(
  ctx: GatewayContext,
  binding: ThreadBindingRecord,
  reason: "expired" | "closed" | "ended",
): Promise<void> {
  if (!(await ctx.store.deleteThreadBinding(binding.channel, binding.accountId, binding.threadId))) return;
  ctx.logger.debug("thread binding removed", {
    channel: binding.channel,
    threadId: binding.threadId,
    reason,
  });
  ctx.emit({ type: "sessions.changed", key: binding.sessionKey, reason: `thread-binding-${reason}` });
  if (reason !== "expired") return;
  await ctx.outbox.enqueue({
    idempotencyKey: `farewell:${binding.channel}:${binding.accountId}:${binding.threadId}:${binding.boundAt}`,
    kind: "notice",
    sessionKey: binding.sessionKey,
    target: {
      channel: binding.channel,
      to: binding.to,
      accountId: binding.accountId,
      threadId: binding.threadId,
    },
    text: FAREWELL,
  });
}

/** The session bound to a thread, if the binding is still live (a lapsed one is removed, with its farewell). */
export function boundSession(
  ctx: GatewayContext,
  channel: string,
  accountId: string,
  threadId: string,
): Promise<string | undefined> {
  return ctx.locks.bindings.run(lockKey(channel, accountId, threadId), async () => {
    const binding = await ctx.store.getThreadBinding(channel, accountId, threadId);
    if (binding === undefined) return undefined;
    if (bindingExpiresAt(binding) <= ctx.clock.now()) {
      await unbind(ctx, binding, "expired");
      return undefined;
    }
    return binding.sessionKey;
  });
}

/** A message that started a run in a bound thread keeps the binding alive: its idle time starts again. */
export function followThreadBindings(ctx: GatewayContext): Partial<LifecycleHooks> {
  return {
    accepted(run) {
      const to = run.deliverTo;
      if (run.cause?.kind !== "inbound" || to?.threadId === undefined || to.channel === undefined) return;
      const accountId = normalizeAccountId(to.accountId);
      ctx.tasks.track(touchBinding(ctx, to.channel, accountId, to.threadId, run.sessionKey));
    },
  };
}

/** Marks a live binding of `sessionKey` active now (one that lapsed meanwhile is left to the sweep). */
function touchBinding(
  ctx: GatewayContext,
  channel: string,
  accountId: string,
  threadId: string,
  sessionKey: string,
): Promise<void> {
  return ctx.locks.bindings.run(lockKey(channel, accountId, threadId), async () => {
    const binding = await ctx.store.getThreadBinding(channel, accountId, threadId);
    if (binding?.sessionKey !== sessionKey || bindingExpiresAt(binding) <= ctx.clock.now()) return;
    const touched = { ...binding, lastActivityAt: ctx.clock.now() };
    await ctx.store.putThreadBinding(touched);
    ctx.timers.bindings.schedule(bindingExpiresAt(touched));
  });
}

/** Expires lapsed bindings (with a farewell) and arms the timer for the next one. */
export async function sweepBindings(ctx: GatewayContext): Promise<void> {
  let next = Infinity;
  for (const binding of await ctx.store.listThreadBindings()) {
    const at = bindingExpiresAt(binding);
    if (at > ctx.clock.now()) {
      next = Math.min(next, at);
      continue;
    }
    await ctx.locks.bindings.run(lockKey(binding.channel, binding.accountId, binding.threadId), async () => {
      const current = await ctx.store.getThreadBinding(binding.channel, binding.accountId, binding.threadId);
      if (current !== undefined && bindingExpiresAt(current) <= ctx.clock.now())
        await unbind(ctx, current, "expired");
    });
  }
  if (Number.isFinite(next)) ctx.timers.bindings.schedule(next);
}

/** An adapter reports a thread archived or deleted: its binding ends now. */
export async function threadClosed(
  ctx: GatewayContext,
  event: { channel: string; accountId?: string | undefined; threadId: string },
): Promise<boolean> {
  const channel = normalizeChannelId(event.channel, ctx.channels.aliases);
  if (channel === undefined || typeof event.threadId !== "string") {
    throw new SessionsError("invalid_params", "threadClosed needs a channel and a threadId", {
      field: "threadId",
    });
  }
  const accountId = normalizeAccountId(event.accountId);
  return ctx.locks.bindings.run(lockKey(channel, accountId, event.threadId), async () => {
    const binding = await ctx.store.getThreadBinding(channel, accountId, event.threadId);
    if (binding === undefined) return false;
    await unbind(ctx, binding, "closed");
    return true;
  });
}
