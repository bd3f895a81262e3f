/** Every code a `SessionsError` can carry. Closed: branch on these, never on messages. */
export type SessionsErrorCode =
  | "invalid_params"
  | "invalid_key"
  | "invalid_config"
  | "not_found"
  | "ambiguous"
  | "forbidden"
  | "send_policy_denied"
  | "payload_too_large"
  | "conflict"
  | "busy"
  | "timeout"
  | "aborted"
  | "rate_limited"
  | "unavailable"
  | "storage_full"
  | "internal";

/** Every `SessionsError` code. */
export const SESSIONS_ERROR_CODES: readonly SessionsErrorCode[] = [
  "invalid_params",
  "invalid_key",
  "invalid_config",
  "not_found",
  "ambiguous",
  "forbidden",
  "send_policy_denied",
  "payload_too_large",
  "conflict",
  "busy",
  "timeout",
  "aborted",
  "rate_limited",
  "unavailable",
  "storage_full",
  "internal",
];

/** Extra facts a `SessionsError` carries. */
export interface SessionsErrorOptions {
  /** The input field (dotted path) that was wrong, e.g. `sessionKey` or `session.sendPolicy.rules[0].action`. */
  field?: string | undefined;
  /** Machine-readable extra facts (candidate keys, the allowed ids, …). */
  details?: Record<string, unknown> | undefined;
  /** When a retry makes sense, after how many milliseconds. */
  retryAfterMs?: number | undefined;
  cause?: unknown;
}

const MARKER = Symbol.for("@sessions/core.SessionsError");

/**
 * The one error family of every `@sessions/*` package. Recognise it with `SessionsError.isInstance(e)`,
 * which also works when two copies of the package are installed.
 */
export class SessionsError extends Error {
  readonly code: SessionsErrorCode;
  readonly field: string | undefined;
  readonly details: Record<string, unknown> | undefined;
  readonly retryAfterMs: number | undefined;
  readonly [MARKER] = true;

  constructor(code: SessionsErrorCode, message: string, options: SessionsErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "SessionsError";
    this.code = code;
    this.field = options.field;
    this.details = options.details;
    this.retryAfterMs = options.retryAfterMs;
  }

  /** Whether `value` is a `SessionsError`, also one thrown by another copy of this package (`instanceof` is not). */
  static isInstance(value: unknown): value is SessionsError {
    return typeof value === "object" && value !== null && (value as Record<symbol, unknown>)[MARKER] === true;
  }

  /** A plain object safe to put on the wire or in a tool result. */
  toJSON(): {
    name: string;
    code: SessionsErrorCode;
    message: string;
    field?: string | undefined;
    details?: Record<string, unknown> | undefined;
    retryAfterMs?: number | undefined;
  } {
    return {
      name: this.name,
      code: this.code,
      message: this.message,
      ...(this.field === undefined ? {} : { field: this.field }),
      ...(this.details === undefined ? {} : { details: this.details }),
      ...(this.retryAfterMs === undefined ? {} : { retryAfterMs: this.retryAfterMs }),
    };
  }
}

/** Renders a value for an error message: short, quoted, never huge. */
export function describeValue(value: unknown): string {
  if (typeof value === "string") {
    const cut = value.length > 80 ? `${value.slice(0, 77)}...` : value;
    return JSON.stringify(cut);
  }
  if (value === undefined) return "undefined";
  if (typeof value === "number" || typeof value === "boolean" || value === null) return String(value);
  if (Array.isArray(value)) return `array(${value.length})`;
  return typeof value;
}
