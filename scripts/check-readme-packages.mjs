#!/usr/bin/env node
// The root README's package table names every published package, and names nothing that is not one: each
// `packages/<dir>` whose package.json is not private has a row `[`<name>`](packages/<dir>)`, and every row that
// links into packages/ names the package that is there. Run by `pnpm check:packages` (CI).
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

const root = new URL("..", import.meta.url).pathname;
const readme = readFileSync(join(root, "README.md"), "utf8");
const problems = [];

const published = new Map();
for (const dir of readdirSync(join(root, "packages"))) {
  const file = join(root, "packages", dir, "package.json");
  if (!existsSync(file)) continue;
  const pkg = JSON.parse(readFileSync(file, "utf8"));
  if (pkg.private !== true) published.set(dir, pkg.name);
}

// Rows of the table: | [`name`](packages/dir) | … |
const rows = [...readme.matchAll(/^\|\s*\[`([^`]+)`\]\(packages\/([^)/]+)\/?\)\s*\|/gm)].map((m) => ({
  name: m[1],
  dir: m[2],
}));
for (const [dir, name] of published) {
  if (!rows.some((row) => row.dir === dir && row.name === name))
    problems.push(`README.md: no row for ${name} (packages/${dir}) in the package table`);
}
for (const row of rows) {
  const actual = published.get(row.dir);
  if (actual === undefined)
    problems.push(
      `README.md: the row for ${row.name} links packages/${row.dir}, which is not a published package`,
    );
  else if (actual !== row.name)
    problems.push(`README.md: packages/${row.dir} is ${actual}, the row says ${row.name}`);
}

if (problems.length > 0) {
  for (const problem of problems) console.error(problem);
  console.error("Keep the README's package table in step with packages/*.");
  process.exit(1);
}
console.log(`README package table: ${published.size} published packages, each with its row.`);
