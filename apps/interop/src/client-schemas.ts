import { EventFrameSchema, type GatewayMethodName, METHOD_PAYLOADS } from "@sessions/core";

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

/** Violations of the client's event frame schema. */
export function eventViolations(frame: unknown): string[] {
  return issues(EventFrameSchema, frame);
}
