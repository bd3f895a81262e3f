import type * as Otel from "@opentelemetry/api";
import { findAgentConfig, parseTraceparent } from "@sessions/core";
import type { GatewayContext } from "../context.js";
import type { LifecycleHooks, RunDraft } from "../lifecycle.js";
import type { RunRecord } from "../store/types.js";
import { BoundedMap } from "./bounded-map.js";
import { traceparentOf } from "./span-context.js";
import { endToolSpan, toolSpanAttributes, traceRequestTools } from "./tool-spans.js";

type Api = typeof Otel;

/** Ended runs whose span context deliveries still look up here, and sessions whose id is known. */
const REMEMBERED = 10_000;
/** Runs traced at once, at most (far above what one gateway runs at a time). */
const OPEN_RUNS = 100_000;

interface OpenRun {
  span: Otel.Span;
  /** The span of the request or inbound message that started a tree's root, ended once the run is recorded. */
  request?: Otel.Span | undefined;
  /** Resolves once the run's conversation id is set (the span ends after it). */
  conversation?: Promise<void> | undefined;
}

/**
 * OpenTelemetry spans for the run lifecycle, one trace per tree: the request (or inbound message) that started the
 * tree, an `invoke_agent` span per run, an `execute_tool` span per tool call (in a run, or a `sessions.tools.call`
 * outside any) and a span per delivery attempt, with the GenAI attributes. A run's span context is stored with the
 * run (`traceparent`), so the runs it causes join its trace on any gateway and after a restart. With no tracer
 * provider registered, every hook returns at once.
 */
export function traceRuns(
  ctx: Pick<GatewayContext, "config" | "store" | "logger">,
  api: Api,
): Partial<LifecycleHooks> {
  const { trace, context, SpanKind, SpanStatusCode } = api;
  const tracer = trace.getTracer("@sessions/gateway");
  // The provider the API falls back to while none is registered: nothing is recorded then.
  const noop = new api.ProxyTracerProvider().getDelegate();
  const enabled = () => {
    const provider = trace.getTracerProvider() as Otel.TracerProvider & {
      getDelegate?(): Otel.TracerProvider;
    };
    return provider.getDelegate?.() !== noop;
  };
  // Runs between `recording` and `ended`: a run accepted here that never ends here (its lane never came, the store
  // failed) is forgotten once this many newer ones are open, its span never ended.
  const open = new BoundedMap<string, OpenRun>(OPEN_RUNS);
  const byRunId = new BoundedMap<string, OpenRun>(OPEN_RUNS);
  const tools = new Map<string, Otel.Span>();
  const ended = new BoundedMap<string, string>(REMEMBERED);
  const sessionIds = new BoundedMap<string, string>(REMEMBERED);
  const toolKey = (runId: string, toolCallId: string) => `${runId}\u0000${toolCallId}`;

  const remote = (traceparent: string | undefined): Otel.Context | undefined => {
    const parsed = traceparent === undefined ? undefined : parseTraceparent(traceparent);
    if (parsed === undefined) return undefined;
    return trace.setSpanContext(context.active(), {
      traceId: parsed.traceId,
      spanId: parsed.spanId,
      traceFlags: parsed.flags,
      isRemote: true,
    });
  };
  const requestTools = traceRequestTools(api, tracer, enabled);

  /** The live tool call here that started the run (in a run, or a `sessions.tools.call`), if any. */
  function toolOf(run: RunDraft): Otel.Span | undefined {
    if (run.cause?.kind === "tool") return tools.get(toolKey(run.cause.runId, run.cause.toolCallId));
    if (run.cause?.kind === "request") return requestTools.spanOf(run.traceparent);
    return undefined;
  }

  /** Sets `gen_ai.conversation.id` (the session's id) once known; a first sight of a session reads its entry. */
  function conversation(span: Otel.Span, sessionKey: string): Promise<void> | undefined {
    const known = sessionIds.get(sessionKey);
    if (known !== undefined) {
      span.setAttribute("gen_ai.conversation.id", known);
      return undefined;
    }
    return ctx.store.getEntry(sessionKey).then(
      (entry) => {
        if (entry === undefined) return;
        sessionIds.set(sessionKey, entry.sessionId);
        span.setAttribute("gen_ai.conversation.id", entry.sessionId);
      },
      () => undefined,
    );
  }

  return {
    ...requestTools.hooks,

    recording(run) {
      if (!enabled()) return;
      // Under the tool call that started it, else the context it was started with, else a trace of its own.
      const tool = toolOf(run);
      const root = trace.deleteSpan(context.active());
      let parent = tool === undefined ? (remote(run.traceparent) ?? root) : trace.setSpan(root, tool);
      let request: Otel.Span | undefined;
      const cause = run.cause;
      if (tool === undefined && (cause?.kind === "request" || cause?.kind === "inbound")) {
        request = tracer.startSpan(
          cause.kind === "request" ? cause.method : `receive ${cause.channel}`,
          {
            kind: cause.kind === "request" ? SpanKind.SERVER : SpanKind.CONSUMER,
            attributes: {
              "sessions.key": run.sessionKey,
              ...(cause.kind === "inbound" ? { "sessions.channel": cause.channel } : {}),
              ...(cause.kind === "inbound" && cause.messageId !== undefined
                ? { "messaging.message.id": cause.messageId }
                : {}),
            },
          },
          parent,
        );
        parent = trace.setSpan(parent, request);
      }
      const agentName = findAgentConfig(ctx.config, run.agentId)?.name ?? run.agentId;
      const span = tracer.startSpan(
        `invoke_agent ${agentName}`,
        {
          kind: SpanKind.INTERNAL,
          attributes: {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.id": run.agentId,
            "gen_ai.agent.name": agentName,
            "sessions.key": run.sessionKey,
            "sessions.run_kind": run.kind,
            ...(run.cause === undefined ? {} : { "sessions.cause": run.cause.kind }),
            ...(run.rootRunId === undefined ? {} : { "sessions.root_run_id": run.rootRunId }),
          },
        },
        parent,
      );
      if (!trace.isSpanContextValid(span.spanContext())) {
        request?.end();
        return;
      }
      run.traceparent = traceparentOf(span);
      open.set(run.traceparent, { span, request });
    },

    declined(run) {
      const opened = run.traceparent === undefined ? undefined : open.get(run.traceparent);
      if (opened === undefined) return;
      open.delete(run.traceparent as string);
      // The request happened (a repeat of an earlier one); the run it would have started did not.
      opened.request?.setAttribute("sessions.duplicate", true);
      opened.request?.end();
    },

    accepted(run) {
      const opened = run.traceparent === undefined ? undefined : open.get(run.traceparent);
      if (opened === undefined) return;
      open.delete(run.traceparent as string);
      opened.span.setAttribute("sessions.run_id", run.runId);
      opened.request?.setAttribute("sessions.run_id", run.runId);
      opened.request?.end();
      opened.conversation = conversation(opened.span, run.sessionKey);
      byRunId.set(run.runId, opened);
    },

    started(run) {
      byRunId.get(run.runId)?.span.addEvent("run started");
    },

    toolCalled(run, call) {
      const opened = byRunId.get(run.runId);
      if (opened === undefined) return;
      const span = tracer.startSpan(
        `execute_tool ${call.tool}`,
        {
          kind: SpanKind.INTERNAL,
          attributes: {
            ...toolSpanAttributes({
              name: call.tool,
              callId: call.toolCallId,
              sessionKey: run.sessionKey,
              sandboxed: call.sandboxed,
            }),
            "sessions.run_id": run.runId,
          },
        },
        trace.setSpan(context.active(), opened.span),
      );
      tools.set(toolKey(run.runId, call.toolCallId), span);
    },

    toolReturned(run, call, result, error) {
      const key = toolKey(run.runId, call.toolCallId);
      const span = tools.get(key);
      if (span === undefined) return;
      tools.delete(key);
      endToolSpan(api, span, result, error);
    },

    ended(run) {
      const opened = byRunId.get(run.runId);
      if (opened === undefined) return;
      byRunId.delete(run.runId);
      const { span } = opened;
      ended.set(run.runId, traceparentOf(span));
      span.setAttribute("sessions.run_status", run.status);
      if (run.usage?.inputTokens !== undefined)
        span.setAttribute("gen_ai.usage.input_tokens", run.usage.inputTokens);
      if (run.usage?.outputTokens !== undefined)
        span.setAttribute("gen_ai.usage.output_tokens", run.usage.outputTokens);
      if (run.usage?.costUsd !== undefined) span.setAttribute("sessions.cost_usd", run.usage.costUsd);
      if (run.status !== "ok") {
        span.setStatus({ code: SpanStatusCode.ERROR, message: run.error ?? run.status });
        span.setAttribute("error.type", run.status);
      }
      const at = Date.now();
      if (opened.conversation === undefined) span.end(at);
      else void opened.conversation.then(() => span.end(at));
    },

    deliveryAttempted(delivery, attempt) {
      if (delivery.runId === undefined || !enabled()) return;
      const endTime = Date.now();
      const startTime = endTime - Math.max(0, attempt.endedAt - attempt.startedAt);
      const record = (traceparent: string | undefined) => {
        const parent = remote(traceparent);
        if (parent === undefined) return;
        const link = trace.getSpanContext(parent);
        const span = tracer.startSpan(
          `deliver ${delivery.kind}`,
          {
            kind: SpanKind.CLIENT,
            startTime,
            ...(link === undefined ? {} : { links: [{ context: link }] }),
            attributes: {
              "sessions.delivery_id": delivery.id,
              "sessions.delivery_kind": delivery.kind,
              "sessions.key": delivery.sessionKey,
              "sessions.run_id": delivery.runId as string,
              "sessions.channel": delivery.channel,
              "sessions.delivery_outcome": attempt.outcome,
              "sessions.delivery_attempt": delivery.attempts,
            },
          },
          parent,
        );
        if (attempt.outcome === "failed" || attempt.outcome === "retry") {
          span.setStatus({ code: SpanStatusCode.ERROR, message: attempt.error ?? attempt.outcome });
          span.setAttribute("error.type", attempt.outcome);
        }
        span.end(endTime);
      };
      const known = ended.get(delivery.runId) ?? byRunId.get(delivery.runId);
      if (typeof known === "string") return record(known);
      if (known !== undefined) return record(traceparentOf(known.span));
      // Queued by a run of another gateway, or before a restart: its context is stored with it.
      ctx.store.getRun(delivery.runId).then(
        (run: RunRecord | undefined) => record(run?.traceparent),
        (error: unknown) =>
          ctx.logger.warn("could not trace a delivery", { id: delivery.id, error: String(error) }),
      );
    },
  };
}
