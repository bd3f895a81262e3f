import { SessionsError } from "@sessions/core";
import type { Bot } from "grammy";

type BotInfo = Bot["botInfo"];

/** How long {@link initTelegramBot} keeps trying to reach the Bot API, and how to stop it early. */
export interface InitTelegramBotOptions {
  /** How long to keep trying to reach the Bot API before giving up (default 15 000 ms). */
  timeoutMs?: number | undefined;
  /** Stops trying early (the error is then `aborted`). */
  signal?: AbortSignal | undefined;
}

function describe(error: unknown): string {
  if (error === undefined) return "no answer";
  const cause = (error as { error?: unknown }).error;
  const detail = cause instanceof Error ? `: ${cause.message}` : "";
  return `${error instanceof Error ? error.message : String(error)}${detail}`;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done, { once: true });
  });
}

/**
 * Fetches the bot's own identity (`getMe`) within a bounded time, so that `bot.start()` afterwards does not spin
 * silently: grammY retries `getMe` forever while the Bot API is unreachable. Call it before `bot.start()`.
 *
 * @throws SessionsError `invalid_config` (field `token`) when Telegram rejects the token; `unavailable` (field
 * `apiRoot`) when the Bot API did not answer within `timeoutMs`, naming the last network error; `aborted` when
 * `signal` fired first.
 */
export async function initTelegramBot(bot: Bot, options: InitTelegramBotOptions = {}): Promise<BotInfo> {
  if (bot.isInited()) return bot.botInfo;
  const timeoutMs = options.timeoutMs ?? 15_000;
  if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) {
    throw new SessionsError("invalid_params", `timeoutMs must be a positive number (got ${timeoutMs})`, {
      field: "timeoutMs",
    });
  }
  const deadline = new AbortController();
  const timer = setTimeout(() => deadline.abort(), timeoutMs);
  const stop =
    options.signal === undefined ? deadline.signal : AbortSignal.any([deadline.signal, options.signal]);
  let lastError: unknown;
  let delay = 100;
  try {
    while (!stop.aborted) {
      try {
        // grammY types its signal with the abort-controller shim; the platform AbortSignal is what it uses at runtime.
        const me = await bot.api.getMe(stop as Parameters<Bot["api"]["getMe"]>[0]);
        bot.botInfo = me;
        return me;
      } catch (error) {
        const code = (error as { error_code?: unknown }).error_code;
        if (code === 401 || code === 404) {
          throw new SessionsError(
            "invalid_config",
            `Telegram rejected the bot token (${code} ${(error as Error).message}); check the token from @BotFather`,
            { field: "token", cause: error },
          );
        }
        if (!stop.aborted) lastError = error;
        await sleep(delay, stop);
        delay = Math.min(delay * 2, 2000);
      }
    }
  } finally {
    clearTimeout(timer);
  }
  if (options.signal?.aborted === true) {
    throw new SessionsError("aborted", "initTelegramBot was aborted", { cause: options.signal.reason });
  }
  throw new SessionsError(
    "unavailable",
    `cannot reach the Telegram Bot API within ${timeoutMs} ms (${describe(lastError)}); check the network, or the apiRoot if you set one`,
    { field: "apiRoot", cause: lastError },
  );
}
