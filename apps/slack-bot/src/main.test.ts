import { execFile } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { expect, it } from "vitest";

const here = dirname(fileURLToPath(import.meta.url));

it("plays a short conversation against the fake Slack in Socket Mode and exits 0 (--fake)", async () => {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    ["--import", "tsx", join(here, "main.ts"), "--fake"],
    { cwd: join(here, "..") },
  );
  expect(stdout).toContain("Slack app is listening (Socket Mode)");
  // Streamed: each reply posted as it began and updated into the whole reply.
  expect(stdout).toContain("bot → You said: hello bot (D0ALICEDM, streamed)");
  expect(stdout).toContain("bot → You said: any news? (C0GENERAL, streamed)");
});
