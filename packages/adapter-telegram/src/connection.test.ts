import type { Logger } from "@sessions/core";
import {
  createGateway,
  createManualClock,
  createMemoryStore,
  createScriptedRunner,
  type Gateway,
  type HeldConnection,
} from "@sessions/gateway";
import { createFakeTelegramApi, type FakeTelegramApi, telegramUpdate } from "@sessions/testing";
import { eventually } from "@sessions/testing/eventually";
import { Bot } from "grammy";
import { afterEach, describe, expect, it } from "vitest";
import { createTelegramAdapter } from "./index.js";

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const step of cleanups.splice(0).reverse()) await step();
});

/** Collects what the gateway and the adapter log, as `level message {fields}` lines. */
function recordingLogger(lines: string[]): Logger {
  const line = (level: string) => (message: string, fields?: Record<string, unknown>) =>
    void lines.push(`${level} ${message} ${JSON.stringify(fields ?? {})}`);
  const logger: Logger = {
    debug: line("debug"),
    info: line("info"),
    warn: line("warn"),
    error: line("error"),
    child: () => logger,
  };
  return logger;
}

const CONFLICT = {
  error_code: 409,
  description:
    "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running",
};
const UNAUTHORIZED = { error_code: 401, description: "Unauthorized" };

interface BotGateway {
  gateway: Gateway;
  held: HeldConnection;
  /** When each of this bot's getUpdates requests was made (grammY's own requests, seen by a transformer). */
  polls: number[];
}

/**
 * One bot on `n` gateways sharing one store (as on one Postgres), each with its own grammY bot on the fake Bot API.
 * Their clock stands still: a gateway that gave the connection back tries again only once the test moves it.
 */
async function bots(api: FakeTelegramApi, n: number, log: string[] = []) {
  const shared = createMemoryStore();
  cleanups.push(() => shared.close());
  const clock = createManualClock();
  const out: BotGateway[] = [];
  for (let i = 0; i < n; i++) {
    const bot = new Bot(api.token, { client: { apiRoot: api.apiRoot } });
    const polls: number[] = [];
    bot.api.config.use((previous, method, payload, signal) => {
      if (method === "getUpdates") polls.push(Date.now());
      return previous(method, payload, signal);
    });
    const logger = recordingLogger(log);
    const adapter = createTelegramAdapter({ bot, typing: false, logger });
    const gateway = createGateway({
      store: { ...shared, close: async () => {} },
      runner: createScriptedRunner({ agents: {}, fallback: (turn) => `echo ${turn.text}` }),
      adapters: [adapter],
      clock,
      logger,
      cluster: { leaseTtlMs: 600, recoveryIntervalMs: 100 },
    });
    adapter.attach(gateway);
    const held = gateway.holdConnection(adapter.connection);
    cleanups.push(() => gateway.close({ drainMs: 50 }));
    // One after the other, so the first one holds the bot.
    if (i === 0) await eventually(() => held.held, "the first gateway to poll");
    out.push({ gateway, held, polls });
  }
  return { gateways: out, clock, store: shared };
}

const answered = (api: FakeTelegramApi) => api.callsOf("sendMessage").map((c) => String(c.params.text));

describe("Telegram polling held through a lease, when grammY gives up polling", () => {
  it("hands the bot to another gateway on 409 Conflict, and no update is answered twice", async () => {
    const api = await createFakeTelegramApi();
    cleanups.push(() => api.close());
    const log: string[] = [];
    const {
      gateways: [a, b],
      store,
    } = await bots(api, 2, log);
    if (a === undefined || b === undefined) throw new Error("two gateways expected");
    expect([a.held.held, b.held.held]).toEqual([true, false]);

    // A answers m1; its next poll meets a newer poller on the token: 409, and grammY stops polling for good.
    api.failNext("getUpdates", 1, CONFLICT);
    api.pushUpdate(telegramUpdate("private-text", { text: "m1" }));
    await eventually(() => b.held.held, "the other gateway to take the bot over");
    const movedAt = Date.now();
    expect(a.held.held).toBe(false);
    expect(log.filter((line) => line.startsWith("warn connection lost"))).toEqual([
      expect.stringContaining("409"),
    ]);

    // B polls from now on (m1, unconfirmed by A's failed poll, comes again to B and is not answered again).
    api.pushUpdate(telegramUpdate("private-text", { text: "m2" }));
    await eventually(() => answered(api).length === 2, "the answer to m2");
    // grammY hands one poll's updates over one at a time, each once the last one's run is recorded: m2 answered,
    // m1 came before it, and a second run of it would be recorded (and answered, in the same chat) before m2's.
    expect(answered(api)).toEqual(["echo m1", "echo m2"]);
    expect(
      await store.listRunsByStatus(["queued", "running", "ok", "error", "timeout", "aborted"]),
    ).toHaveLength(2);
    expect(b.polls.length).toBeGreaterThan(0);
    expect(a.polls.filter((at) => at > movedAt)).toEqual([]);
  });

  it("gives the lease up on 401 Unauthorized, and polls again after a pause when the token works again", async () => {
    const api = await createFakeTelegramApi();
    cleanups.push(() => api.close());
    const log: string[] = [];
    const {
      gateways: [alone],
      clock,
      store,
    } = await bots(api, 1, log);
    if (alone === undefined) throw new Error("one gateway expected");

    api.failNext("getUpdates", 1, UNAUTHORIZED);
    api.pushUpdate(telegramUpdate("private-text", { text: "before" }));
    await eventually(() => !alone.held.held, "the polling to stop");
    expect(log).toContainEqual(expect.stringMatching(/^error telegram polling stopped .*401/));
    expect(log).toContainEqual(expect.stringMatching(/^warn connection lost; giving the lease back .*401/));
    expect(await store.getLease(alone.held.lease)).toBeUndefined();

    // It waits before trying again (the clock stands still: no poll), then polls once the pause is over.
    const stoppedAt = Date.now();
    await new Promise((r) => setTimeout(r, 500));
    expect(alone.polls.filter((at) => at > stoppedAt)).toEqual([]);
    await clock.advance(30_000);
    await eventually(() => alone.held.held, "polling again");
    api.pushUpdate(telegramUpdate("private-text", { text: "after" }));
    await eventually(() => answered(api).includes("echo after"), "the answer after the pause");
    expect(answered(api)).toEqual(["echo before", "echo after"]);
  });
});
