import { execFile } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { expect, it } from "vitest";

const here = dirname(fileURLToPath(import.meta.url));

it("plays a short conversation against the fake homeserver and exits 0 (--fake)", async () => {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    ["--import", "tsx", join(here, "main.ts"), "--fake"],
    {
      cwd: join(here, ".."),
    },
  );
  expect(stdout).toContain("@sessions-bot:fake.local is listening");
  // Streamed: each reply sent as it began and replaced (m.replace) by the whole reply.
  expect(stdout).toContain("bot → You said: hello bot (room !DirectAliceXy:fake.local, streamed)");
  expect(stdout).toContain("bot → You said: any news? (room !OpsTeamRoomQz:fake.local, streamed)");
});
