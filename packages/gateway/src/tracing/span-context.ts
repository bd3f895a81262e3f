import type * as Otel from "@opentelemetry/api";
import { formatTraceparent } from "@sessions/core";

/** The W3C `traceparent` of a span: what a run stores, and what the runs it causes continue from. */
export function traceparentOf(span: Otel.Span): string {
  const { traceId, spanId, traceFlags } = span.spanContext();
  return formatTraceparent({ traceId, spanId, flags: traceFlags });
}
