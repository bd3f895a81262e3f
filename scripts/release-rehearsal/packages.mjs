// The release rehearsal's packages, versions and fresh projects (scripts/release-rehearsal.mjs).
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

import { npmrc } from "./registry.mjs";

// ---------------------------------------------------------------------------------------------------------------
// The clone and its packages.
// ---------------------------------------------------------------------------------------------------------------

/** What the READMEs' install lines add besides our packages (`npm install @sessions/x discord.js`). */
export function readmeExtras(packages) {
  const extras = new Set();
  for (const { dir } of packages) {
    const file = join(dir, "README.md");
    if (!existsSync(file)) continue;
    const line = readFileSync(file, "utf8")
      .split("\n")
      .find((l) => l.startsWith("npm install "));
    for (const word of (line ?? "").replace(/#.*/, "").trim().split(/\s+/).slice(2)) {
      if (!word.startsWith("-") && !word.startsWith("@sessions/")) extras.add(word);
    }
  }
  return [...extras];
}

/** Pending changesets (every .changeset/*.md but its README). */
export function pendingChangesets(clone) {
  const dir = join(clone, ".changeset");
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => f.endsWith(".md") && f.toLowerCase() !== "readme.md")
    .map((f) => join(dir, f));
}

export function parseVersion(version) {
  const match = /^(\d+)\.(\d+)\.(\d+)$/.exec(version);
  if (match === null)
    throw new Error(`version ${version} is not X.Y.Z: the rehearsal does not handle prereleases`);
  return match.slice(1).map(Number);
}

export function nextPatch(version) {
  const [major, minor, patch] = parseVersion(version);
  return `${major}.${minor}.${patch + 1}`;
}

/** Whether `^from` admits `to` (semver: the leftmost non-zero part is fixed, so ^0.0.z admits only 0.0.z). */
export function caretAdmits(from, to) {
  const [a, b, c] = parseVersion(from);
  const [x, y, z] = parseVersion(to);
  if (a > 0) return x === a && (y > b || (y === b && z >= c));
  if (b > 0) return x === 0 && y === b && z >= c;
  return x === 0 && y === 0 && z === c;
}

/** Which part of `pnpm release` failed, from its output. */
export function failedPart(output, rootName) {
  if (output.includes("🦋")) return "`changeset publish` failed (see which packages above)";
  const escaped = rootName.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
  const parts = [...output.matchAll(new RegExp(`^> ${escaped}@\\S* (build|check:packages) `, "gm"))];
  const last = parts.at(-1)?.[1];
  if (last === "check:packages") return "`pnpm check:packages` failed, before anything was published";
  return "`pnpm build` failed, before anything was published";
}

// ---------------------------------------------------------------------------------------------------------------
// Fresh projects.
// ---------------------------------------------------------------------------------------------------------------
export function freshProject(dir, name, registryUrl, extra = {}) {
  mkdirSync(dir, { recursive: true });
  const manifest = { name, version: "1.0.0", private: true, type: "module", ...extra };
  writeFileSync(join(dir, "package.json"), `${JSON.stringify(manifest, null, 2)}\n`);
  writeFileSync(join(dir, ".npmrc"), npmrc(registryUrl));
}

/** Versions of `name` anywhere in an `npm ls --json --all` tree, with the path to each. */
export function versionsInTree(node, name, path = []) {
  const found = [];
  for (const [dep, child] of Object.entries(node.dependencies ?? {})) {
    if (dep === name) found.push({ path: [...path, dep].join(" > "), version: child.version });
    found.push(...versionsInTree(child, name, [...path, dep]));
  }
  return found;
}
