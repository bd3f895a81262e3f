import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";

const here = import.meta.dirname;
const script = resolve(here, "..", "scripts", "check-budget.mjs");
const repo = resolve(here, "..", "..", "..");
const dirs: string[] = [];

function budget(dir?: string): Promise<{ code: number; out: string }> {
  return new Promise((done) => {
    execFile(process.execPath, [script, ...(dir ? [dir] : [])], (error, stdout, stderr) => {
      done({ code: error ? Number(error.code ?? 1) : 0, out: stdout + stderr });
    });
  });
}

function site(files: Record<string, Buffer | string>): string {
  const dir = mkdtempSync(join(tmpdir(), "sessions-budget-"));
  dirs.push(dir);
  mkdirSync(join(dir, "assets"));
  for (const [name, body] of Object.entries(files)) writeFileSync(join(dir, name), body);
  return dir;
}

afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

describe("the 150 KB gzip bundle budget", () => {
  it("passes the built console, and fails a build over budget", async () => {
    const built = await budget();
    expect(built.code).toBe(0);
    const kb = Number(/bundle budget: ([\d.]+) KB gzipped, within 150 KB/.exec(built.out)?.[1]);
    expect(kb).toBeGreaterThan(10);
    expect(kb).toBeLessThanOrEqual(150);

    // 160 KB of random bytes do not compress: over budget, whatever their names.
    const over = await budget(
      site({ "index.html": "<!doctype html>", "assets/app.js": randomBytes(160 * 1024) }),
    );
    expect(over.code).toBe(1);
    expect(over.out).toMatch(/bundle budget: 1\d\d\.\d KB gzipped, OVER 150 KB/);
    // Source maps are not downloaded by browsers: not counted.
    const maps = await budget(
      site({ "index.html": "<!doctype html>", "assets/app.js.map": randomBytes(160 * 1024) }),
    );
    expect(maps.code).toBe(0);
    expect((await budget(site({ "assets/app.js": "x" }))).code).toBe(1); // no index.html: not a build
  });

  it("runs on every build and every test run of this package, which CI runs", () => {
    const scripts = JSON.parse(readFileSync(resolve(here, "..", "package.json"), "utf8")).scripts;
    expect(scripts.build).toMatch(/vite build && node scripts\/check-budget\.mjs$/);
    expect(scripts.test).toMatch(/^node scripts\/check-budget\.mjs && /);
    const ci = readFileSync(join(repo, ".ci", "run"), "utf8");
    expect(ci).toMatch(/^step pnpm build$/m);
    expect(ci).toMatch(/^step pnpm test$/m);
    const root = JSON.parse(readFileSync(join(repo, "package.json"), "utf8")).scripts;
    expect(root.build).toBe("turbo run build");
    expect(root.test).toMatch(/turbo run test$/);
  });
});
