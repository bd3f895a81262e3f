#!/usr/bin/env node
// Checks what a reader copies out of the docs: every ```ts / ```typescript block of every Markdown file in the repo
// (READMEs, docs/) is type-checked by `tsc` as a module of its own, under the options a new `tsc --init` project
// has (strict, exactOptionalPropertyTypes, noUncheckedIndexedAccess, verbatimModuleSyntax, module nodenext),
// against the workspace packages' built types (run after `pnpm build`). ```json blocks must parse. Relative links
// must point at a file or folder inside the repo.
//
// A file with an install line (`npm install …` in a sh block) must name every package its snippets import.
//
// Markers, on the line before a fence:
//   <!-- snippet: skip -->  a deliberately partial fragment: not checked (use sparingly)
//   <!-- snippet: run -->   also run it with tsx, in an empty folder (offline snippets only: fakes on 127.0.0.1)
//   <!-- snippet: test -->  a vitest test file: also run it with vitest
// Snippets may use, without declaring them, only the placeholders in PLACEHOLDERS below: the things a reader brings
// (a model, a runner); everything else they use, they import or define.
//
// Usage: node scripts/check-snippets.mjs [--keep] [files…]   (--keep leaves the generated project for inspection)
import { execFileSync } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { builtinModules } from "node:module";
import { tmpdir } from "node:os";
import { dirname, isAbsolute, join, relative, resolve, sep } from "node:path";

const root = resolve(import.meta.dirname, "..");
const SKIP_DIRS = new Set([
  "node_modules",
  "dist",
  ".git",
  ".turbo",
  ".changeset",
  "coverage",
  ".vitest",
  ".sessions",
]);
const SKIP_PATHS = new Set(["docs/api"]);
const SKIP_MARKER = /^<!--\s*snippet:\s*skip\b.*-->\s*$/;
const RUN_MARKER = /^<!--\s*snippet:\s*run\b.*-->\s*$/;
const TEST_MARKER = /^<!--\s*snippet:\s*test\b.*-->\s*$/;
const RUN_TIMEOUT_MS = 60_000;
const TS_LANGS = new Set(["ts", "typescript", "mts"]);

/** Free names a snippet may use: what the reader supplies. Keep this list short and explain it in the text. */
const PLACEHOLDERS = `
/** Your model, from any AI SDK provider (\`openai("gpt-5")\`, \`anthropic("claude-sonnet-4-5")\`, …). */
declare const model: import("ai").LanguageModel;
/** Your agent runner: \`createScriptedRunner(…)\`, \`createAiSdkRunner({ model })\` or your own. */
declare const runner: import("@sessions/gateway").AgentRunner;
`;

const INSTALL_LINE = /\b(?:npm|pnpm|yarn|bun)\s+(?:install|i|add)\b([^\n#]*)/g;
const BUILTINS = new Set(builtinModules);

/** The npm package an import specifier comes from, or undefined for relative paths and Node built-ins. */
function packageOf(specifier) {
  if (specifier.startsWith(".") || specifier.startsWith("/") || specifier.startsWith("node:"))
    return undefined;
  const parts = specifier.split("/");
  const name = specifier.startsWith("@") ? parts.slice(0, 2).join("/") : (parts[0] ?? "");
  return BUILTINS.has(name) ? undefined : name;
}

function importsOf(code) {
  const found = new Set();
  for (const m of code.matchAll(
    /\bfrom\s+["']([^"']+)["']|\bimport\s*\(\s*["']([^"']+)["']\s*\)|^\s*import\s+["']([^"']+)["']/gm,
  )) {
    const name = packageOf(m[1] ?? m[2] ?? m[3] ?? "");
    if (name) found.add(name);
  }
  return found;
}

const args = process.argv.slice(2);
const keep = args.includes("--keep");
const only = args.filter((a) => !a.startsWith("--")).map((f) => resolve(f));

function markdownFiles(dir, out = []) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    const rel = relative(root, path).split(sep).join("/");
    if (entry.isDirectory()) {
      if (!SKIP_DIRS.has(entry.name) && !SKIP_PATHS.has(rel)) markdownFiles(path, out);
    } else if (entry.name.endsWith(".md") && entry.name !== "CHANGELOG.md") {
      out.push(path);
    }
  }
  return out;
}

/** Fenced blocks with their language, the line of their first code line, and whether they opted out. */
function extractBlocks(text) {
  const lines = text.split("\n");
  const blocks = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)(`{3,}|~{3,})\s*([\w+-]*)/.exec(lines[i] ?? "");
    if (!open) continue;
    const [, indent, fence, lang] = open;
    let prev = i - 1;
    while (prev >= 0 && (lines[prev] ?? "").trim() === "") prev--;
    const skip = prev >= 0 && SKIP_MARKER.test((lines[prev] ?? "").trim());
    const run = prev >= 0 && RUN_MARKER.test((lines[prev] ?? "").trim());
    const test = prev >= 0 && TEST_MARKER.test((lines[prev] ?? "").trim());
    const body = [];
    let j = i + 1;
    for (; j < lines.length; j++) {
      const line = lines[j] ?? "";
      if (line.trimStart().startsWith(fence) && line.trim() === line.trim().replace(/[^`~]/g, "")) break;
      body.push(line.startsWith(indent) ? line.slice(indent.length) : line);
    }
    blocks.push({ lang: lang.toLowerCase(), line: i + 2, code: body.join("\n"), skip, run, test });
    i = j;
  }
  return blocks;
}

/** Relative links `[text](target)` and `<a href>` that do not resolve to a file or folder inside the repo. */
function deadLinks(file, text) {
  const found = [];
  const withoutCode = text.replace(/(^|\n)(`{3,}|~{3,})[^\n]*\n[\s\S]*?\n\s*\2[^\n]*/g, (m) =>
    m.replace(/[^\n]/g, " "),
  );
  const lines = withoutCode.split("\n");
  lines.forEach((line, index) => {
    const clean = line.replace(/`[^`]*`/g, (m) => " ".repeat(m.length));
    for (const match of clean.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)|href="([^"]+)"/g)) {
      const target = match[1] ?? match[2] ?? "";
      if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith("#")) continue;
      const path = decodeURIComponent(target.split("#")[0] ?? "");
      if (path === "") continue;
      const resolved = path.startsWith("/") ? join(root, path) : resolve(dirname(file), path);
      const rel = relative(root, resolved);
      if (rel.startsWith("..") || isAbsolute(rel)) {
        found.push({ line: index + 1, target, why: "points outside the repo" });
      } else if (!existsSync(resolved)) {
        found.push({ line: index + 1, target, why: "does not exist" });
      }
    }
  });
  return found;
}

/** A node_modules in which every workspace package and every dependency of one resolves as in a user's project. */
function linkModules(dir) {
  const nm = join(dir, "node_modules");
  const linked = new Map();
  const link = (name, target) => {
    if (linked.has(name) || !existsSync(target)) return;
    const at = join(nm, name);
    mkdirSync(dirname(at), { recursive: true });
    symlinkSync(target, at, "dir");
    linked.set(name, target);
  };
  const workspaces = [];
  for (const group of ["packages", "apps"]) {
    const base = join(root, group);
    if (!existsSync(base)) continue;
    for (const entry of readdirSync(base, { withFileTypes: true })) {
      if (!entry.isDirectory()) continue;
      const pkgDir = join(base, entry.name);
      try {
        workspaces.push({ dir: pkgDir, pkg: JSON.parse(readFileSync(join(pkgDir, "package.json"), "utf8")) });
      } catch {
        // a package being created right now: nothing to link yet
      }
    }
  }
  for (const { dir: pkgDir, pkg } of workspaces) if (pkg.name) link(pkg.name, pkgDir);
  const rootPkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
  for (const { dir: pkgDir, pkg } of [...workspaces, { dir: root, pkg: rootPkg }]) {
    const deps = { ...pkg.peerDependencies, ...pkg.devDependencies, ...pkg.dependencies };
    for (const name of Object.keys(deps)) {
      for (const candidate of [join(pkgDir, "node_modules", name), join(root, "node_modules", name)]) {
        if (existsSync(candidate)) {
          link(name, candidate);
          break;
        }
      }
    }
  }
}

const files = (only.length > 0 ? only : markdownFiles(root)).sort();
const work = mkdtempSync(join(tmpdir(), "sessions-snippets-"));
const sources = new Map(); // generated file → { md, line }
const problems = [];
const toRun = []; // generated files whose snippet is marked `<!-- snippet: run -->`
const toTest = []; // … marked `<!-- snippet: test -->`: vitest tests, run with vitest
let tsCount = 0;
let skipped = 0;

for (const file of files) {
  const text = readFileSync(file, "utf8");
  const rel = relative(root, file).split(sep).join("/");
  for (const dead of deadLinks(file, text)) {
    problems.push(`${rel}:${dead.line}: link ${dead.target} ${dead.why}`);
  }
  const blocks = extractBlocks(text);
  const installed = new Set();
  for (const block of blocks) {
    if (!["sh", "bash", "shell", "console"].includes(block.lang)) continue;
    for (const m of block.code.matchAll(INSTALL_LINE)) {
      for (const word of (m[1] ?? "").trim().split(/\s+/)) {
        if (word !== "" && !word.startsWith("-")) installed.add(word.replace(/(.)@[^/]*$/, "$1"));
      }
    }
  }
  for (const block of blocks) {
    if (block.skip) {
      skipped++;
      continue;
    }
    if (TS_LANGS.has(block.lang) && installed.size > 0) {
      for (const name of importsOf(block.code)) {
        if (!installed.has(name)) {
          problems.push(`${rel}:${block.line}: imports "${name}", which no install line of this file names`);
        }
      }
    }
    if (TS_LANGS.has(block.lang)) {
      const name = `${rel.replace(/[^\w.-]+/g, "_")}__L${block.line}${block.test ? ".test" : ""}.ts`;
      writeFileSync(join(work, name), block.code.endsWith("\n") ? block.code : `${block.code}\n`);
      sources.set(name, { md: rel, line: block.line });
      if (block.run) toRun.push(name);
      if (block.test) toTest.push(name);
      tsCount++;
    } else if (block.lang === "json") {
      try {
        JSON.parse(block.code);
      } catch (error) {
        problems.push(`${rel}:${block.line}: json block does not parse: ${error.message}`);
      }
    }
  }
}

if (tsCount > 0) {
  writeFileSync(
    join(work, "package.json"),
    JSON.stringify({ name: "snippets", private: true, type: "module" }),
  );
  writeFileSync(join(work, "placeholders.d.ts"), `export {};\ndeclare global {${PLACEHOLDERS}}\n`);
  writeFileSync(
    join(work, "tsconfig.json"),
    JSON.stringify(
      {
        compilerOptions: {
          target: "es2022",
          lib: ["es2023", "dom", "dom.iterable"],
          module: "nodenext",
          moduleResolution: "nodenext",
          moduleDetection: "force",
          types: ["node"],
          strict: true,
          exactOptionalPropertyTypes: true,
          noUncheckedIndexedAccess: true,
          verbatimModuleSyntax: true,
          isolatedModules: true,
          skipLibCheck: true,
          noEmit: true,
        },
        include: ["*.ts"],
      },
      null,
      2,
    ),
  );
  linkModules(work);
  const tsc = join(root, "node_modules", "typescript", "bin", "tsc");
  try {
    execFileSync(process.execPath, [tsc, "-p", work, "--pretty", "false"], { cwd: work, encoding: "utf8" });
  } catch (error) {
    const output = `${error.stdout ?? ""}${error.stderr ?? ""}`;
    let mapped = 0;
    for (const line of output.split("\n")) {
      const m = /^([^()]+)\((\d+),(\d+)\): (.*)$/.exec(line.trim());
      const source = m ? sources.get(m[1] ?? "") : undefined;
      if (m && source) {
        problems.push(`${source.md}:${source.line + Number(m[2]) - 1}:${m[3]}: ${m[4]}`);
        mapped++;
      } else if (line.trim() !== "" && !/^\s/.test(line)) {
        problems.push(line.trim());
      }
    }
    if (mapped === 0 && problems.length === 0) problems.push(output.trim() || String(error));
  }
}

// Snippets marked `<!-- snippet: run -->` also run (offline ones only: fakes on 127.0.0.1), each in a fresh folder.
const tsx = join(root, "node_modules", "tsx", "dist", "cli.mjs");
for (const name of toRun) {
  const source = sources.get(name);
  const cwd = mkdtempSync(join(work, "run-"));
  try {
    execFileSync(process.execPath, [tsx, join(work, name)], {
      cwd,
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
      timeout: RUN_TIMEOUT_MS,
      env: { ...process.env, NODE_ENV: "test" },
    });
  } catch (error) {
    const why = error.signal ? `did not finish within ${RUN_TIMEOUT_MS / 1000} s` : `exited ${error.status}`;
    const output = `${error.stderr ?? ""}`.trim().split("\n").slice(-8).join("\n");
    problems.push(`${source?.md}:${source?.line}: snippet ${why}\n${output}`);
  }
}

// Snippets marked `<!-- snippet: test -->` are vitest test files: one vitest run for all of them.
if (toTest.length > 0) {
  const vitest = join(root, "node_modules", "vitest", "vitest.mjs");
  try {
    execFileSync(process.execPath, [vitest, "run", "--root", work, "--reporter", "dot", ...toTest], {
      cwd: work,
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
      timeout: RUN_TIMEOUT_MS * 2,
      env: { ...process.env, CI: "true", NODE_ENV: "test", NO_COLOR: "1" },
    });
  } catch (error) {
    const output = `${error.stdout ?? ""}${error.stderr ?? ""}`;
    const failed = toTest.filter((name) => output.includes(name));
    for (const name of failed.length > 0 ? failed : toTest) {
      const source = sources.get(name);
      problems.push(`${source?.md}:${source?.line}: snippet test failed`);
    }
    problems.push(output.trim().split("\n").slice(-40).join("\n"));
  }
}

if (keep) console.log(`generated project: ${work}`);
else rmSync(work, { recursive: true, force: true });

const summary = `${files.length} Markdown files, ${tsCount} TypeScript snippets type-checked (${toRun.length} also run, ${toTest.length} run as tests), ${skipped} skipped`;
if (problems.length > 0) {
  for (const problem of problems) console.error(problem);
  console.error(`\n${problems.length} problem(s) in ${summary}.`);
  process.exit(1);
}
console.log(`snippets ok: ${summary}.`);
