import { mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import chromium from "@sparticuz/chromium";
import { type Browser, type Page, chromium as playwright } from "playwright-core";

/**
 * A real Chromium: `SESSIONS_CHROMIUM` (a path) when set, e.g. a system `/usr/bin/chromium`, else the binary the
 * `@sparticuz/chromium` package ships. Only `--no-sandbox` (tests run as root in CI), none of its Lambda flags.
 */
export async function launchChromium(): Promise<Browser> {
  const executablePath = process.env.SESSIONS_CHROMIUM || (await chromium.executablePath());
  return playwright.launch({ executablePath, args: ["--no-sandbox"] });
}

/** A page in a fresh browser context (its own storage: another visitor), failing fast rather than at 30 s. */
export async function freshPage(
  browser: Browser,
  viewport: { width: number; height: number } = { width: 1280, height: 900 },
): Promise<Page> {
  const page = await browser.newPage({ viewport });
  page.setDefaultTimeout(10_000);
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
