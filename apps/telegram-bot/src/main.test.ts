import { execFile } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
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
    expect(stdout).toContain("bot → You said: hello bot (chat 424242)");
    expect(stdout).toContain("bot → You said: any news? (chat -100900800700)");
  }
});
