import { SessionsError } from "@sessions/core";
import Database from "better-sqlite3";

/** How long a caller should wait before retrying a write refused for lack of space. */
export const STORAGE_FULL_RETRY_MS = 60_000;

/**
 * A failed write as the one error family: `storage_full` when the disk or the page quota is full, `conflict`
 * for a constraint the caller broke, `unavailable` for anything else SQLite reports. Other errors pass as is.
 */
export function toWriteError(error: unknown, file: string): unknown {
  if (!(error instanceof Database.SqliteError)) return error;
  if (error.code === "SQLITE_FULL") {
    return new SessionsError(
      "storage_full",
      `Cannot write: the SQLite store at ${file} is full (disk full or its size cap reached); free space and retry`,
      { cause: error, retryAfterMs: STORAGE_FULL_RETRY_MS, details: { sqlite: error.code } },
    );
  }
  if (error.code.startsWith("SQLITE_CONSTRAINT")) {
    return new SessionsError("conflict", `SQLite store at ${file} refused the write: ${error.message}`, {
      cause: error,
      details: { sqlite: error.code },
    });
  }
  return new SessionsError("unavailable", `SQLite store at ${file} failed to write: ${error.message}`, {
    cause: error,
    details: { sqlite: error.code },
  });
}

/** The same functions, throwing `toWriteError` instead of raw SQLite errors. */
export function withWriteErrors<F extends Record<string, unknown>>(
  fns: F,
  names: readonly (keyof F)[],
  file: string,
): F {
  const wrapped: Record<string, unknown> = { ...fns };
  for (const name of names) {
    const fn = fns[name] as (...args: unknown[]) => unknown;
    wrapped[name as string] = (...args: unknown[]) => {
      try {
        return fn(...args);
      } catch (error) {
        throw toWriteError(error, file);
      }
    };
  }
  return wrapped as F;
}
