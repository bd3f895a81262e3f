#!/usr/bin/env node
// The root README's package table names every published package, and names nothing that is not one: each
// `packages/<dir>` whose package.json is not private has a row `[`<name>`](packages/<dir>)`, every row that
// links into packages/ names the package that is there, and a row's last cell (the version column) is that
// package's package.json version. Run by `pnpm check:packages` (CI).
//
// `--write` first sets each such row's version cell to its package's version (after `changeset version`), then checks.
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const root = new URL("..", import.meta.url).pathname;
let readme = readFileSync(join(root, "README.md"), "utf8");
const problems = [];

const published = new Map();
for (const dir of readdirSync(join(root, "packages"))) {
  const file = join(root, "packages", dir, "package.json");
  if (!existsSync(file)) continue;
  const pkg = JSON.parse(readFileSync(file, "utf8"));
  if (pkg.private !== true) published.set(dir, { name: pkg.name, version: pkg.version });
}

// Rows of the table: | [`name`](packages/dir) | … | version |
const ROW = /^(\|\s*\[`([^`]+)`\]\(packages\/([^)/]+)\/?\)\s*\|(?:.*\|)?)\s*([^|]*?)\s*\|\s*$/gm;
if (process.argv.includes("--write")) {
  const updated = readme.replace(ROW, (row, head, name, dir) => {
    const pkg = published.get(dir);
    return pkg !== undefined && pkg.name === name ? `${head} ${pkg.version} |` : row;
  });
  if (updated !== readme) writeFileSync(join(root, "README.md"), updated);
  readme = updated;
}
const rows = [...readme.matchAll(ROW)].map((m) => ({ name: m[2], dir: m[3], version: m[4] }));
for (const [dir, { name }] of published) {
  if (!rows.some((row) => row.dir === dir && row.name === name))
    problems.push(`README.md: no row for ${name} (packages/${dir}) in the package table`);
}
for (const row of rows) {
  const actual = published.get(row.dir);
  if (actual === undefined)
    problems.push(
      `README.md: the row for ${row.name} links packages/${row.dir}, which is not a published package`,
    );
  else if (actual.name !== row.name)
    problems.push(`README.md: packages/${row.dir} is ${actual.name}, the row says ${row.name}`);
  else if (actual.version !== row.version)
    problems.push(
      `README.md: the row for ${row.name} says version ${row.version || "(empty)"}, packages/${row.dir}/package.json says ${actual.version}`,
    );
}

if (problems.length > 0) {
  for (const problem of problems) console.error(problem);
  console.error("Keep the README's package table in step with packages/*.");
  process.exit(1);
}
console.log(`README package table: ${published.size} published packages, each with its row and version.`);
