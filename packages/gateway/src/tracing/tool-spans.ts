import type * as Otel from "@opentelemetry/api";
import type { LifecycleHooks, RequestToolCallInfo } from "../lifecycle.js";
import { traceparentOf } from "./span-context.js";

type Api = typeof Otel;

/** The GenAI and `sessions.*` attributes of an `execute_tool` span, in a run or outside one. */
export function toolSpanAttributes(tool: {
  name: string;
  callId?: string | undefined;
  sessionKey: string;
  sandboxed?: boolean | undefined;
}): Otel.Attributes {
  return {
    "gen_ai.operation.name": "execute_tool",
    "gen_ai.tool.name": tool.name,
    ...(tool.callId === undefined ? {} : { "gen_ai.tool.call.id": tool.callId }),
    "gen_ai.tool.type": "function",
    "sessions.key": tool.sessionKey,
    ...(tool.sandboxed === undefined ? {} : { "sessions.sandboxed": tool.sandboxed }),
  };
}

/** Ends an `execute_tool` span: an error when the tool threw or answered `{ status: "error" }`, else its status. */
export function endToolSpan(api: Api, span: Otel.Span, result: unknown, error: string | undefined): void {
  const status = (result as { status?: unknown } | null | undefined)?.status;
  if (error !== undefined || status === "error") {
    span.setStatus({
      code: api.SpanStatusCode.ERROR,
      message: error ?? String((result as { error?: unknown }).error),
    });
    span.setAttribute("error.type", error === undefined ? "tool_error" : "exception");
  } else if (typeof status === "string") span.setAttribute("sessions.tool.status", status);
  span.end();
}

/** The spans of tool calls made outside any run, and a look-up of the live ones by their span context. */
export interface RequestToolSpans {
  hooks: Pick<LifecycleHooks, "requestToolCalled" | "requestToolReturned">;
  /** The `execute_tool` span under way whose context is `traceparent`: the parent of a run its tool starts. */
  spanOf(traceparent: string | undefined): Otel.Span | undefined;
}

/**
 * Spans for a tool call outside any run (`sessions.tools.call` over the wire or in process, MCP's `tools/call`): a
 * `sessions.tools.call` server span and its `execute_tool` child. The call carries the child's context
 * (`traceparent`), so a run its tool starts (`sessions_send`, `sessions_spawn`) is traced under it.
 */
export function traceRequestTools(api: Api, tracer: Otel.Tracer, enabled: () => boolean): RequestToolSpans {
  const { trace, context, SpanKind, SpanStatusCode } = api;
  const open = new Map<RequestToolCallInfo, { request: Otel.Span; tool: Otel.Span }>();
  const byTraceparent = new Map<string, Otel.Span>();

  return {
    spanOf: (traceparent) => (traceparent === undefined ? undefined : byTraceparent.get(traceparent)),
    hooks: {
      requestToolCalled(call) {
        if (!enabled()) return;
        const root = trace.deleteSpan(context.active());
        const request = tracer.startSpan(
          "sessions.tools.call",
          { kind: SpanKind.SERVER, attributes: { "sessions.key": call.requesterKey } },
          root,
        );
        const tool = tracer.startSpan(
          `execute_tool ${call.tool}`,
          {
            kind: SpanKind.INTERNAL,
            attributes: toolSpanAttributes({
              name: call.tool,
              sessionKey: call.requesterKey,
              sandboxed: call.sandboxed,
            }),
          },
          trace.setSpan(root, request),
        );
        open.set(call, { request, tool });
        if (!trace.isSpanContextValid(tool.spanContext())) return;
        call.traceparent = traceparentOf(tool);
        byTraceparent.set(call.traceparent, tool);
      },

      requestToolReturned(call, result, error) {
        const spans = open.get(call);
        if (spans === undefined) return;
        open.delete(call);
        if (call.traceparent !== undefined) byTraceparent.delete(call.traceparent);
        endToolSpan(api, spans.tool, result, error?.message);
        if (error !== undefined) {
          spans.request.setStatus({ code: SpanStatusCode.ERROR, message: error.message });
          spans.request.setAttribute("error.type", error.code);
        }
        spans.request.end();
      },
    },
  };
}
