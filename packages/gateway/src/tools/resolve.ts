import { isReservedKey, looksLikeSessionId, toStoreKey } from "@sessions/core";
import type { GatewayContext } from "../context.js";
import { storeKey } from "../sessions/entries.js";
import type { StoredEntry } from "../store/types.js";
import { accessTo, type ToolContext } from "./tool-context.js";

export type Resolved =
  | { entry: StoredEntry }
  | { status: "not_found" | "forbidden" | "error"; code: string; error: string };

/** A key as an agent sees it: its own main session is just `main`. */
export function displayKey(ctx: Pick<GatewayContext, "config">, tool: ToolContext, key: string): string {
  const mainKey = ctx.config.session.mainKey;
  return key === toStoreKey({ agentId: tool.agentId, key: "main", mainKey }) ? "main" : key;
}

function notFound(input: string) {
  return {
    status: "not_found" as const,
    code: "not_found",
    error: `Session not found: ${input} (use the key from sessions_list)`,
  };
}

/** Key or sessionId → a visible entry; hidden sessions look exactly like missing ones. */
export async function resolveTarget(
  ctx: Pick<GatewayContext, "config" | "store">,
  tool: ToolContext,
  input: string,
  action: "history" | "send",
): Promise<Resolved> {
  const candidates: StoredEntry[] = [];
  let key: string | undefined;
  try {
    key = storeKey(ctx, tool.agentId, input);
  } catch {
    key = undefined;
  }
  const byKey = key === undefined || isReservedKey(key) ? undefined : await ctx.store.getEntry(key);
  if (byKey !== undefined) candidates.push(byKey);
  const keyLike = key !== undefined && (input.includes(":") || input.trim().toLowerCase() === "main");
  if (byKey === undefined && (looksLikeSessionId(input) || !keyLike)) {
    candidates.push(...(await ctx.store.findEntriesBySessionId(input.trim().toLowerCase())));
    if (input.trim() !== input.trim().toLowerCase())
      candidates.push(...(await ctx.store.findEntriesBySessionId(input.trim())));
  }
  const decisions = candidates.map((entry) => ({ entry, decision: accessTo(ctx, tool, action, entry) }));
  // Only a self-send is worth explaining; every other denial looks exactly like a missing session.
  const visible = decisions.filter((d) => d.decision.allowed || d.decision.code === "send_to_self");
  if (visible.length === 0) return notFound(input);
  if (visible.length > 1) {
    return {
      status: "error",
      code: "ambiguous",
      error: `Several sessions match ${input}: ${visible.map((v) => v.entry.key).join(", ")}`,
    };
  }
  const only = visible[0] as (typeof visible)[number];
  if (!only.decision.allowed)
    return { status: "error", code: only.decision.code, error: only.decision.message };
  return { entry: only.entry };
}
