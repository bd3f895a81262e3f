import { execFile } from "node:child_process";
import { appendFileSync, cpSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { createSqliteStore } from "@sessions/gateway";
import { afterAll, describe, expect, it } from "vitest";

/** `sessions-gateway import-openclaw` end to end, on state directories written by the real OpenClaw. */
const here = dirname(fileURLToPath(import.meta.url));
const cli = join(here, "cli.ts");
const fixtures = join(
  dirname(createRequire(import.meta.url).resolve("@sessions/testing/package.json")),
  "fixtures/openclaw",
);
const dir = mkdtempSync(join(tmpdir(), "sessions-import-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function sessionsGateway(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const { SESSIONS_GATEWAY_STORE: _store, ...env } = process.env;
    execFile(
      process.execPath,
      ["--import", "tsx", cli, ...args],
      { cwd: here, env, timeout: 120_000 },
      (error, stdout, stderr) => {
        resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr });
      },
    );
  });
}

describe("sessions-gateway import-openclaw", () => {
  it("dry-runs, imports, and changes nothing the second time (OpenClaw 2026.9.6, SQLite)", async () => {
    const state = join(fixtures, "2026.9.6", "state");
    const db = join(dir, "gateway.db");
    const dry = await sessionsGateway(["import-openclaw", state, "--db", db, "--dry-run"]);
    expect(dry).toMatchObject({ code: 0, stderr: "" });
    expect(dry.stdout).toContain("(sqlite), dry run");
    expect(dry.stdout).toContain("would import: agent:main:main (13 messages)");
    expect(dry.stdout).toContain(
      "would import 4 sessions (19 messages); already imported 0; conflicts 0; unreadable 0",
    );
    expect(existsSync(db)).toBe(false);

    const first = await sessionsGateway(["import-openclaw", state, "--db", db]);
    expect(first).toMatchObject({ code: 0, stderr: "" });
    expect(first.stdout).toContain("imported 4 sessions (19 messages); already imported 0");

    const again = await sessionsGateway(["import-openclaw", state, "--db", db, "--json"]);
    expect(again.code).toBe(0);
    const report = JSON.parse(again.stdout);
    expect(report.totals).toEqual({
      imported: 0,
      alreadyImported: 4,
      conflicts: 0,
      unreadable: 0,
      messages: 0,
    });

    const store = createSqliteStore({ path: db });
    try {
      expect(await store.countEntries()).toBe(4);
      expect(await store.countMessages("agent:main:main")).toBe(13);
      expect(await store.getEntry("agent:main:main")).toMatchObject({ label: "home", model: "fake/fake-2" });
    } finally {
      await store.close();
    }
  });

  it("imports the sessions.json + JSONL layout (OpenClaw 2026.1.30)", async () => {
    const result = await sessionsGateway([
      "import-openclaw",
      join(fixtures, "2026.1.30", "state"),
      "--db",
      join(dir, "early.db"),
    ]);
    expect(result).toMatchObject({ code: 0, stderr: "" });
    expect(result.stdout).toContain("(json)");
    expect(result.stdout).toContain("imported 4 sessions (20 messages)");
  });

  it("reports an unreadable entry, imports the rest and exits 1", async () => {
    const state = join(dir, "corrupt");
    cpSync(join(fixtures, "2026.1.30", "state"), state, { recursive: true });
    const sessions = join(state, "agents/main/sessions");
    const transcript = readdirSync(sessions).find((f) => f.endsWith(".jsonl")) as string;
    appendFileSync(join(sessions, transcript), '{"type":"message","message":{"role":"us');
    const result = await sessionsGateway(["import-openclaw", state, "--db", join(dir, "corrupt.db")]);
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(new RegExp(`skipped: .*${transcript}:\\d+: line \\d+ is not valid JSON`));
    expect(result.stdout).toMatch(
      /imported 3 sessions \(\d+ messages\); already imported 0; conflicts 0; unreadable 1/,
    );
  });

  it("refuses a directory without OpenClaw sessions and a missing argument", async () => {
    const empty = await sessionsGateway(["import-openclaw", dir, "--dry-run"]);
    expect(empty.code).toBe(2);
    expect(empty.stderr).toContain("holds no OpenClaw sessions");
    const missing = await sessionsGateway(["import-openclaw"]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("missing <stateDir>");
  });
});
