import { SessionsError } from "@sessions/core";

/** How long a caller should wait before retrying a write refused for lack of space. */
export const STORAGE_FULL_RETRY_MS = 60_000;
/** How long before retrying after a lost connection, a deadlock or a server that is starting or stopping. */
export const UNAVAILABLE_RETRY_MS = 1_000;

interface PgError {
  code?: unknown;
  message?: unknown;
}

const sqlstate = (error: unknown): string | undefined => {
  const code = (error as PgError | null)?.code;
  return typeof code === "string" ? code : undefined;
};

/**
 * Any error out of node-postgres as the one error family: `storage_full` when the server has no space left,
 * `conflict` for a constraint the caller broke, `unavailable` (retryable) for everything else the server or the
 * network reports — lost connections, deadlocks, serialization failures, a server shutting down, too many
 * connections. A `SessionsError` passes unchanged.
 */
export function toStoreError(error: unknown, where: string): unknown {
  if (SessionsError.isInstance(error)) return error;
  const code = sqlstate(error);
  const message = error instanceof Error ? error.message : String(error);
  if (code === "53100") {
    return new SessionsError(
      "storage_full",
      `Cannot write: the Postgres server at ${where} is out of disk space; free space and retry`,
      { cause: error, retryAfterMs: STORAGE_FULL_RETRY_MS, details: { postgres: code } },
    );
  }
  if (code?.startsWith("23")) {
    return new SessionsError("conflict", `Postgres at ${where} refused the write: ${message}`, {
      cause: error,
      details: { postgres: code },
    });
  }
  return new SessionsError("unavailable", `Postgres at ${where} failed: ${message}`, {
    cause: error,
    retryAfterMs: UNAVAILABLE_RETRY_MS,
    ...(code === undefined ? {} : { details: { postgres: code } }),
  });
}
