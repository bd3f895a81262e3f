import { EVENT_PAYLOADS, EventFrameSchema, type GatewayMethodName, METHOD_PAYLOADS } from "@sessions/core";

/** What a zod schema's `safeParse` answers, as much of it as these checks read. */
interface Parser {
  safeParse(
    value: unknown,
  ): { success: true } | { success: false; error: { issues: { path: PropertyKey[]; message: string }[] } };
}

/**
 * The schemas `@sessions/gateway-client`'s declared payload types come from (core's `METHOD_PAYLOADS` and
 * `EventFrameSchema`): what a payload breaks of them, as `path message` lines (empty when it conforms).
 */
function issues(schema: Parser, value: unknown): string[] {
  const parsed = schema.safeParse(value);
  return parsed.success ? [] : parsed.error.issues.map((i) => `${i.path.map(String).join(".")} ${i.message}`);
}

/** Violations of the client's payload schema of `method`. */
export function payloadViolations(method: GatewayMethodName, payload: unknown): string[] {
  return issues(METHOD_PAYLOADS[method], payload);
}

/** Violations of the client's event frame schema, and of its payload schema for the events it types (`chat`, `agent`). */
export function eventViolations(frame: unknown): string[] {
  const framing = issues(EventFrameSchema, frame);
  const { event, payload } = frame as { event?: unknown; payload?: unknown };
  const typed = typeof event === "string" && Object.hasOwn(EVENT_PAYLOADS, event);
  if (!typed) return framing;
  return [
    ...framing,
    ...issues(EVENT_PAYLOADS[event as keyof typeof EVENT_PAYLOADS], payload).map((i) => `payload.${i}`),
  ];
}
