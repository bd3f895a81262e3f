import type { ChildProcess } from "node:child_process";
import { createTelegramAdapter } from "@sessions/adapter-telegram";
import { createGateway, type Gateway } from "@sessions/gateway";
import { createFakeTelegramApi, telegramUpdate } from "@sessions/testing";
import { Bot } from "grammy";
import { afterAll, describe, expect, inject, it, onTestFailed } from "vitest";
import { createPostgresStore } from "./store.js";
import { eventually, freshSchema } from "./testing/helpers.js";
import { spawnTelegramGateway } from "./testing/spawn-gateway.js";
import { STREAMED_REPLY, streamingRunner } from "./testing/streamed-reply.js";

const url = inject("postgresUrl");
const GROUP = "-100200300400";
const children = new Set<ChildProcess>();
const cleanup: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const child of children) child.kill("SIGKILL");
  for (const step of cleanup.reverse()) await step().catch(() => undefined);
});

describe("a reply streaming into Telegram when its gateway freezes past its lease (two gateways, one Postgres)", () => {
  it("is edited on by the gateway that runs it again, into one message, and the frozen one edits nothing on waking", async () => {
    const fake = await createFakeTelegramApi();
    cleanup.push(() => fake.close());
    const schema = freshSchema("streamfail");
    // The frozen gateway: it polls the bot, runs the message and streams its reply (a word every 150 ms).
    const log: string[] = [];
    const child = spawnTelegramGateway(
      children,
      { url, schema, apiRoot: fake.apiRoot, token: fake.token },
      { NAME: "frozen", LEASE_TTL_MS: "1000", STREAM_MS: "150", STREAM_INTERVAL_MS: "100" },
    );
    child.stdout?.on("data", (chunk) => log.push(String(chunk)));
    child.stderr?.on("data", (chunk) => log.push(String(chunk)));
    onTestFailed(() => {
      process.stderr.write(`--- frozen\n${log.join("")}\n`);
    });
    await eventually(() => log.join("").includes("ready"), "the frozen gateway ready");

    // The other gateway, here: it delivers through the same bot (it does not poll), and runs the run again.
    const store = await createPostgresStore({ connectionString: url, schema });
    const bot = new Bot(fake.token, { client: { apiRoot: fake.apiRoot } });
    await bot.init();
    const other: Gateway = createGateway({
      store,
      adapters: [createTelegramAdapter({ bot, typing: false, streamIntervalMs: 100 })],
      runner: streamingRunner(10),
      cluster: { leaseTtlMs: 15_000, recoveryIntervalMs: 250 },
    });
    cleanup.push(() => other.close({ drainMs: 100 }));
    await other.ready;

    fake.pushUpdate(telegramUpdate("group-text", { text: "write a long reply" }));
    // Frozen mid-stream: its message is up, edited, and recorded on the run.
    let runId = "";
    await eventually(async () => {
      const [run] = await store.listRunsByStatus(["running"]);
      runId = run?.runId ?? "";
      return (run?.stream?.messageIds.length ?? 0) > 0 && (fake.messages(GROUP)[0]?.edits ?? 0) > 0;
    }, "the reply streaming on the frozen gateway");
    // Frozen while Telegram holds its next edit: it waits for that answer, with no request of its own on the way
    // (a request a process has begun when it is stopped still leaves when it wakes; no gateway can take it back).
    const held = fake.holdNext("editMessageText");
    await held.arrived;
    child.kill("SIGSTOP");
    held.release();
    const [streamed] = fake.messages(GROUP);
    expect(STREAMED_REPLY.startsWith(streamed?.text as string)).toBe(true);

    await eventually(async () => (await store.getRun(runId))?.status === "ok", "the run run again and ended");
    await eventually(() => fake.messages(GROUP)[0]?.text === STREAMED_REPLY, "the reply edited in");
    // The other gateway is done with the chat once the reply's delivery is recorded (its last request answered).
    await eventually(
      async () => (await store.listDeliveries({ runId })).some((d) => d.status === "delivered"),
      "the reply's delivery recorded",
    );
    expect(fake.messages(GROUP).map((m) => m.messageId)).toEqual([streamed?.messageId]);
    expect(fake.callsOf("sendMessage")).toHaveLength(1);

    // Woken: its lane is gone, so it asks Telegram for nothing more under it (by its own account, and Telegram's).
    const calls = fake.calls.length;
    const asked = log.join("").match(/call frozen/g)?.length ?? 0;
    child.kill("SIGCONT");
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(log.join("").match(/call frozen/g)?.length ?? 0).toBe(asked);
    const after = fake.calls.slice(calls).filter((c) => c.method !== "getUpdates");
    expect(after.filter((c) => c.method === "editMessageText" || c.method === "sendMessage")).toEqual([]);
    expect(fake.messages(GROUP).map((m) => m.text)).toEqual([STREAMED_REPLY]);
  });
});
