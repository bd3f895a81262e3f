import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SessionsError } from "@sessions/core";
import { createGateway, createSqliteStore, type Gateway, type RecordingLine } from "@sessions/gateway";
import { createReplayRunner, normalizeRecording, type ReplayRunner, readRecording } from "@sessions/testing";
import { eventually } from "@sessions/testing/eventually";
import { type OptionValues, text, usageError } from "./args.js";
import { readConfigFile } from "./serve.js";
import type { CliIo } from "./sessions.js";
import { REPLAY } from "./spec.js";

/** How many differing lines of two normalised recordings are shown. */
const SHOWN = 20;

/**
 * `sessions-gateway replay <recording>`: replays a recorded exchange on a gateway of its own and compares. The
 * recorded requests are sent again with what they were recorded with (budget, trace context, delivery target), each
 * paired with its recorded run by id. Returns the exit code: 0 identical, 1 diverged (the diff on stdout).
 */
export async function replay(file: string | undefined, options: OptionValues, io: CliIo): Promise<number> {
  if (file === undefined) throw usageError("give the recording to replay", REPLAY.name, "recording");
  if (!existsSync(file)) throw usageError(`no recording at ${file}`, REPLAY.name, "recording");
  const configPath = text(options.config);
  const config = configPath === undefined ? {} : readConfigFile(configPath).config;
  // Recordings made before requests were recorded have none: then the replay's are left out of the comparison too.
  const requests = readRecording(file).some((line) => line.type === "request");
  const runner = createReplayRunner(file);
  const lines: RecordingLine[] = [];
  const dir = mkdtempSync(join(tmpdir(), "sessions-replay-"));
  const gateway = createGateway({
    config,
    store: createSqliteStore({ path: join(dir, "replay.db") }),
    runner,
    record: (line) => lines.push(line),
  });
  const problems: string[] = [];
  try {
    await gateway.ready;
    for (const [i, request] of runner.requests.entries()) {
      const refused = await send(gateway, request);
      if (refused !== undefined)
        problems.push(
          `request #${i + 1} (${request.method} in ${request.params.sessionKey}) was refused: ${refused}`,
        );
      await idle(gateway);
    }
  } finally {
    await gateway.close();
    rmSync(dir, { recursive: true, force: true });
  }
  try {
    runner.assertReplayed();
  } catch (error) {
    problems.push((error as Error).message);
  }
  const recorded = normalizeRecording(file, { requests }).split("\n");
  const replayed = normalizeRecording(
    { text: lines.map((l) => `${JSON.stringify(l)}\n`).join("") },
    { requests },
  ).split("\n");
  const missing = recorded.filter((line) => !replayed.includes(line));
  const extra = replayed.filter((line) => !recorded.includes(line));
  if (missing.length + extra.length > 0)
    problems.push(
      [
        "The replay's recording differs from the recording (after normalisation):",
        ...missing.slice(0, SHOWN).map((line) => `- ${line}`),
        ...extra.slice(0, SHOWN).map((line) => `+ ${line}`),
      ].join("\n"),
    );
  if (problems.length > 0) {
    for (const problem of problems) io.out(problem);
    return 1;
  }
  const turns = lines.filter((l) => l.type === "turn").length;
  const deliveries = lines.filter((l) => l.type === "delivery").length;
  io.out(`replayed ${turns} turns and ${deliveries} deliveries: identical to ${file}`);
  return 0;
}

/** Sends a recorded request again; returns why the gateway refused it (a readable line), or undefined. */
async function send(
  gateway: Gateway,
  request: ReplayRunner["requests"][number],
): Promise<string | undefined> {
  try {
    await (request.method === "agent" ? gateway.agent(request.params) : gateway.chat.send(request.params));
    return undefined;
  } catch (error) {
    if (!SessionsError.isInstance(error)) throw error;
    return `${error.code}${error.field === undefined ? "" : ` (${error.field})`}: ${error.message}`;
  }
}

/**
 * Until the gateway has nothing left to do, as its store records it: no run queued or running, no sub-agent running
 * or announcing, no `sessions_send` follow-up pending (a send run's end is written before its reply-back runs) and
 * no delivery queued. Never a quiet moment: each step is recorded before the one before it is cleared.
 */
async function idle(gateway: Gateway): Promise<void> {
  await eventually(
    async () => {
      const runs = await gateway.store.listRunsByStatus(["queued", "running"]);
      const queued = await gateway.store.listQueuedDeliveries(1);
      const children = await gateway.store.listSubagents({ statuses: ["running", "announcing"] });
      const followUps = await gateway.store.listPendingFollowUps();
      return runs.length + queued.length + children.length + followUps.length === 0;
    },
    "the replayed exchange to settle",
    { intervalMs: 10 },
  );
}
