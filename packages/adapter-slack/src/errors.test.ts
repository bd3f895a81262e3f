import { describe, expect, it } from "vitest";
import { toSessionsError } from "./errors.js";
import { slackChannelId } from "./slack.js";

const platform = (error: string, needed?: string) => ({
  code: "slack_webapi_platform_error",
  data: { ok: false, error, ...(needed === undefined ? {} : { needed }) },
});

describe("Slack errors as delivery failures", () => {
  it("turns a 429 into rate_limited at Retry-After", () => {
    expect(toSessionsError({ code: "slack_webapi_rate_limited_error", retryAfter: 7 })).toMatchObject({
      code: "rate_limited",
      retryAfterMs: 7000,
    });
  });

  it("turns permission errors into invalid_params naming Slack's error, and outages into unavailable", () => {
    for (const error of [
      "not_in_channel",
      "channel_not_found",
      "missing_scope",
      "is_archived",
      "invalid_auth",
    ]) {
      expect(toSessionsError(platform(error))).toMatchObject({
        code: "invalid_params",
        details: { slackError: error },
        message: expect.stringContaining(error),
      });
    }
    expect(toSessionsError(platform("missing_scope", "chat:write")).message).toContain("needs chat:write");
    expect(toSessionsError(platform("internal_error"))).toMatchObject({ code: "unavailable" });
    expect(toSessionsError({ code: "slack_webapi_request_error", message: "ECONNREFUSED" })).toMatchObject({
      code: "unavailable",
    });
    expect(toSessionsError({ code: "slack_webapi_http_error", statusCode: 503 })).toMatchObject({
      code: "unavailable",
    });
    expect(toSessionsError(undefined)).toMatchObject({ code: "unavailable" });
  });

  it("reads conversation ids from targets in any form the gateway stores them, and refuses garbage", () => {
    expect(slackChannelId("channel:C0GENERAL")).toBe("C0GENERAL");
    expect(slackChannelId("channel:c0general")).toBe("C0GENERAL");
    expect(slackChannelId("user:U0ALICE01")).toBe("U0ALICE01");
    expect(slackChannelId(" D0ALICEDM ")).toBe("D0ALICEDM");
    expect(() => slackChannelId("channel:")).toThrow(
      expect.objectContaining({ code: "invalid_params", field: "to" }),
    );
    expect(() => slackChannelId("#general")).toThrow(expect.objectContaining({ code: "invalid_params" }));
  });
});
