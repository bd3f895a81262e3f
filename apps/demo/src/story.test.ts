import { describe, expect, it } from "vitest";
import { playStory } from "./story.js";

describe("the demo story", () => {
  it("shows every tool end to end on a real SQLite file", async () => {
    const lines: string[] = [];
    const result = await playStory((line) => lines.push(line));
    const output = lines.join("\n");

    const announce = result.deliveries.find((d) => d.kind === "subagent_announce");
    expect(announce).toMatchObject({ to: "@alice" });
    expect(announce?.text).toMatch(/^Status: success\n\nResult:\n- Every chat is a session/);
    expect(announce?.text).toContain("Stats: runtime");

    expect(result.deliveries.find((d) => d.kind === "announce")).toMatchObject({
      to: "#ops",
      text: "📦 Deploy v2 scheduled for 14:00 UTC (requested by the main assistant).",
    });
    expect(
      result.deliveries.some((d) => d.text === 'Ops replied: "Deploy of v2 is scheduled for 14:00 UTC."'),
    ).toBe(true);
    expect(result.suppressed).toEqual([
      { sessionKey: "agent:ops:console:group:lobby", reason: 'session.sendPolicy.rules[0] says "deny"' },
    ]);

    const child = result.sessions.find((s) => s.key.startsWith("agent:research:subagent:"));
    expect(child).toMatchObject({ spawnedBy: "agent:main:main", label: "research" });
    for (const tool of ["sessions_spawn", "sessions_list", "sessions_history", "sessions_send"])
      expect(output).toContain(tool);
    expect(output).toContain("ping-pong main → ops");
    expect(output).toContain(`└─ ${child?.key}`);
  });
});

describe("the demo with --serve", () => {
  it("keeps its gateway running with the console until told to stop", async () => {
    let stop: () => void = () => {};
    const until = new Promise<void>((resolve) => {
      stop = resolve;
    });
    let page: { status: number; text: string } | undefined;
    const lines: string[] = [];
    await playStory((line) => lines.push(line), {
      serve: {
        port: 0,
        until,
        onConsole: (url) => {
          void fetch(url)
            .then(async (res) => {
              page = { status: res.status, text: await res.text() };
            })
            .finally(stop);
        },
      },
    });
    expect(page?.status).toBe(200);
    expect(page?.text).toContain("<title>sessions console</title>");
    expect(lines.join("\n")).toMatch(/console\S*\s+http:\/\/127\.0\.0\.1:\d+\//);
  });
});
