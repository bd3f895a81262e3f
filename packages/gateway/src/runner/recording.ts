import { appendFileSync, mkdirSync } from "node:fs";
import { dirname } from "node:path";
import type { Budget, DeliveryContext } from "@sessions/core";
import type { LifecycleHooks } from "../lifecycle.js";
import type { DeliveryRecord, RunRecord, RunUsage } from "../store/types.js";
import { messageText } from "../transcript.js";
import type { AgentRunEvent, AgentRunner } from "./types.js";

/** What a runner did in one turn, in order: text it streamed, and tools it called with what they answered. */
export type RecordedEvent =
  | { text: string }
  | { call: { id: string; tool: string; params: unknown; result?: unknown } };

/**
 * One line of a recording (`createGateway({ record })`, `sessions-gateway serve --record`): a request that started a
 * tree (`agent`, `chat.send`) with what its tree runs under, which a replay sends again; a runner turn — what the
 * gateway asked (session, kind, input, system context) and what the runner did (events, reply, usage or error) —
 * or a delivery's outcome (the announces and replies the turns led to, and the policy that held one back).
 */
export type RecordingLine =
  | {
      v: 1;
      type: "request";
      /** The run it started (its tree's root). */
      runId: string;
      method: string;
      sessionKey: string;
      /** The budget its tree ran under: the request's own, else its session's, agent's or the default. */
      budget?: Budget | undefined;
      /** The trace context its tree continues: the caller's, or the root's own span when the gateway traces. */
      traceparent?: string | undefined;
      /** Where its reply was delivered (`deliver`), the target as resolved. */
      deliver?: DeliveryContext | undefined;
    }
  | {
      v: 1;
      type: "turn";
      runId: string;
      agentId: string;
      sessionKey: string;
      kind: string;
      model?: string | undefined;
      input: string;
      system: string[];
      events: RecordedEvent[];
      reply?: string | undefined;
      usage?: RunUsage | undefined;
      error?: string | undefined;
    }
  | {
      v: 1;
      type: "delivery";
      kind: string;
      sessionKey: string;
      runId?: string | undefined;
      channel: string;
      to: string;
      text: string;
      status: DeliveryRecord["status"];
      reason?: string | undefined;
    };

/** Where a recording goes: a JSONL file (appended, one line per turn or delivery) or a function. */
export type RecordingSink = string | ((line: RecordingLine) => void);

/** Writes lines to `sink`: a file is appended to synchronously, so a line is on disk before the turn ends. */
export function recordingWriter(sink: RecordingSink): (line: RecordingLine) => void {
  if (typeof sink === "function") return sink;
  mkdirSync(dirname(sink), { recursive: true });
  return (line) => appendFileSync(sink, `${JSON.stringify(line)}\n`);
}

/** `runner`, recording every turn it runs to `write` when the turn ends (ok or not). */
export function recordingRunner(runner: AgentRunner, write: (line: RecordingLine) => void): AgentRunner {
  return {
    ...(runner.models === undefined ? {} : { models: runner.models }),
    async run(request) {
      const events: RecordedEvent[] = [];
      const calls = new Map<string, { id: string; tool: string; params: unknown; result?: unknown }>();
      const emit = (event: AgentRunEvent) => {
        note(events, calls, event);
        request.emit(event);
      };
      // Everything else of the request as it is (its lazy history and tools stay lazy).
      const recorded = new Proxy(request, {
        get: (target, key) => (key === "emit" ? emit : Reflect.get(target, key)),
      });
      const line = {
        v: 1 as const,
        type: "turn" as const,
        runId: request.runId,
        agentId: request.agentId,
        sessionKey: request.sessionKey,
        kind: request.kind,
        ...(request.model === undefined ? {} : { model: request.model }),
        input: messageText(request.input),
        system: [...request.system],
        events,
      };
      try {
        const result = await runner.run(recorded);
        write({
          ...line,
          ...(result?.reply === undefined ? {} : { reply: result.reply }),
          ...(result?.usage === undefined ? {} : { usage: result.usage }),
        });
        return result;
      } catch (error) {
        write({ ...line, error: error instanceof Error ? error.message : String(error) });
        throw error;
      }
    },
  };
}

function note(
  events: RecordedEvent[],
  calls: Map<string, { id: string; tool: string; params: unknown; result?: unknown }>,
  event: AgentRunEvent,
): void {
  if (event.type === "usage") {
    // The turn's usage is recorded with its end.
  } else if (event.type === "text-delta") {
    events.push({ text: event.text });
  } else if (event.type === "tool-call") {
    const call = { id: event.toolCallId, tool: event.toolName, params: event.params };
    calls.set(event.toolCallId, call);
    events.push({ call });
  } else {
    const call = calls.get(event.toolCallId);
    if (call !== undefined) call.result = event.result;
    else
      events.push({
        call: { id: event.toolCallId, tool: event.toolName, params: undefined, result: event.result },
      });
  }
}

/**
 * Records, next to the turns, each request that started a tree (`accepted`: the root of an `agent` or `chat.send`)
 * and each delivery's outcome (`deliveryFinal`). Idempotency keys are left out: a replay pairs roots by run id.
 */
export function recordRequestsAndDeliveries(write: (line: RecordingLine) => void): Partial<LifecycleHooks> {
  return {
    accepted(run) {
      if (run.cause?.kind !== "request" || run.rootRunId !== undefined) return;
      const budget = run.budget === undefined ? undefined : askedBudget(run.budget, run.createdAt);
      write({
        v: 1,
        type: "request",
        runId: run.runId,
        method: run.cause.method,
        sessionKey: run.sessionKey,
        ...(budget === undefined ? {} : { budget }),
        ...(run.traceparent === undefined ? {} : { traceparent: run.traceparent }),
        ...(run.deliverTo === undefined ? {} : { deliver: run.deliverTo }),
      });
    },
    deliveryFinal(delivery) {
      write({
        v: 1,
        type: "delivery",
        kind: delivery.kind,
        sessionKey: delivery.sessionKey,
        ...(delivery.runId === undefined ? {} : { runId: delivery.runId }),
        channel: delivery.channel,
        to: delivery.to,
        text: delivery.text,
        status: delivery.status,
        ...(delivery.status === "delivered" || delivery.lastError === undefined
          ? {}
          : { reason: delivery.lastError }),
      });
    },
  };
}

/**
 * A root's budget as it was asked for: its deadline back in seconds from the run's creation (the deadline was set a
 * moment before it, from whole seconds, hence rounded up).
 */
function askedBudget(limits: NonNullable<RunRecord["budget"]>, createdAt: number): Budget {
  const { tokens, costUsd, runs, deadlineAt } = limits;
  return {
    ...(tokens === undefined ? {} : { tokens }),
    ...(costUsd === undefined ? {} : { costUsd }),
    ...(runs === undefined ? {} : { runs }),
    ...(deadlineAt === undefined ? {} : { seconds: Math.max(1, Math.ceil((deadlineAt - createdAt) / 1000)) }),
  };
}
