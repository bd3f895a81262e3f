#!/usr/bin/env node
// No package's source imports itself in a circle at run time (type-only imports are exempt: they vanish from the
// build). Each package is read with its own tsconfig; an import of a file of our own that cannot be resolved fails
// the check too, so a file the tool could not follow never passes for one without cycles.
import { existsSync, readdirSync } from "node:fs";
import { join, resolve } from "node:path";
import madge from "madge";

const root = resolve(import.meta.dirname, "..");
const only = process.argv.slice(2);
const packages = readdirSync(join(root, "packages")).filter(
  (name) => existsSync(join(root, "packages", name, "src")) && (only.length === 0 || only.includes(name)),
);

let failed = false;
for (const name of packages) {
  const dir = join(root, "packages", name);
  const result = await madge(join(dir, "src"), {
    fileExtensions: ["ts", "tsx"],
    tsConfig: join(dir, "tsconfig.json"),
    detectiveOptions: { ts: { skipTypeImports: true }, tsx: { skipTypeImports: true } },
  });
  const files = Object.keys(result.obj()).length;
  const cycles = result.circular();
  const unresolved = result.warnings().skipped.filter((request) => request.startsWith("."));
  if (cycles.length > 0 || unresolved.length > 0 || files === 0) failed = true;
  console.log(
    `${name}: ${files} files, ${cycles.length} import cycles, ${unresolved.length} unresolved imports`,
  );
  for (const cycle of cycles) console.log(`  cycle: ${[...cycle, cycle[0]].join(" -> ")}`);
  for (const request of unresolved) console.log(`  unresolved: ${request}`);
}
if (failed) {
  console.error("\nImport cycles (or imports the check could not follow) in the packages above.");
  process.exit(1);
}
