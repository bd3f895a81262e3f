import { execFile, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { createFakeTelegramApi, telegramUpdate } from "@sessions/testing";
import { expect, it } from "vitest";

const here = dirname(fileURLToPath(import.meta.url));

it("plays a short conversation against the fake Bot API and exits 0 (--fake), every time", async () => {
  for (let round = 0; round < 2; round++) {
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ["--import", "tsx", join(here, "main.ts"), "--fake"],
      {
        cwd: join(here, ".."),
      },
    );
    expect(stdout).toContain("@sessions_test_bot is listening");
    // Streamed: a draft in the private chat, then the reply sent; in the forum topic, one message edited as it grew.
    expect(stdout).toContain("bot → You said: hello bot (chat 424242, drafted first)");
    expect(stdout).toContain("bot → You said: any news? (chat -100900800700, streamed)");
  }
});

it("exits 1 with one clear line, instead of hanging, when the Bot API rejects the token", async () => {
  const api = await createFakeTelegramApi();
  try {
    const failed = await promisify(execFile)(process.execPath, ["--import", "tsx", join(here, "main.ts")], {
      cwd: join(here, ".."),
      env: { ...process.env, TELEGRAM_BOT_TOKEN: "999:not-the-token", TELEGRAM_API_ROOT: api.apiRoot },
      timeout: 120_000,
    }).then(
      () => undefined,
      (error: { code: number | null; killed: boolean; stderr: string }) => error,
    );
    expect(failed, "the bot must not start with a rejected token").toBeDefined();
    expect(failed?.killed).toBe(false);
    expect(failed?.code).toBe(1);
    expect(failed?.stderr.trim().split("\n")).toEqual([
      expect.stringMatching(/^telegram-bot: Telegram rejected the bot token \(404 /),
    ]);
  } finally {
    await api.close();
  }
});

it("stops polling and exits 0 on SIGTERM, once the gateway holding the polling has closed", async () => {
  const api = await createFakeTelegramApi();
  const dir = await mkdtemp(join(tmpdir(), "telegram-bot-"));
  const child = spawn(process.execPath, ["--import", "tsx", join(here, "main.ts")], {
    cwd: join(here, ".."),
    env: {
      ...process.env,
      TELEGRAM_BOT_TOKEN: api.token,
      TELEGRAM_API_ROOT: api.apiRoot,
      SESSIONS_DB: join(dir, "bot.db"),
    },
  });
  // A bot still polling would keep the process alive: the kill below marks that as a failure.
  const guard = setTimeout(() => child.kill("SIGKILL"), 120_000);
  try {
    let stdout = "";
    child.stdout.on("data", (chunk) => {
      stdout += String(chunk);
    });
    const running = () => child.exitCode === null && child.signalCode === null;
    while (running() && !stdout.includes("is listening")) await new Promise((r) => setTimeout(r, 20));
    api.pushUpdate(telegramUpdate("private-text", { text: "still there?" }));
    while (running() && api.callsOf("sendMessage").length === 0) await new Promise((r) => setTimeout(r, 20));
    expect(api.callsOf("sendMessage")[0]?.params.text).toBe("You said: still there?");
    child.kill("SIGTERM");
    const [code, signal] = await once(child, "exit");
    expect({ code, signal }).toEqual({ code: 0, signal: null });
  } finally {
    clearTimeout(guard);
    child.kill("SIGKILL");
    await api.close();
    await rm(dir, { recursive: true, force: true });
  }
});
