// API reference for every published package, from the TSDoc in its source: `pnpm docs:api` → docs/api/ (git-ignored).
// Entry points come from each package's `exports` map (`./dist/x.js` ↔ `src/x.ts`), so new packages and subpaths are
// picked up without editing this file. Broken `{@link}`s and referenced-but-unexported types fail the run.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

const packages = readdirSync("packages", { withFileTypes: true })
  .filter((d) => d.isDirectory() && existsSync(join("packages", d.name, "package.json")))
  .map((d) => ({
    dir: join("packages", d.name),
    pkg: JSON.parse(readFileSync(join("packages", d.name, "package.json"), "utf8")),
  }))
  .filter(({ pkg }) => !pkg.private);

const entryPoints = [];
const paths = {};
for (const { dir, pkg } of packages) {
  for (const [subpath, target] of Object.entries(pkg.exports ?? {})) {
    const dist = typeof target === "string" ? target : (target.import?.default ?? target.default);
    const match = typeof dist === "string" ? /^\.\/dist\/(.+)\.js$/.exec(dist) : null;
    if (!match) continue;
    const src = join(dir, "src", `${match[1]}.ts`);
    if (!existsSync(src)) continue;
    entryPoints.push(src);
    paths[`${pkg.name}${subpath.slice(1)}`] = [`./${src}`];
  }
}

/** @type {Partial<import("typedoc").TypeDocOptions>} */
export default {
  name: "sessions API reference",
  entryPoints,
  tsconfig: "tsconfig.typedoc.json",
  compilerOptions: { paths },
  plugin: ["./scripts/typedoc-package-names.mjs"],
  out: "docs/api",
  readme: "none",
  disableSources: true,
  skipErrorChecking: true,
  excludePrivate: true,
  excludeInternal: true,
  sort: ["kind", "alphabetical"],
  packagesRequiringDocumentation: packages.map(({ pkg }) => pkg.name),
  requiredToBeDocumented: ["Function", "Class", "Interface", "TypeAlias", "Variable", "Enum"],
  validation: {
    notExported: true,
    invalidLink: true,
    rewrittenLink: true,
    notDocumented: false,
    unusedMergeModuleWith: true,
  },
  treatValidationWarningsAsErrors: true,
};
