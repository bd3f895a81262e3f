import { SessionsError, type SessionsErrorCode, type WireError } from "@sessions/core";

/**
 * An error from the gateway (or from the client itself, for timeouts and lost connections). It is a
 * `SessionsError` whose `code` follows our closed union; the wire's own codes stay available.
 */
export class GatewayClientError extends SessionsError {
  /** The wire's top-level code (`INVALID_REQUEST`, `FORBIDDEN`, `UNAVAILABLE`, …), or `CLIENT` for local errors. */
  readonly wireCode: string;
  /** `details.code` from the wire (`NOT_FOUND`, `AUTH_TOKEN_MISMATCH`, …). */
  readonly detailsCode: string | undefined;
  readonly retryable: boolean;
  /** For client-side failures: whether the request had been written to the socket before it failed. */
  readonly requestSent: boolean | undefined;

  constructor(
    code: SessionsErrorCode,
    message: string,
    options: {
      wireCode: string;
      /** The input field that was wrong (client-side checks). */
      field?: string | undefined;
      details?: Record<string, unknown> | undefined;
      retryable?: boolean | undefined;
      retryAfterMs?: number | undefined;
      requestSent?: boolean | undefined;
      cause?: unknown;
    },
  ) {
    super(code, message, {
      ...(options.field === undefined ? {} : { field: options.field }),
      ...(options.details === undefined ? {} : { details: options.details }),
      ...(options.retryAfterMs === undefined ? {} : { retryAfterMs: options.retryAfterMs }),
      ...(options.cause === undefined ? {} : { cause: options.cause }),
    });
    this.name = "GatewayClientError";
    this.wireCode = options.wireCode;
    this.detailsCode = typeof options.details?.code === "string" ? options.details.code : undefined;
    this.retryable = options.retryable ?? false;
    this.requestSent = options.requestSent;
  }
}

const DETAIL_CODES: Readonly<Record<string, SessionsErrorCode>> = {
  NOT_FOUND: "not_found",
  AMBIGUOUS: "ambiguous",
  SEND_POLICY_DENIED: "send_policy_denied",
  PAYLOAD_TOO_LARGE: "payload_too_large",
  AUTH_TOKEN_MISMATCH: "forbidden",
  MISSING_SCOPE: "forbidden",
  RATE_LIMITED: "rate_limited",
  BUSY: "busy",
  UNKNOWN_METHOD: "invalid_params",
};

/** Turns the wire's error object into a `GatewayClientError`. */
export function fromWireError(error: WireError): GatewayClientError {
  const detailsCode = typeof error.details?.code === "string" ? error.details.code : undefined;
  const mapped =
    (detailsCode !== undefined && Object.hasOwn(DETAIL_CODES, detailsCode)
      ? DETAIL_CODES[detailsCode]
      : undefined) ??
    (error.code === "FORBIDDEN" || error.code === "NOT_PAIRED" || error.code === "NOT_LINKED"
      ? "forbidden"
      : error.code === "UNAVAILABLE"
        ? "unavailable"
        : "invalid_params");
  return new GatewayClientError(mapped, error.message, {
    wireCode: error.code,
    ...(error.details === undefined ? {} : { details: error.details }),
    retryable: error.retryable ?? error.code === "UNAVAILABLE",
    ...(error.retryAfterMs === undefined ? {} : { retryAfterMs: error.retryAfterMs }),
  });
}

export function clientError(
  code: SessionsErrorCode,
  message: string,
  options: {
    retryable?: boolean | undefined;
    requestSent?: boolean | undefined;
    detailsCode?: string | undefined;
    cause?: unknown;
  } = {},
): GatewayClientError {
  return new GatewayClientError(code, message, {
    wireCode: "CLIENT",
    details: { code: options.detailsCode ?? code.toUpperCase() },
    retryable: options.retryable ?? false,
    ...(options.requestSent === undefined ? {} : { requestSent: options.requestSent }),
    ...(options.cause === undefined ? {} : { cause: options.cause }),
  });
}
