import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { runFixtureUntilKilled } from "../../test-kit.js";
import { createSqliteStore } from "../sqlite.js";

const here = dirname(fileURLToPath(import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "sessions-search-crash-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Runs the appending child until it has committed `atLeast` messages, then SIGKILLs it. */
async function runAndKill(path: string, atLeast: number): Promise<void> {
  const { signal, stderr } = await runFixtureUntilKilled(
    join(here, "search-crash-child.fixture.ts"),
    [path],
    (line, kill) => {
      if ((line.committed as number) >= atLeast) kill();
    },
  );
  if (signal !== "SIGKILL") throw new Error(`the child exited on its own; stderr: ${stderr}`);
}

describe("the search index after a kill -9 mid-indexing (restart on the same file)", () => {
  it("holds every committed message exactly once: none lost, none twice", async () => {
    const path = join(dir, "crash.db");
    await runAndKill(path, 3_000);
    const store = createSqliteStore({ path });
    try {
      const page = await store.searchSessions({ text: "alpha", limit: 20 });
      const found = new Map(page.hits.map((hit) => [hit.entry.key, hit.matchedMessages]));
      const stored = new Map<string, number>();
      for (let s = 0; s < 10; s++)
        stored.set(`agent:main:s${s}`, await store.countMessages(`agent:main:s${s}`));
      expect([...stored.values()].reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(3_000);
      expect(found).toEqual(stored);
      expect(page.truncated).toBe(false);
    } finally {
      await store.close();
    }
  });
});
