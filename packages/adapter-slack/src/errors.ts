import { SessionsError } from "@sessions/core";

/** Slack errors that a later attempt may get past: the outbox retries these with backoff. */
const TRANSIENT = new Set([
  "ratelimited",
  "internal_error",
  "fatal_error",
  "service_unavailable",
  "request_timeout",
]);

/** What to do about the permission errors people hit first. */
const HINTS: Record<string, string> = {
  not_in_channel: "invite the app to the channel (/invite @your-app)",
  channel_not_found: "the channel is gone, or belongs to another workspace than the token",
  is_archived: "the channel is archived",
  missing_scope: "add the scope to the app and reinstall it",
  not_authed: "no bot token",
  invalid_auth: "the bot token is invalid",
  token_revoked: "the app was uninstalled from the workspace",
  account_inactive: "the app was uninstalled from the workspace",
  restricted_action: "a workspace admin restricts posting in this channel",
};

interface SlackLikeError {
  code?: string | undefined;
  retryAfter?: number | undefined;
  statusCode?: number | undefined;
  data?: { error?: string | undefined; needed?: string | undefined } | undefined;
  message?: string | undefined;
}

/**
 * Maps what `@slack/web-api` throws to the outbox's vocabulary: a 429 (`WebAPIRateLimitedError`) becomes
 * `rate_limited` with `retryAfterMs` from `Retry-After`; Slack's permanent refusals (`not_in_channel`,
 * `channel_not_found`, `missing_scope`, …) become `invalid_params` with `details.slackError`, so the delivery ends
 * `failed` at once with the reason; network trouble and Slack outages become `unavailable` (retried).
 */
export function toSessionsError(error: unknown, what = "the message"): SessionsError {
  if (SessionsError.isInstance(error)) return error;
  const e = (error ?? {}) as SlackLikeError;
  if (e.code === "slack_webapi_rate_limited_error") {
    const seconds = typeof e.retryAfter === "number" && e.retryAfter >= 0 ? e.retryAfter : 1;
    return new SessionsError("rate_limited", `Slack rate limit: retry after ${seconds} s`, {
      retryAfterMs: seconds * 1000,
      details: { slackError: "ratelimited" },
      cause: error,
    });
  }
  if (e.code === "slack_webapi_platform_error" && typeof e.data?.error === "string") {
    const slackError = e.data.error;
    const details = { slackError, ...(e.data.needed === undefined ? {} : { needed: e.data.needed }) };
    if (TRANSIENT.has(slackError)) {
      return new SessionsError("unavailable", `Slack could not take ${what}: ${slackError}`, {
        details,
        cause: error,
      });
    }
    const needed = e.data.needed === undefined ? "" : ` (needs ${e.data.needed})`;
    const hint = HINTS[slackError] === undefined ? "" : `: ${HINTS[slackError]}`;
    return new SessionsError("invalid_params", `Slack refused ${what}: ${slackError}${needed}${hint}`, {
      details,
      cause: error,
    });
  }
  if (e.code === "slack_webapi_http_error" && typeof e.statusCode === "number" && e.statusCode < 500) {
    return new SessionsError("invalid_params", `Slack refused ${what}: HTTP ${e.statusCode}`, {
      details: { status: e.statusCode },
      cause: error,
    });
  }
  return new SessionsError("unavailable", `Slack unreachable: ${e.message ?? String(error)}`, {
    cause: error,
  });
}
