#!/usr/bin/env node
// Proves the public types work for projects with `exactOptionalPropertyTypes` (on in every new `tsc --init`):
// every optional property in the published declarations (`dist/**/*.d.ts` of each public package) also admits
// `undefined` (`token?: string | undefined`), so a caller can pass a value that may be undefined. Run after a build.
// `--fix` rewrites the same properties in the packages' sources (`src/**/*.ts`), then rebuild.
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import ts from "typescript";

const root = resolve(import.meta.dirname, "..");
const fix = process.argv.includes("--fix");
const only = process.argv.slice(2).filter((a) => !a.startsWith("--"));

const packages = readdirSync(join(root, "packages"), { withFileTypes: true })
  .filter((d) => d.isDirectory() && existsSync(join(root, "packages", d.name, "package.json")))
  .map((d) => join(root, "packages", d.name))
  .filter((dir) => JSON.parse(readFileSync(join(dir, "package.json"), "utf8")).private !== true)
  .filter((dir) => only.length === 0 || only.some((o) => dir.endsWith(`/${o}`)));

function files(dir, test) {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? files(join(dir, e.name), test) : test(e.name) ? [join(dir, e.name)] : [],
  );
}

function admitsUndefined(type) {
  if (type === undefined) return true; // `x?;` is any
  switch (type.kind) {
    case ts.SyntaxKind.UndefinedKeyword:
    case ts.SyntaxKind.AnyKeyword:
    case ts.SyntaxKind.UnknownKeyword:
      return true;
    case ts.SyntaxKind.UnionType:
      return type.types.some(admitsUndefined);
    case ts.SyntaxKind.ParenthesizedType:
      return admitsUndefined(type.type);
    case ts.SyntaxKind.LiteralType:
      return type.literal.kind === ts.SyntaxKind.UndefinedKeyword;
    default:
      return false;
  }
}

/** Optional property signatures (in interfaces and type literals) whose type does not admit `undefined`. */
function offenders(file, text) {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found = [];
  const visit = (node) => {
    if (ts.isPropertySignature(node) && node.questionToken !== undefined && !admitsUndefined(node.type)) {
      found.push(node);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return { source, found };
}

const problems = [];
const rewritten = [];
let fixed = 0;
for (const dir of packages) {
  const name = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")).name;
  if (fix) {
    for (const file of files(join(dir, "src"), (n) => n.endsWith(".ts") && !/\.test(-d)?\.ts$/.test(n))) {
      const text = readFileSync(file, "utf8");
      const { found } = offenders(file, text);
      if (found.length === 0) continue;
      let out = text;
      // Back to front, so earlier positions stay valid.
      for (const node of [...found].sort((a, b) => b.type.end - a.type.end)) {
        const typeText = out.slice(node.type.getStart(), node.type.end);
        const needsParens =
          ts.isFunctionTypeNode(node.type) ||
          ts.isConstructorTypeNode(node.type) ||
          ts.isConditionalTypeNode(node.type);
        const replacement = needsParens ? `(${typeText}) | undefined` : `${typeText} | undefined`;
        out = out.slice(0, node.type.getStart()) + replacement + out.slice(node.type.end);
        fixed++;
      }
      writeFileSync(file, out);
      rewritten.push(file);
    }
    continue;
  }
  const declarations = files(join(dir, "dist"), (n) => n.endsWith(".d.ts"));
  if (declarations.length === 0) {
    problems.push(`${name}: no dist/**/*.d.ts (run pnpm build first)`);
    continue;
  }
  for (const file of declarations) {
    const { source, found } = offenders(file, readFileSync(file, "utf8"));
    for (const node of found) {
      const { line } = source.getLineAndCharacterOfPosition(node.getStart());
      const owner = node.parent?.parent?.name?.text ?? node.parent?.name?.text ?? "";
      problems.push(
        `${relative(root, file)}:${line + 1}: ${owner ? `${owner}.` : ""}${node.name.getText()}?: ${node.type.getText()}`,
      );
    }
  }
}

if (fix) {
  if (rewritten.length > 0) {
    execFileSync(join(root, "node_modules", ".bin", "biome"), ["format", "--write", ...rewritten], {
      stdio: "ignore",
    });
  }
  console.log(`added \`| undefined\` to ${fixed} optional propert${fixed === 1 ? "y" : "ies"}`);
} else if (problems.length > 0) {
  console.error(
    `${problems.length} optional propert${problems.length === 1 ? "y does" : "ies do"} not admit undefined, so they break callers under exactOptionalPropertyTypes (declare \`name?: T | undefined\`; \`node scripts/check-optional-types.mjs --fix\` does it in src):`,
  );
  for (const p of problems) console.error(`  ${p}`);
  process.exit(1);
} else {
  console.log(`optional properties admit undefined in ${packages.length} public packages' declarations`);
}
