import { normalizeAccountId, resolveThreadBindings } from "@sessions/core";
import type { DeliveryTarget } from "../adapter.js";
import type { GatewayContext } from "../context.js";
import { touchEntry } from "../sessions/entries.js";
import type { StoredEntry } from "../store/types.js";
import type { ToolContext } from "../tools/tool-context.js";
import { bindingExpiresAt } from "./expiry.js";

const CREATE_THREAD_TIMEOUT_MS = 30_000;

/** Opens a platform thread under the requester's chat and binds it to the child session (`thread: true`). */
export async function bindThread(
  ctx: GatewayContext,
  tool: ToolContext,
  requester: StoredEntry | undefined,
  child: StoredEntry,
  name: string,
): Promise<{ ok: true } | { ok: false; error: string }> {
  const parent = requester?.deliveryContext;
  const channel = parent?.channel;
  const adapter = channel === undefined ? undefined : ctx.channels.adapters.get(channel);
  if (
    parent?.to === undefined ||
    channel === undefined ||
    adapter?.createThread === undefined ||
    adapter.capabilities.threads !== true
  ) {
    return {
      ok: false,
      error: `thread=true needs a requester session on a channel whose adapter can create threads (${channel ?? "no channel"})`,
    };
  }
  const settings = resolveThreadBindings(ctx.config, channel, parent.accountId);
  if (!settings.enabled)
    return {
      ok: false,
      error: `Thread bindings are disabled for ${channel} (session.threadBindings.enabled)`,
    };
  try {
    const created = await Promise.race([
      adapter.createThread({ parent: parent as DeliveryTarget, name, sessionKey: child.key }),
      new Promise<never>((_, reject) => {
        setTimeout(
          () => reject(new Error("the adapter did not answer within 30 s")),
          CREATE_THREAD_TIMEOUT_MS,
        ).unref();
      }),
    ]);
    const now = ctx.clock.now();
    const accountId = normalizeAccountId(parent.accountId);
    const to = created.to ?? parent.to;
    const threadId = String(created.threadId);
    const binding = {
      channel,
      accountId,
      threadId,
      sessionKey: child.key,
      to,
      parentTo: parent.to,
      boundAt: now,
      lastActivityAt: now,
      idleHours: settings.idleHours,
      maxAgeHours: settings.maxAgeHours,
    };
    await ctx.store.putThreadBinding(binding);
    ctx.timers.bindings.schedule(bindingExpiresAt(binding));
    await touchEntry(ctx, child.key, {
      channel,
      deliveryContext: { channel, to, accountId, threadId },
      lastChannel: channel,
      lastTo: to,
      lastThreadId: threadId,
    });
    ctx.logger.debug("bound thread", { requester: tool.requesterKey, child: child.key, threadId });
    return { ok: true };
  } catch (error) {
    return {
      ok: false,
      error: `Could not create a thread: ${error instanceof Error ? error.message : String(error)}`,
    };
  }
}
