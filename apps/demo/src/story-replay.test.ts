import { readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { createReplayRunner, normalizeRecording } from "@sessions/testing";
import { demoConfig } from "@sessions/testing/demo";
import { describe, expect, it } from "vitest";
import { playRecordedStory, type RecordingLine, STORY_RECORDING } from "./story-replay.js";

/** The story's SQLite file is in a fresh temporary directory each time: transcript paths differ by it. */
const masks = [new RegExp(`${tmpdir().replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}/sessions-story-[^/"]+`, "g")];

/** Replays the kept recording of the demo story; returns the replay and what this replay recorded. */
async function replay(config?: ReturnType<typeof demoConfig>) {
  const runner = createReplayRunner(STORY_RECORDING, { masks });
  const lines: RecordingLine[] = [];
  await playRecordedStory({ runner, record: (line) => lines.push(line), config });
  return { runner, recorded: lines.map((line) => `${JSON.stringify(line)}\n`).join("") };
}

describe("the demo story, replayed from its recording", () => {
  it("makes the same turns, tool answers, announces and policy decisions: byte for byte after normalisation", async () => {
    const { runner, recorded } = await replay();
    runner.assertReplayed();
    const kept = normalizeRecording(STORY_RECORDING, { masks });
    expect(normalizeRecording({ text: recorded }, { masks })).toBe(kept);
    // What the recording holds: every tool of the story, the announce in #ops and the one the policy held back.
    for (const tool of ["sessions_spawn", "sessions_list", "sessions_history", "sessions_send"])
      expect(kept).toContain(`"tool":"${tool}"`);
    expect(kept).toContain('"kind":"announce","sessionKey":"agent:ops:console:group:ops"');
    expect(kept).toContain('"reason":"session.sendPolicy.rules[0] says \\"deny\\""');
  });

  it("fails with a readable diff when a routing rule changed (ops taken off the agent-to-agent allow list)", async () => {
    const config = demoConfig();
    const { runner } = await replay({
      ...config,
      tools: { ...config.tools, agentToAgent: { enabled: true, allow: ["main", "research"] } },
    });
    let message = "";
    try {
      runner.assertReplayed();
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toMatch(/#9 chat in agent:main:main: sessions_send answered otherwise/);
    expect(message).toMatch(/status:\n\s+recorded "ok"\n\s+now\s+"not_found"/);
    expect(message).toMatch(
      /inter_session in agent:ops:console:group:ops never happened: "schedule the v2 deploy"/,
    );
  });

  it("keeps a recording that is one JSON line per turn or delivery", () => {
    const lines = readFileSync(STORY_RECORDING, "utf8").trim().split("\n");
    expect(lines.length).toBeGreaterThan(10);
    for (const line of lines)
      expect(JSON.parse(line)).toMatchObject({ v: 1, type: expect.stringMatching(/^(turn|delivery)$/) });
  });
});
