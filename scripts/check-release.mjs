#!/usr/bin/env node
// Proves a release does what we mean, without publishing anything: the release plan that `changeset version` would
// apply (read with changesets' own planner) versions no private app and never jumps a 0.x package to 1.0 by
// accident, and every public package refuses to be packed or published without its build (`prepack` guard).
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join, resolve } from "node:path";

const root = resolve(import.meta.dirname, "..");
const fromCli = createRequire(createRequire(import.meta.url).resolve("@changesets/cli/package.json"));
const load = (name) => {
  const mod = fromCli(name);
  return mod.default ?? mod;
};
const assembleReleasePlan = load("@changesets/assemble-release-plan");
const readChangesets = load("@changesets/read");
const { read: readConfig } = fromCli("@changesets/config");
const { getPackages } = fromCli("@manypkg/get-packages");
const { readPreState } = fromCli("@changesets/pre");

const GUARD = "node ../../scripts/guard-dist.mjs";
const failures = [];

const packages = await getPackages(root);
const config = await readConfig(root, packages);
const changesets = await readChangesets(root);
const plan = assembleReleasePlan(changesets, packages, config, await readPreState(root));
const byName = new Map(packages.packages.map((p) => [p.packageJson.name, p]));
const declaredMajor = new Set(
  changesets.flatMap((c) => c.releases.filter((r) => r.type === "major").map((r) => r.name)),
);

const accidental = [];
for (const release of plan.releases) {
  const pkg = byName.get(release.name);
  if (release.type === "none" || pkg === undefined) continue;
  if (pkg.packageJson.private === true) {
    failures.push(
      `${release.name} is private but the release plan bumps it (${release.type}): set privatePackages in .changeset/config.json`,
    );
    continue;
  }
  const [oldMajor] = release.oldVersion.split(".").map(Number);
  const [newMajor] = release.newVersion.split(".").map(Number);
  if (oldMajor === 0 && newMajor >= 1 && !declaredMajor.has(release.name)) {
    accidental.push(`${release.name} ${release.oldVersion} → ${release.newVersion}`);
  }
}
if (accidental.length > 0) {
  const peers = packages.packages
    .filter((p) => Object.keys(p.packageJson.peerDependencies ?? {}).some((d) => d.startsWith("@sessions/")))
    .map((p) => p.packageJson.name);
  failures.push(
    `no changeset asks for a major, yet the plan leaves 0.x: ${accidental.join(", ")}` +
      (peers.length > 0
        ? `. Cause: changesets bumps a package major when an @sessions/* peer dependency it names leaves its 0.x range (${peers.join(", ")}); make that a dependency or devDependency instead`
        : ""),
  );
}

for (const { dir, packageJson } of packages.packages) {
  if (packageJson.private === true) continue;
  const manifest = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
  if (manifest.scripts?.prepack !== GUARD) {
    failures.push(
      `${packageJson.name}: package.json needs "prepack": "${GUARD}" (no pack or publish without a build)`,
    );
  }
}

const planned = plan.releases.filter((r) => r.type !== "none");
console.log(
  `release plan: ${changesets.length} changeset(s); ${planned.length} package(s) to version` +
    (planned.length > 0 ? ` (${[...new Set(planned.map((r) => r.newVersion))].join(", ")})` : ""),
);
if (failures.length > 0) {
  for (const failure of failures) console.error(`  FAIL ${failure}`);
  process.exit(1);
}
console.log(
  "  ok   no private app is versioned, no accidental 1.0, every public package has the prepack guard",
);
