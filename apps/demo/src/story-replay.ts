import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { SessionsConfigInput } from "@sessions/core";
import {
  type AgentRunner,
  createGateway,
  createSqliteStore,
  type RecordingLine,
  type RecordingSink,
} from "@sessions/gateway";
import { demoConfig, playDemoStory } from "@sessions/testing/demo";
import { createConsoleChannel } from "./console-channel.js";

/** The demo story's recording, kept in the repo and replayed by the tests (`pnpm --filter demo record-story`). */
export const STORY_RECORDING = new URL("../fixtures/story.recording.jsonl", import.meta.url).pathname;

/**
 * Plays the whole demo story on a fresh SQLite file with `runner`, recording to `record` (a file, or a function per
 * line), with the demo's config or `config`. Resolves when the story has settled.
 */
export async function playRecordedStory(options: {
  runner: AgentRunner;
  record: RecordingSink;
  config?: SessionsConfigInput | undefined;
}): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "sessions-story-"));
  const gateway = createGateway({
    store: createSqliteStore({ path: join(dir, "sessions.db") }),
    runner: options.runner,
    adapters: [createConsoleChannel(() => {})],
    config: options.config ?? demoConfig(),
    record: options.record,
  });
  try {
    await gateway.ready;
    await playDemoStory(gateway);
  } finally {
    await gateway.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

export type { RecordingLine };
