import { mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import chromium from "@sparticuz/chromium";
import { type Browser, chromium as playwright } from "playwright-core";

/**
 * A real Chromium: `SESSIONS_CHROMIUM` (a path) when set, e.g. a system `/usr/bin/chromium`, else the binary the
 * `@sparticuz/chromium` package ships. Only `--no-sandbox` (tests run as root in CI), none of its Lambda flags.
 */
export async function launchChromium(): Promise<Browser> {
  const executablePath = process.env.SESSIONS_CHROMIUM || (await chromium.executablePath());
  return playwright.launch({ executablePath, args: ["--no-sandbox"] });
}

const repoRoot = resolve(import.meta.dirname, "..", "..", "..");

/**
 * Where screenshots go: `docs/images/` when `SESSIONS_UPDATE_SCREENSHOTS=1` (to refresh the README's pictures),
 * else `.vitest/screenshots/` (ignored by git), so an ordinary test run leaves the work tree clean.
 */
export function screenshotPath(name: string): string {
  const dir =
    process.env.SESSIONS_UPDATE_SCREENSHOTS === "1"
      ? join(repoRoot, "docs", "images")
      : resolve(import.meta.dirname, "..", ".vitest", "screenshots");
  mkdirSync(dir, { recursive: true });
  return join(dir, name);
}
