import { SessionsError } from "@sessions/core";

/** What matrix-js-sdk's `MatrixError` (and its `HTTPError` / `ConnectionError`) carries. */
interface MatrixErrorLike {
  errcode?: string | undefined;
  httpStatus?: number | undefined;
  data?: { error?: string | undefined; retry_after_ms?: unknown } | undefined;
  message?: string | undefined;
  getRetryAfterMs?(): number | null;
}

/** Used when a rate limit names no delay. */
const DEFAULT_RETRY_AFTER_MS = 1000;

function retryAfterMs(e: MatrixErrorLike): number {
  try {
    // Prefers the Retry-After header (spec v1.10+), then the deprecated `retry_after_ms` body field.
    const fromLibrary = e.getRetryAfterMs?.();
    if (typeof fromLibrary === "number" && Number.isFinite(fromLibrary) && fromLibrary >= 0)
      return fromLibrary;
  } catch {
    // An unparsable Retry-After: fall through to the body field.
  }
  const fromBody = e.data?.retry_after_ms;
  return typeof fromBody === "number" && Number.isFinite(fromBody) && fromBody >= 0
    ? Math.ceil(fromBody)
    : DEFAULT_RETRY_AFTER_MS;
}

/**
 * A homeserver failure as the outbox understands it: `M_LIMIT_EXCEEDED` / HTTP 429 → `rate_limited` with
 * `retryAfterMs`; other 4xx (not in the room, forbidden, too large, bad token) → `invalid_params`, which the outbox
 * does not retry; anything else (5xx, network) → `unavailable`, retried with backoff.
 */
export function toSessionsError(error: unknown): SessionsError {
  if (SessionsError.isInstance(error)) return error as SessionsError;
  const e = (error ?? {}) as MatrixErrorLike;
  const what = [e.errcode, e.data?.error ?? e.message].filter(Boolean).join(": ");
  if (e.errcode === "M_LIMIT_EXCEEDED" || e.httpStatus === 429) {
    return new SessionsError("rate_limited", `Matrix rate limit: ${what || "429"}`, {
      retryAfterMs: retryAfterMs(e),
      cause: error,
    });
  }
  if (typeof e.httpStatus === "number" && e.httpStatus >= 400 && e.httpStatus < 500) {
    return new SessionsError("invalid_params", `Matrix refused the message: ${what || e.httpStatus}`, {
      cause: error,
    });
  }
  return new SessionsError("unavailable", `Matrix homeserver unreachable: ${what || String(error)}`, {
    cause: error,
  });
}
