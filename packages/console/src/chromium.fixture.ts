import { execFileSync } from "node:child_process";
import { mkdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import chromium from "@sparticuz/chromium";
import { type Browser, type Page, chromium as playwright } from "playwright-core";

/**
 * A real Chromium: `SESSIONS_CHROMIUM` (a path) when set, e.g. a system `/usr/bin/chromium`, else the binary the
 * `@sparticuz/chromium` package ships. Only `--no-sandbox` (tests run as root in CI), none of its Lambda flags.
 */
export async function launchChromium(): Promise<Browser> {
  const executablePath = process.env.SESSIONS_CHROMIUM || (await shippedChromium());
  // A bound against a hang, far above a launch on a busy machine (Playwright's own is 30 s).
  return playwright.launch({ executablePath, args: ["--no-sandbox"], timeout: 120_000 });
}

const LOCK = join(tmpdir(), "sessions-chromium.lock");
/** A lock older than this was left by a process that died holding it. */
const STALE_LOCK_MS = 5 * 60_000;

/**
 * The package's binary, unpacked once for every test process of the machine. `@sparticuz/chromium` unpacks it to
 * a fixed path and trusts any file there: test files unpacking it side by side (or one killed while unpacking)
 * leave a truncated binary that crashes at launch, on every later run. Here one process at a time unpacks it (a
 * lock directory), and a binary that cannot even print its version is unpacked again.
 */
async function shippedChromium(): Promise<string> {
  for (;;) {
    try {
      mkdirSync(LOCK);
      break;
    } catch {
      try {
        if (Date.now() - statSync(LOCK).mtimeMs > STALE_LOCK_MS)
          rmSync(LOCK, { recursive: true, force: true });
      } catch {
        // Released meanwhile.
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
  try {
    let path = await chromium.executablePath();
    if (!runs(path)) {
      rmSync(path, { force: true });
      path = await chromium.executablePath();
      if (!runs(path)) throw new Error(`the Chromium unpacked at ${path} does not start`);
    }
    return path;
  } finally {
    rmSync(LOCK, { recursive: true, force: true });
  }
}

function runs(path: string): boolean {
  try {
    execFileSync(path, ["--headless", "--no-sandbox", "--version"], { stdio: "ignore", timeout: 60_000 });
    return true;
  } catch {
    return false;
  }
}

/**
 * A page in a fresh browser context (its own storage: another visitor). Every wait, click, fill and navigation
 * of it waits for its condition up to 120 s: a bound against a hang, never a budget a busy machine misses.
 */
export async function freshPage(
  browser: Browser,
  viewport: { width: number; height: number } = { width: 1280, height: 900 },
): Promise<Page> {
  const page = await browser.newPage({ viewport });
  page.setDefaultTimeout(120_000);
  return page;
}

const repoRoot = resolve(import.meta.dirname, "..", "..", "..");

/** The screenshots the browser tests write: the pictures in the README and docs/console.md. */
export const SCREENSHOTS = ["console.png", "console-outbox.png", "console-phone.png", "webchat.png"] as const;
export type ScreenshotName = (typeof SCREENSHOTS)[number];

/**
 * Where screenshots go: `docs/images/` when `SESSIONS_UPDATE_SCREENSHOTS=1` (to refresh the README's pictures),
 * else `.vitest/screenshots/` (ignored by git), so an ordinary test run leaves the work tree clean.
 */
export function screenshotPath(name: ScreenshotName): string {
  const dir =
    process.env.SESSIONS_UPDATE_SCREENSHOTS === "1"
      ? join(repoRoot, "docs", "images")
      : resolve(import.meta.dirname, "..", ".vitest", "screenshots");
  mkdirSync(dir, { recursive: true });
  return join(dir, name);
}
