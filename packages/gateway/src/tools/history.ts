import type { parseToolParams, SessionsHistoryResult } from "@sessions/core";
import { readDeliveryOutcome } from "../a2a/receipt.js";
import type { GatewayContext } from "../context.js";
import type { StoredMessage } from "../store/types.js";
import { isToolMessage } from "../transcript.js";
import { displayKey, resolveTarget } from "./resolve.js";
import type { ToolContext } from "./tool-context.js";

const MAX_HISTORY_FIELD = 4000;
const MAX_HISTORY_BYTES = 80 * 1024;

function truncateText(text: string): string {
  if (text.length <= MAX_HISTORY_FIELD) return text;
  return `${text.slice(0, MAX_HISTORY_FIELD)}… [truncated ${text.length - MAX_HISTORY_FIELD} chars]`;
}

/** A message with every long text field cut to 4,000 chars, so one message cannot fill a model's context. */
function boundMessage(message: StoredMessage): StoredMessage {
  const copy: StoredMessage = { ...message };
  if (typeof copy.content === "string") copy.content = truncateText(copy.content);
  else {
    copy.content = copy.content.map((part) => {
      const next = { ...part };
      for (const [k, v] of Object.entries(next)) if (typeof v === "string") next[k] = truncateText(v);
      if ("output" in next && typeof next.output !== "string") {
        const json = JSON.stringify(next.output) ?? "";
        if (json.length > MAX_HISTORY_FIELD) next.output = truncateText(json);
      }
      return next;
    });
  }
  return copy;
}

/** The newest `limit` messages without tool results, reading back in chunks (cost ∝ limit for normal chats). */
export async function readNonToolMessages(
  ctx: Pick<GatewayContext, "store">,
  key: string,
  limit: number,
): Promise<StoredMessage[]> {
  const out: StoredMessage[] = [];
  let before: number | undefined;
  while (out.length < limit) {
    const chunk = await ctx.store.readMessages(key, {
      limit: Math.max(limit * 2, 20),
      ...(before === undefined ? {} : { beforeSeq: before }),
    });
    for (let i = chunk.length - 1; i >= 0 && out.length < limit; i--) {
      const message = chunk[i] as StoredMessage;
      if (!isToolMessage(message)) out.push(message);
    }
    const first = chunk[0];
    if (first === undefined || first.seq <= 1) break;
    before = first.seq;
  }
  return out.reverse();
}

/** `sessions_history` (SPEC 4): bounded per field and in total (80 KiB), oldest messages dropped first. */
export async function historyTool(
  ctx: Pick<GatewayContext, "config" | "store">,
  tool: ToolContext,
  params: ReturnType<typeof parseToolParams<"sessions_history">>,
): Promise<SessionsHistoryResult> {
  const resolved = await resolveTarget(ctx, tool, params.sessionKey, "history");
  if (!("entry" in resolved)) return { ...resolved, sessionKey: params.sessionKey, messages: [] };
  const key = resolved.entry.key;
  const raw = params.includeTools
    ? await ctx.store.readMessages(key, { limit: params.limit })
    : await readNonToolMessages(ctx, key, params.limit);
  const messages = raw.map(boundMessage);
  let bytes = messages.reduce((n, m) => n + JSON.stringify(m).length + 1, 0);
  let dropped = 0;
  while (bytes > MAX_HISTORY_BYTES && messages.length > 0) {
    const first = messages.shift() as StoredMessage;
    bytes -= JSON.stringify(first).length + 1;
    dropped++;
  }
  const truncated =
    dropped > 0 || messages.some((m, i) => JSON.stringify(m) !== JSON.stringify(raw[i + dropped]));
  const result: SessionsHistoryResult = {
    status: "ok",
    sessionKey: displayKey(ctx, tool, key),
    messages,
    ...(truncated ? { truncated: true } : {}),
    ...(dropped > 0 ? { droppedMessages: dropped } : {}),
  };
  if (params.deliveryId === undefined) return result;
  const delivery = await readDeliveryOutcome(ctx, key, params.deliveryId);
  if (delivery !== undefined) return { ...result, delivery };
  return {
    ...result,
    status: "not_found",
    code: "delivery_not_found",
    error: `No delivery ${params.deliveryId} to this session (use the delivery.id sessions_send returned)`,
  };
}
