// API reference for every published package, from the TSDoc in its source: `pnpm docs:api` → docs/api/ (git-ignored).
// Entry points come from each package's `exports` map (`./dist/x.js` ↔ `src/x.ts`), so new packages and subpaths are
// picked up without editing this file. Broken `{@link}`s, referenced-but-unexported types and exported symbols
// without TSDoc (functions, classes, interfaces, type aliases, variables, enums, and the methods of exported
// interfaces) fail the run: every warning is an error.
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
  // Every exported symbol and every method of an exported interface or class. Not each property: option fields are
  // documented where they need it, and requiring it would bury the reference in "the id" / "the name" comments.
  requiredToBeDocumented: [
    "Function",
    "Class",
    "Interface",
    "TypeAlias",
    "Variable",
    "Enum",
    "Method",
    "Accessor",
  ],
  validation: {
    notExported: true,
    invalidLink: true,
    rewrittenLink: true,
    notDocumented: true,
    unusedMergeModuleWith: true,
  },
  treatValidationWarningsAsErrors: true,
};
