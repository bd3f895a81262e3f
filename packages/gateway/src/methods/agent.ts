import { defaultAgentId, normalizeAgentId, type ParsedMethodParams, parseMethodParams } from "@sessions/core";
import type { GatewayContext } from "../context.js";
import { allowedDelivery } from "../delivery/targets.js";
import type { AgentsListPayload, WaitResult } from "../gateway.js";
import { budgetOf, rootBudget, runBudgetStatus } from "../runs/budget.js";
import { agentIdOfKey } from "../runs/key-agent.js";
import { refuseWhenBusy } from "../runs/queue-modes.js";
import { startRun } from "../runs/start.js";
import { waitRun } from "../runs/wait.js";
import { ensureEntry, operatorKey } from "../sessions/entries.js";
import type { RunRecord } from "../store/types.js";
import { toolContextFor } from "../tools/tool-context.js";

interface Accepted {
  runId: string;
  sessionKey: string;
  agentId: string;
  status: "accepted";
  acceptedAt: number;
}

const accepted = (run: RunRecord): Accepted => ({
  runId: run.runId,
  sessionKey: run.sessionKey,
  agentId: run.agentId,
  status: "accepted",
  acceptedAt: run.createdAt,
});

/** The caller's `inputProvenance`, kept only when it names a source session. */
function provenanceOf(p: ParsedMethodParams<"agent">) {
  const given = p.inputProvenance;
  if (given?.kind !== "inter_session" || !given.sourceSessionKey) return undefined;
  return {
    kind: "inter_session" as const,
    sourceSessionKey: given.sourceSessionKey,
    ...(given.sourceChannel ? { sourceChannel: given.sourceChannel } : {}),
    ...(given.sourceTool ? { sourceTool: given.sourceTool } : {}),
    ...(given.hops === undefined ? {} : { hops: given.hops }),
  };
}

/** `agent`, `agent.wait`, `agents.list`: start a run (accepted at once), wait for one server-side, list agents. */
export const agentMethods = {
  async agent(ctx: GatewayContext, params: unknown): Promise<Accepted> {
    const p = parseMethodParams("agent", params);
    const agentId = normalizeAgentId(
      p.agentId ?? (p.sessionKey ? agentIdOfKey(p.sessionKey) : undefined) ?? defaultAgentId(ctx.config),
    );
    const key = operatorKey(ctx, p.sessionKey ?? "main", "sessionKey", agentId);
    // A repeat that could change something before `startRun` finds its run (creating the session, checking a
    // delivery target) returns the first run here; any other repeat finds it in `startRun`'s unit of work.
    let entry = await ctx.store.getEntry(key);
    if (entry === undefined || p.deliver === true) {
      const existing = await ctx.store.findRunByIdempotencyKey(p.idempotencyKey);
      if (existing !== undefined) return accepted(existing);
    }
    const provenance = provenanceOf(p);
    // Queue mode `reject` applies to users' messages, not to sends between sessions; a repeat is answered.
    const repeat =
      provenance === undefined ? await refuseWhenBusy(ctx, key, entry, p.idempotencyKey) : undefined;
    if (repeat !== undefined) return accepted(repeat);
    entry ??= await ensureEntry(ctx, key, {
      ...(p.label === undefined ? {} : { label: p.label }),
      ...(p.spawnedBy === undefined ? {} : { spawnedBy: p.spawnedBy }),
    });
    const deliverTo =
      p.deliver === true
        ? allowedDelivery(
            ctx,
            entry,
            key,
            { channel: p.channel, to: p.to, accountId: p.accountId, threadId: p.threadId },
            "agent: deliver needs channel and to (or a session with a delivery context)",
          )
        : undefined;
    const { run } = await startRun(ctx, {
      sessionKey: key,
      kind: "agent",
      cause: { kind: "request", method: "agent" },
      ...(p.traceparent === undefined ? {} : { traceparent: p.traceparent }),
      // A tree that began on another gateway counts its hops on from the message that brought it here.
      ...(provenance?.hops === undefined ? {} : { hops: provenance.hops }),
      input: { role: "user", content: p.message, ts: ctx.clock.now(), ...(provenance ? { provenance } : {}) },
      idempotencyKey: p.idempotencyKey,
      ...(deliverTo === undefined ? {} : { deliverTo }),
      ...(p.extraSystemPrompt ? { system: [p.extraSystemPrompt] } : {}),
      tools: toolContextFor(ctx, entry, key, false),
      ...(p.timeout ? { timeoutMs: p.timeout * 1000 } : {}),
      ...budgetOf(rootBudget(ctx, key, entry, p.budget, ctx.clock.now())),
      ...(provenance === undefined ? { userMessage: true as const } : {}),
    });
    return { ...accepted(run), sessionKey: key };
  },

  /** Waits for the run; a run of a budgeted tree also reports the tree's budget (limits, spent, left). */
  async "agent.wait"(ctx: GatewayContext, params: unknown): Promise<WaitResult> {
    const p = parseMethodParams("agent.wait", params);
    let seen: RunRecord | undefined;
    const result = await waitRun(ctx, p.runId, p.timeoutMs ?? 30_000, (run) => {
      seen = run;
    });
    const budget = seen === undefined ? undefined : await runBudgetStatus(ctx, seen);
    return budget === undefined ? result : { ...result, budget };
  },

  async "agents.list"(ctx: GatewayContext, params: unknown): Promise<AgentsListPayload> {
    parseMethodParams("agents.list", params);
    const { config } = ctx;
    const agents =
      config.agents.list.length > 0
        ? config.agents.list.map((a) => ({ id: a.id, ...(a.name ? { name: a.name } : {}) }))
        : [{ id: "main" }];
    return {
      defaultId: defaultAgentId(config),
      mainKey: config.session.mainKey,
      scope: config.session.scope,
      agents,
    };
  },
};
