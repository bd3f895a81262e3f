import { spawn } from "node:child_process";
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { playStory } from "./story.js";

describe("the demo story", () => {
  it("shows every tool end to end on a real SQLite file", async () => {
    const lines: string[] = [];
    const result = await playStory((line) => lines.push(line));
    // biome-ignore lint/suspicious/noControlCharactersInRegex: the colours of the demo's output
    const output = lines.join("\n").replace(/\u001b\[[0-9;]*m/g, "");

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

    const children = result.sessions.filter((s) => s.key.startsWith("agent:research:subagent:"));
    expect(children.map((c) => [c.spawnedBy, c.label]).sort()).toEqual([
      ["agent:main:main", "research"],
      ["agent:main:main", "watcher"],
    ]);
    for (const tool of ["sessions_spawn", "sessions_list", "sessions_history", "sessions_send"])
      expect(output).toContain(tool);
    expect(output).toContain("ping-pong main → ops");
    expect(output).toMatch(/announce for agent:ops:console:group:lobby suppressed: session\.sendPolicy/);
    // The watcher works in a thread of its own, where its announce goes.
    expect(output).toContain('created thread #1 "watcher"');
    expect(result.deliveries.filter((d) => d.threadId === "1").map((d) => d.kind)).toContain(
      "subagent_announce",
    );
    for (const child of children) expect(output).toMatch(new RegExp(`[├└]─ ${child.key} "${child.label}"`));
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

describe("npm run demo -- --serve", () => {
  it("prints the console's address, serves it, and stops on Ctrl-C", async () => {
    const main = fileURLToPath(new URL("./main.ts", import.meta.url));
    const child = spawn(process.execPath, ["--import", "tsx", main, "--serve", "--port", "0"], {
      cwd: dirname(main),
      env: { ...process.env, NO_COLOR: "1" },
    });
    try {
      let log = "";
      const url = await new Promise<string>((resolve, reject) => {
        child.stdout.on("data", (chunk) => {
          log += String(chunk);
          const match = /console\s+(http:\/\/127\.0\.0\.1:\d+\/)/.exec(log);
          if (match?.[1]) resolve(match[1]);
        });
        child.on("exit", (code) => reject(new Error(`the demo exited (${code}) before serving:\n${log}`)));
      });
      const page = await fetch(url);
      expect(page.status).toBe(200);
      expect(await page.text()).toContain("<title>sessions console</title>");
      const exited = new Promise<number | null>((resolve) => child.on("exit", resolve));
      child.kill("SIGINT");
      expect(await exited).toBe(0);
    } finally {
      child.kill("SIGKILL");
    }
  });
});
