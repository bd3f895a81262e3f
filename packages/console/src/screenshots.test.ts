import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { SCREENSHOTS } from "./chromium.fixture.js";

const repo = resolve(import.meta.dirname, "..", "..", "..");

/** The `docs/images/*.png` a markdown file shows. */
function pictures(file: string): string[] {
  const text = readFileSync(join(repo, file), "utf8");
  return [...text.matchAll(/(?:\]\(|src=")(?:\.\.\/)?(?:docs\/)?images\/([\w-]+\.png)/g)].map(
    (m) => m[1] as string,
  );
}

describe("the README's screenshots", () => {
  it("are exactly the ones the browser tests take (SESSIONS_UPDATE_SCREENSHOTS=1 writes them to docs/images)", () => {
    const readme = pictures("README.md");
    const guide = pictures("docs/console.md");
    expect(readme).toEqual(expect.arrayContaining(["console.png", "webchat.png"]));
    expect([...new Set([...readme, ...guide])].sort()).toEqual([...SCREENSHOTS].sort());
    // Each is taken by a journey.
    const journeys = readdirSync(import.meta.dirname)
      .filter((f) => f.endsWith(".test.ts"))
      .map((f) => readFileSync(join(import.meta.dirname, f), "utf8"))
      .join("\n");
    for (const name of SCREENSHOTS) expect(journeys).toContain(`screenshotPath("${name}")`);
    for (const name of SCREENSHOTS) {
      const file = join(repo, "docs", "images", name);
      expect(existsSync(file), name).toBe(true);
      // A PNG, not a placeholder.
      const png = readFileSync(file);
      expect(png.subarray(1, 4).toString("latin1")).toBe("PNG");
      expect(png.length).toBeGreaterThan(10_000);
    }
  });
});
