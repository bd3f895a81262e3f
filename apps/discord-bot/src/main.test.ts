import { execFile } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { expect, it } from "vitest";

const here = dirname(fileURLToPath(import.meta.url));

it("plays a short conversation against the fake Discord API and exits 0 (--fake), every time", async () => {
  for (let round = 0; round < 2; round++) {
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ["--import", "tsx", join(here, "main.ts"), "--fake"],
      {
        cwd: join(here, ".."),
      },
    );
    expect(stdout).toMatch(/is listening/);
    // Streamed: each reply was posted as it began and edited into the whole reply.
    expect(stdout).toMatch(/bot → You said: hello bot \(\/channels\/\d+\/messages, streamed\)/);
    expect(stdout).toMatch(/bot → You said: any news\? \(\/channels\/\d+\/messages, streamed\)/);
  }
});
