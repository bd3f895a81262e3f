import { z } from "zod";

/** A W3C trace context (https://www.w3.org/TR/trace-context/#traceparent-header), as the parts a span needs. */
export interface TraceParent {
  traceId: string;
  spanId: string;
  /** The trace flags byte: bit 0 says the caller sampled it. */
  flags: number;
}

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;
const ALL_ZERO = /^0+$/;

/**
 * Reads a `traceparent` header value; undefined for anything the spec says to ignore: another shape, version `ff`,
 * an all-zero trace or span id, or extra fields on version 00.
 */
export function parseTraceparent(value: string): TraceParent | undefined {
  const match = TRACEPARENT.exec(value.trim().toLowerCase());
  if (match === null) return undefined;
  const [, version, traceId, spanId, flags, rest] = match as unknown as [
    string,
    string,
    string,
    string,
    string,
    string?,
  ];
  if (version === "ff" || (version === "00" && rest !== undefined)) return undefined;
  if (ALL_ZERO.test(traceId) || ALL_ZERO.test(spanId)) return undefined;
  return { traceId, spanId, flags: Number.parseInt(flags, 16) };
}

/** The `traceparent` value (version 00) of a span context. */
export function formatTraceparent(parent: TraceParent): string {
  return `00-${parent.traceId}-${parent.spanId}-${(parent.flags & 0xff).toString(16).padStart(2, "0")}`;
}

/**
 * A `traceparent` param (`chat.send`, `agent`, an adapter's inbound message): the run tree becomes part of the
 * caller's trace. One the W3C spec says to ignore is refused, naming the field.
 */
export const traceparentParam = z
  .string()
  .max(256)
  .refine((value) => parseTraceparent(value) !== undefined, {
    message: "must be a W3C traceparent (00-<32 hex trace id>-<16 hex span id>-<2 hex flags>)",
  });
