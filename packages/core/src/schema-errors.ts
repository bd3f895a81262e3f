import type { z } from "zod";
import { SessionsError, type SessionsErrorCode } from "./errors.js";

/** `["agents", "list", 0, "id"]` → `agents.list[0].id`. */
export function formatIssuePath(path: readonly PropertyKey[]): string {
  let out = "";
  for (const part of path) {
    if (typeof part === "number") out += `[${part}]`;
    else out += out === "" ? String(part) : `.${String(part)}`;
  }
  return out;
}

/** Turns a zod failure into a `SessionsError` whose `field` and message name the first offending path. */
export function toSessionsError(
  error: z.ZodError,
  code: SessionsErrorCode,
  context: string,
  prefix: readonly PropertyKey[] = [],
): SessionsError {
  const issues = error.issues.map((issue) => ({
    path: formatIssuePath([...prefix, ...issue.path]),
    message: issue.message,
    code: issue.code,
  }));
  const first = issues[0];
  const where = first?.path ? `${first.path}: ` : "";
  const more = issues.length > 1 ? ` (and ${issues.length - 1} more)` : "";
  const field = first?.path ? first.path : undefined;
  return new SessionsError(code, `${context}: ${where}${first?.message ?? "invalid input"}${more}`, {
    ...(field === undefined ? {} : { field }),
    details: { issues },
    cause: error,
  });
}
