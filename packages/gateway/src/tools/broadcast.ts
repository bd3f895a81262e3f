import type { parseToolParams, SessionsSendResult } from "@sessions/core";
import type { GatewayContext } from "../context.js";
import type { ToolCall } from "../runs/cause.js";
import type { StoredEntry } from "../store/types.js";
import { displayKey } from "./resolve.js";
import { sendTo } from "./send.js";
import { accessTo, type ToolContext } from "./tool-context.js";

type Outcome = NonNullable<SessionsSendResult["targets"]>[number];

/** The selector as the agent wrote it, for messages: `label "ops"` or `labels "a", "b"`, and the agent. */
function describeSelector(labels: readonly string[], agentId: string | undefined): string {
  const named = `${labels.length === 1 ? "label" : "labels"} ${labels.map((l) => JSON.stringify(l)).join(", ")}`;
  return agentId === undefined ? named : `${named} of agent "${agentId}"`;
}

/**
 * `sessions_send` by label: every session whose label is `label` (or one of `labels`; of agent `agentId` when
 * given) that the requester may send to — visibility and the agent-to-agent policy as for one send, hidden sessions
 * never named, its own session left out — gets the message as `sessions_send` sends it to one: each target its own
 * run and reply-back loop under the calling run's tree, checked on its own by the hop limit, the loop guard and the
 * tree's budget, all started at once and waited for together up to `timeoutSeconds`. More matching sessions than
 * `tools.agentToAgent.maxBroadcastTargets` refuse the whole send (`too_many_targets`) before anything is sent.
 */
export async function broadcastTool(
  ctx: GatewayContext,
  tool: ToolContext,
  params: ReturnType<typeof parseToolParams<"sessions_send">>,
  call?: ToolCall,
): Promise<SessionsSendResult> {
  const labels = [...new Set(params.labels ?? (params.label === undefined ? [] : [params.label]))];
  const selector = describeSelector(labels, params.agentId);
  const found = new Map<string, StoredEntry>();
  for (const label of labels) {
    for (const entry of await ctx.store.findEntriesByLabel(label)) found.set(entry.key, entry);
  }
  const targets = [...found.values()]
    .filter((entry) => params.agentId === undefined || entry.agentId === params.agentId)
    .filter((entry) => accessTo(ctx, tool, "send", entry).allowed)
    .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  if (targets.length === 0) {
    return {
      status: "not_found",
      code: "not_found",
      error: `No session you can send to has the ${selector} (see sessions_list)`,
      targets: [],
    };
  }
  const cap = ctx.config.tools.agentToAgent.maxBroadcastTargets;
  if (targets.length > cap) {
    return {
      status: "error",
      code: "too_many_targets",
      error: `The ${selector} matches ${targets.length} sessions, more than the ${cap} one send may reach (tools.agentToAgent.maxBroadcastTargets): nothing was sent; narrow it with agentId or a more specific label`,
      limit: cap,
    };
  }
  const outcomes = await Promise.all(
    targets.map(async (entry): Promise<Outcome> => {
      try {
        return await sendTo(ctx, tool, entry, params, call);
      } catch (error) {
        // One target's failure (a store error, say) is its own: the others were sent.
        return {
          status: "error",
          sessionKey: displayKey(ctx, tool, entry.key),
          error: error instanceof Error ? error.message : String(error),
        };
      }
    }),
  );
  const expected = params.timeoutSeconds === 0 ? "accepted" : "ok";
  const missed = outcomes.filter((outcome) => outcome.status !== expected);
  if (missed.length === 0) return { status: expected, targets: outcomes };
  const counts = new Map<string, number>();
  for (const { status } of outcomes) counts.set(status, (counts.get(status) ?? 0) + 1);
  return {
    status: "error",
    code: "partial",
    error: `Sent to the ${outcomes.length} sessions with the ${selector}: ${[...counts].map(([status, n]) => `${n} ${status}`).join(", ")} (each target's outcome is in targets)`,
    targets: outcomes,
  };
}
