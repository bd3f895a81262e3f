import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { SessionsError } from "@sessions/core";
import { createFakeTelegramApi } from "@sessions/testing";
import { Bot } from "grammy";
import { afterEach, describe, expect, it } from "vitest";
import { initTelegramBot } from "./index.js";

const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

async function listen(handler: Parameters<typeof createServer>[1]): Promise<string> {
  const server = createServer(handler);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** A loopback port that nothing listens on (a server that bound it has closed). */
async function closedPort(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return `http://127.0.0.1:${port}`;
}

async function failure(promise: Promise<unknown>): Promise<SessionsError> {
  try {
    await promise;
  } catch (error) {
    if (SessionsError.isInstance(error)) return error;
    throw error;
  }
  throw new Error("expected a SessionsError");
}

describe("initTelegramBot", () => {
  it("fetches getMe once and marks the bot initialised", async () => {
    const api = await createFakeTelegramApi();
    try {
      const bot = new Bot(api.token, { client: { apiRoot: api.apiRoot } });
      const me = await initTelegramBot(bot);
      expect(me.username).toBe("sessions_test_bot");
      expect(bot.isInited()).toBe(true);
      expect(await initTelegramBot(bot)).toBe(bot.botInfo);
      expect(api.callsOf("getMe")).toHaveLength(1);
    } finally {
      await api.close();
    }
  });

  it("gives up on an unreachable Bot API with a typed error instead of retrying forever", async () => {
    const bot = new Bot("123:abc", { client: { apiRoot: await closedPort() } });
    // Long enough for a first attempt to fail with its own error even on a loaded machine.
    const error = await failure(initTelegramBot(bot, { timeoutMs: 5000 }));
    expect(error.code).toBe("unavailable");
    expect(error.field).toBe("apiRoot");
    expect(error.message).toMatch(/^cannot reach the Telegram Bot API within 5000 ms \(.*ECONNREFUSED/);
    expect(bot.isInited()).toBe(false);
  });

  it("gives up on a Bot API that accepts the connection but never answers", async () => {
    const apiRoot = await listen(() => {
      // Never answers.
    });
    const bot = new Bot("123:abc", { client: { apiRoot } });
    const error = await failure(initTelegramBot(bot, { timeoutMs: 300 }));
    expect(error.code).toBe("unavailable");
  });

  it("retries a Bot API that is briefly failing, then succeeds", async () => {
    let calls = 0;
    const apiRoot = await listen((_req, res) => {
      calls++;
      res.writeHead(calls < 3 ? 502 : 200, { "content-type": "application/json" });
      res.end(
        JSON.stringify(
          calls < 3
            ? { ok: false, error_code: 502, description: "Bad Gateway" }
            : { ok: true, result: { id: 1, is_bot: true, first_name: "B", username: "b_bot" } },
        ),
      );
    });
    const bot = new Bot("123:abc", { client: { apiRoot } });
    await expect(initTelegramBot(bot, { timeoutMs: 60_000 })).resolves.toMatchObject({ username: "b_bot" });
    expect(calls).toBe(3);
  });

  it("reports a rejected token at once as invalid_config", async () => {
    const api = await createFakeTelegramApi();
    try {
      const bot = new Bot("999:wrong", { client: { apiRoot: api.apiRoot } });
      const error = await failure(initTelegramBot(bot, { timeoutMs: 60_000 }));
      expect(error).toMatchObject({ code: "invalid_config", field: "token" });
      expect(error.message).toMatch(/^Telegram rejected the bot token \(404 /);
    } finally {
      await api.close();
    }
  });

  it("stops when its signal aborts, and refuses a bad timeout", async () => {
    const bot = new Bot("123:abc", { client: { apiRoot: await closedPort() } });
    const controller = new AbortController();
    const pending = initTelegramBot(bot, { timeoutMs: 60_000, signal: controller.signal });
    controller.abort();
    expect((await failure(pending)).code).toBe("aborted");
    expect(await failure(initTelegramBot(bot, { timeoutMs: 0 }))).toMatchObject({
      code: "invalid_params",
      field: "timeoutMs",
    });
  });
});
