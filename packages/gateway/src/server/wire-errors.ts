import { SessionsError, type WireError } from "@sessions/core";

/** Maps a SessionsError onto the wire's error object (docs/protocol.md): top-level code plus `details.code`. */
export function toWireError(error: unknown): WireError {
  if (!SessionsError.isInstance(error)) {
    return { code: "UNAVAILABLE", message: "internal error", retryable: true, details: { code: "INTERNAL" } };
  }
  const specific = typeof error.details?.code === "string" ? (error.details.code as string) : undefined;
  const details: Record<string, unknown> = { ...(error.details ?? {}) };
  delete details.issues;
  if (error.field !== undefined) details.field = error.field;
  const base = (code: string, fallback: string): WireError => ({
    code,
    message: error.message,
    details: { ...details, code: specific ?? fallback },
  });
  switch (error.code) {
    case "forbidden":
      return base("FORBIDDEN", "FORBIDDEN");
    case "storage_full":
      return {
        code: "UNAVAILABLE",
        message: error.message,
        details: { ...details, code: "STORAGE_FULL" },
        retryable: true,
        retryAfterMs: error.retryAfterMs ?? 60_000,
      };
    case "busy":
      return {
        ...base("UNAVAILABLE", "BUSY"),
        retryable: true,
        ...(error.retryAfterMs === undefined ? {} : { retryAfterMs: error.retryAfterMs }),
      };
    case "unavailable":
    case "rate_limited":
    case "timeout":
    case "internal":
      return {
        ...base("UNAVAILABLE", error.code.toUpperCase()),
        retryable: true,
        ...(error.retryAfterMs === undefined ? {} : { retryAfterMs: error.retryAfterMs }),
      };
    case "not_found":
      return base("INVALID_REQUEST", "NOT_FOUND");
    case "ambiguous":
      return base("INVALID_REQUEST", "AMBIGUOUS");
    case "send_policy_denied":
      return base("INVALID_REQUEST", "SEND_POLICY_DENIED");
    case "payload_too_large":
      return base("INVALID_REQUEST", "PAYLOAD_TOO_LARGE");
    default:
      return base("INVALID_REQUEST", "INVALID_PARAMS");
  }
}

/** An error the server itself answers with: a top-level code and the specific reason in `details.code`. */
export function wireError(
  code: string,
  detailsCode: string,
  message: string,
  extra: Partial<WireError> = {},
): WireError {
  return { code, message, details: { code: detailsCode }, ...extra };
}
