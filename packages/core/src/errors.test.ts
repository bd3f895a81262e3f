import { describe, expect, it } from "vitest";
import { describeValue, SESSIONS_ERROR_CODES, SessionsError, type SessionsErrorCode } from "./errors.js";

describe("SessionsError", () => {
  it("carries code, field, details, retryAfterMs and cause", () => {
    const cause = new Error("disk");
    const error = new SessionsError("rate_limited", "slow down", {
      field: "sessionKey",
      details: { limit: 5 },
      retryAfterMs: 1500,
      cause,
    });
    expect(error).toBeInstanceOf(Error);
    expect(error.name).toBe("SessionsError");
    expect(error).toMatchObject({ code: "rate_limited", field: "sessionKey", retryAfterMs: 1500, cause });
    expect(error.toJSON()).toEqual({
      name: "SessionsError",
      code: "rate_limited",
      message: "slow down",
      field: "sessionKey",
      details: { limit: 5 },
      retryAfterMs: 1500,
    });
  });

  it("is recognised across copies of the package through a global symbol", () => {
    const foreign = Object.assign(new Error("x"), {
      [Symbol.for("@sessions/core.SessionsError")]: true,
      code: "not_found",
    });
    expect(SessionsError.isInstance(foreign)).toBe(true);
    expect(SessionsError.isInstance(new Error("x"))).toBe(false);
    expect(SessionsError.isInstance(null)).toBe(false);
    expect(SessionsError.isInstance("SessionsError")).toBe(false);
  });

  it("lists every code of the union exactly once, storage_full included", () => {
    // A code added to the union but not here fails to compile (missing key).
    const union: Record<SessionsErrorCode, true> = {
      invalid_params: true,
      invalid_key: true,
      invalid_config: true,
      not_found: true,
      ambiguous: true,
      forbidden: true,
      send_policy_denied: true,
      payload_too_large: true,
      conflict: true,
      busy: true,
      timeout: true,
      aborted: true,
      rate_limited: true,
      unavailable: true,
      storage_full: true,
      internal: true,
    };
    expect([...SESSIONS_ERROR_CODES].sort()).toEqual(Object.keys(union).sort());
    const full = new SessionsError("storage_full", "the store is full", { retryAfterMs: 60_000 });
    expect(full.toJSON()).toMatchObject({ code: "storage_full", retryAfterMs: 60_000 });
  });

  it("describes values briefly", () => {
    expect(describeValue("x".repeat(100))).toHaveLength(82);
    expect(describeValue([1, 2])).toBe("array(2)");
    expect(describeValue({})).toBe("object");
    expect(describeValue(undefined)).toBe("undefined");
  });
});
