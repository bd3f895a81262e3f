import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { createFakeTelegramApi, type FakeTelegramApi, telegramUpdate } from "@sessions/testing";
import { eventually } from "@sessions/testing/eventually";
import { afterAll, afterEach, describe, expect, it } from "vitest";

const here = dirname(fileURLToPath(import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "sessions-stream-crash-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const GROUP = "-100200300400";
const REPLY = Array.from({ length: 40 }, (_, i) => `word${i}`).join(" ");

let api: FakeTelegramApi;
const children: ChildProcess[] = [];
afterEach(async () => {
  for (const child of children.splice(0)) child.kill("SIGKILL");
  await api?.close();
});

/** A gateway process on `db`, its JSON lines as they come. */
function gatewayProcess(db: string, mode: "stream" | "end" | "recover", update?: Record<string, unknown>) {
  const args = [join(here, "stream-crash.fixture.ts"), db, api.apiRoot, api.token, mode];
  if (update !== undefined) args.push(JSON.stringify(update));
  const child = spawn(process.execPath, ["--import", "tsx", ...args], {
    cwd: here,
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  const lines: Record<string, unknown>[] = [];
  let buffer = "";
  let stderr = "";
  child.stderr?.on("data", (chunk) => {
    stderr += String(chunk);
  });
  child.stdout?.on("data", (chunk) => {
    buffer += String(chunk);
    for (let nl = buffer.indexOf("\n"); nl !== -1; nl = buffer.indexOf("\n")) {
      lines.push(JSON.parse(buffer.slice(0, nl)) as Record<string, unknown>);
      buffer = buffer.slice(nl + 1);
    }
  });
  const exited = new Promise<void>((resolve) => child.on("exit", () => resolve()));
  return {
    lines,
    stderr: () => stderr,
    async kill() {
      child.kill("SIGKILL");
      await exited;
    },
  };
}

/** The first line a gateway process printed with `field`, once it has. */
async function linePrinted(
  lines: Record<string, unknown>[],
  field: string,
): Promise<Record<string, unknown>> {
  await eventually(() => lines.some((line) => line[field] !== undefined), `the process's "${field}" line`);
  return lines.find((line) => line[field] !== undefined) as Record<string, unknown>;
}

describe("a reply streaming into Telegram when its gateway is killed (SIGKILL, restart on the same file)", () => {
  it("mid-stream: the run ends as interrupted and the half-written message is removed, not left or doubled", async () => {
    api = await createFakeTelegramApi();
    const db = join(dir, "mid-stream.db");
    const first = gatewayProcess(db, "stream", telegramUpdate("group-text"));
    // Killed while the reply is being written: its message is up and has been edited at least once.
    await eventually(() => (api.messages(GROUP)[0]?.edits ?? 0) > 0, "the streamed message edited");
    await first.kill();
    const [partial] = api.messages(GROUP);
    expect(REPLY.startsWith(partial?.text as string)).toBe(true);
    expect(partial?.text).not.toBe(REPLY);

    const second = gatewayProcess(db, "recover");
    await eventually(() => api.messages(GROUP).length === 0, "the half-written message removed");
    const recovered = await linePrinted(second.lines, "runs");
    expect(recovered.runs).toEqual([
      { status: "error", error: "gateway restarted while the run was in progress" },
    ]);
    await second.kill();
    expect(api.callsOf("sendMessage")).toHaveLength(1);
    expect(api.callsOf("deleteMessage").map((c) => c.params.message_id)).toEqual([partial?.messageId]);
  });

  it("after the run's end, before its last edit landed: the restart edits that message into the reply, once", async () => {
    api = await createFakeTelegramApi();
    const db = join(dir, "before-final.db");
    // Every edit fails (Telegram down for edits): the stream stops, and the reply's delivery waits to be retried.
    api.failNext("editMessageText", 10_000, { error_code: 502, description: "Bad Gateway" });
    const first = gatewayProcess(db, "end", telegramUpdate("group-text"));
    await eventually(() => first.lines.some((line) => line.ended === "ok"), "the run ended");
    const failedBefore = api.callsOf("editMessageText").length;
    await eventually(
      () => api.callsOf("editMessageText").length > failedBefore,
      "the reply's edit attempted",
    );
    await first.kill();
    expect(api.messages(GROUP)).toHaveLength(1);
    expect(api.messages(GROUP)[0]?.text).not.toBe(REPLY);

    api.failNext("editMessageText", 0);
    const second = gatewayProcess(db, "recover");
    await eventually(() => api.messages(GROUP)[0]?.text === REPLY, "the reply edited in");
    expect((await linePrinted(second.lines, "runs")).runs).toEqual([{ status: "ok" }]);
    await second.kill();
    expect(api.messages(GROUP).map((m) => m.text)).toEqual([REPLY]);
    expect(api.callsOf("sendMessage")).toHaveLength(1);
  });
});
