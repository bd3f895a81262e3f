#!/usr/bin/env node
// Folds every package's vitest JSON report (`.vitest/report.json`, see vitest.shared.ts) into one closing line.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";

const root = resolve(import.meta.dirname, "..");
let passed = 0;
let failed = 0;
let skipped = 0;
let reports = 0;
const missing = [];
for (const group of ["packages", "apps"]) {
  const base = join(root, group);
  if (!existsSync(base)) continue;
  for (const name of readdirSync(base)) {
    const file = join(base, name, ".vitest", "report.json");
    if (!existsSync(file)) {
      // A package with a test script must leave a report: it is turbo's declared output of `test` (no report means
      // turbo warned "no output files found", or the package's tests never ran).
      const manifest = join(base, name, "package.json");
      if (existsSync(manifest) && JSON.parse(readFileSync(manifest, "utf8")).scripts?.test !== undefined)
        missing.push(`${group}/${name}`);
      continue;
    }
    const report = JSON.parse(readFileSync(file, "utf8"));
    reports++;
    passed += report.numPassedTests ?? 0;
    failed += report.numFailedTests ?? 0;
    skipped += (report.numPendingTests ?? 0) + (report.numTodoTests ?? 0);
  }
}
if (reports === 0) {
  console.error("no test reports found: did the tests run?");
  process.exit(1);
}
console.log(`tests: ${passed} passed, ${failed} failed, ${skipped} skipped`);
if (missing.length > 0) {
  console.error(
    `no .vitest/report.json from ${missing.join(", ")}: use defineSessionsVitestConfig (vitest.shared.ts) in its vitest.config.ts`,
  );
}
process.exit(failed > 0 || passed === 0 || missing.length > 0 ? 1 : 0);
