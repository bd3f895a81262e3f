import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { expect, it } from "vitest";

const here = dirname(fileURLToPath(import.meta.url));

it("plays a short conversation against the fake Bot API and exits 0 (--fake)", async () => {
  const cwd = mkdtempSync(join(tmpdir(), "telegram-bot-"));
  try {
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ["--import", "tsx", join(here, "main.ts"), "--fake"],
      { cwd },
    );
    expect(stdout).toContain("@sessions_test_bot is listening");
    expect(stdout).toContain("bot → You said: hello bot (chat 424242)");
    expect(stdout).toContain("bot → You said: any news? (chat -100900800700)");
  } finally {
    rmSync(cwd, { recursive: true, force: true });
  }
});
