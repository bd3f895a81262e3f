import { parseMethodParams } from "@sessions/core";
import type { GatewayContext } from "../context.js";
import { operatorKey } from "../sessions/entries.js";
import type { ThreadBindingRecord } from "../store/types.js";

/** `bindings.list` (ours): which platform threads are bound to which sessions, for operators. */
export const bindingMethods = {
  async "bindings.list"(ctx: GatewayContext, params: unknown): Promise<{ bindings: ThreadBindingRecord[] }> {
    const p = parseMethodParams("bindings.list", params);
    const bindings = await ctx.store.listThreadBindings(
      p.sessionKey === undefined ? {} : { sessionKey: operatorKey(ctx, p.sessionKey, "sessionKey") },
    );
    return { bindings };
  },
};
