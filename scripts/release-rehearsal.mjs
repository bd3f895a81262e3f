#!/usr/bin/env node
// Rehearses a release the way a user meets it: the packages published by the project's own `pnpm release` to a real
// npm registry, then installed by name and caret range in fresh projects outside the workspace.
//
//   pnpm release:rehearse                                        # HEAD, in a temporary folder
//   node scripts/release-rehearsal.mjs --ref main~3 --keep --json rehearsal.json
//
// 1. Clones the committed HEAD (or --ref) into a work folder and installs the locked dependencies
//    (scripts/ensure-deps.sh). Uncommitted changes are not rehearsed: commit first. The work tree is never touched.
// 2. Starts Verdaccio 6.8.0 on 127.0.0.1 (a free port), its storage in the work folder. It serves @sessions/* only
//    from what was published to it (no uplink: the real npm may hold that scope) and proxies every other package
//    from registry.npmjs.org. Verdaccio is installed once into ~/.cache/sessions-release-rehearsal, never into the
//    workspace (6.10 and later need Node 22).
// 3. Runs `pnpm release` (build, check:packages, changeset publish) in the clone against it.
// 4. Installs every public package by caret range (`@sessions/core@^X.Y.Z`), plus what each README's install line
//    adds (discord.js, grammy, …), in a fresh npm project and a fresh pnpm project, and runs one snippet per
//    package (SNIPPETS below) in each; `tsc --noEmit` checks a typed use in the npm project.
// 5. The patch: a patch changeset for @sessions/core, `pnpm version-packages`, every public package at the next
//    patch (fixed group) with its CHANGELOG entry, `pnpm release` again; the npm project takes the patch through its
//    caret ranges (`npm update`), dependants included (`npm ls @sessions/core`), and the snippets run again.
//
// Everything binds 127.0.0.1 and every process started here is stopped at the end (and on Ctrl-C). Takes several
// minutes: better-sqlite3 builds from source. The logs stay in the work folder unless everything held; --keep
// keeps the whole folder. Exits 1 when any step or snippet failed, 0 when all held.
import { spawnSync } from "node:child_process";
import {
  appendFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  unlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { cloneDefaults, cloneOption } from "./lib/clone-options.mjs";
import { publicPackages } from "./lib/packages.mjs";
import {
  caretAdmits,
  failedPart,
  freshProject,
  nextPatch,
  pendingChangesets,
  readmeExtras,
  versionsInTree,
} from "./release-rehearsal/packages.mjs";
import {
  commandEnv,
  must,
  run,
  running,
  signalGroup,
  state,
  stopProcess,
  tail,
} from "./release-rehearsal/processes.mjs";
import {
  addUser,
  checkPublished,
  installVerdaccio,
  npmrc,
  packument,
  startRegistry,
  VERDACCIO,
} from "./release-rehearsal/registry.mjs";
import { SNIPPETS, snippetSource, TYPED_USE } from "./release-rehearsal/snippets.mjs";

const root = resolve(import.meta.dirname, "..");
const TYPESCRIPT = "5.9.3";
const PATCH_NOTE = "Release rehearsal: a patch of @sessions/core, to prove caret ranges take it.";
const usage =
  "usage: node scripts/release-rehearsal.mjs [--ref <git ref>] [--dir <work folder>] [--json <file>] [--keep] [--help]";

function parseArgs(argv) {
  const opts = cloneDefaults();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const value = () => {
      const next = argv[++i];
      if (next === undefined || next.startsWith("--")) fail(`${arg} needs a value`);
      return next;
    };
    if (cloneOption(opts, arg, value)) continue;
    if (arg === "--help" || arg === "-h") {
      console.log(usage);
      process.exit(0);
    } else fail(`unknown option ${arg}`);
  }
  return opts;
}

function fail(message) {
  console.error(`release-rehearsal: ${message}\n${usage}`);
  process.exit(2);
}

// ---------------------------------------------------------------------------------------------------------------
// The rehearsal: one context every phase receives, the phases in order, and the summary.
// ---------------------------------------------------------------------------------------------------------------
const minutes = (ms) => (ms < 60_000 ? `${Math.round(ms / 1000)} s` : `${(ms / 60_000).toFixed(1)} min`);
class Stop extends Error {}

/** The commit `ref` names, or a usage error. */
function resolveRef(ref) {
  const result = spawnSync("git", ["rev-parse", "--verify", "--quiet", `${ref}^{commit}`], {
    cwd: root,
    encoding: "utf8",
  });
  const sha = result.stdout.trim();
  if (result.status !== 0 || sha === "") fail(`${ref} is not a commit of ${root}`);
  const dirty = spawnSync("git", ["status", "--porcelain", "--untracked-files=no"], {
    cwd: root,
    encoding: "utf8",
  }).stdout.trim();
  if (dirty && ref === "HEAD") {
    console.error(
      "release-rehearsal: the work tree has uncommitted changes; the rehearsal uses the commit only",
    );
  }
  return sha;
}

/** What every phase receives: the folders, the log, the registry once started, and what was found so far. */
function createContext(opts, sha) {
  const work = opts.dir ?? mkdtempSync(join(tmpdir(), `sessions-release-rehearsal-${sha.slice(0, 8)}-`));
  mkdirSync(work, { recursive: true });
  const ctx = {
    opts,
    sha,
    work,
    createdWork: opts.dir === undefined,
    log: join(work, "rehearsal.log"),
    clone: join(work, "clone"),
    npmProject: join(work, "npm-project"),
    pnpmProject: join(work, "pnpm-project"),
    registryDir: join(work, "registry"),
    registry: undefined,
    steps: [],
    notes: [],
    packages: new Map(), // name → { round1, round2, npm, pnpm, patched }
  };
  writeFileSync(ctx.log, "");
  for (const dir of [ctx.clone, ctx.npmProject, ctx.pnpmProject, ctx.registryDir]) {
    rmSync(dir, { recursive: true, force: true });
  }
  return ctx;
}

/** Runs one step and records it; resolves with whether it held. A failed step stops the rehearsal if `fatal`. */
async function step(ctx, what, fn, { fatal = true } = {}) {
  const t0 = Date.now();
  console.log(`› ${what}`);
  try {
    const detail = (await fn()) ?? "";
    ctx.steps.push({ what, ok: true, ms: Date.now() - t0, detail });
    console.log(`  ok   ${what} (${minutes(Date.now() - t0)})${detail ? `: ${detail}` : ""}`);
    return true;
  } catch (error) {
    const message = state.interrupted ? "interrupted" : String(error?.message ?? error);
    ctx.steps.push({ what, ok: false, ms: Date.now() - t0, detail: message.split("\n")[0], output: message });
    console.log(`  FAIL ${what} (${minutes(Date.now() - t0)}): ${message}`);
    if (fatal || state.interrupted) throw new Stop(what);
    return false;
  }
}

/** Runs every public package's snippet in `project`; `column` names where each result goes. */
async function runSnippets(ctx, project, column, list) {
  mkdirSync(join(project, "snippets"), { recursive: true });
  let failed = 0;
  for (const { manifest } of list) {
    const result = await runSnippet(ctx, project, manifest.name);
    ctx.packages.get(manifest.name)[column] = result;
    console.log(`  ${result.ok ? "ok  " : "FAIL"} [${column}] ${manifest.name}: ${result.detail}`);
    if (!result.ok && result.output) console.log(tail(result.output, 30));
    if (!result.ok) failed++;
  }
  if (failed > 0) throw new Error(`${failed} of ${list.length} snippets failed`);
  return `${list.length} snippets ran`;
}

async function runSnippet(ctx, project, name) {
  const snippet = SNIPPETS[name];
  if (snippet === undefined) {
    return { ok: false, detail: "no snippet: add one to SNIPPETS in scripts/release-rehearsal.mjs" };
  }
  const file = join(project, "snippets", `${name.split("/").pop()}.mjs`);
  writeFileSync(file, snippetSource(name, snippet));
  const { code, output } = await run(process.execPath, [file], {
    cwd: project,
    log: ctx.log,
    timeoutMs: 180_000,
  });
  const lines = output.split("\n").filter((l) => l.trim() !== "");
  if (code === 0) return { ok: true, detail: lines.at(-1) ?? "" };
  return { ok: false, detail: lines.find((l) => /error/i.test(l)) ?? `exit ${code}`, output };
}

async function cloneAndInstall(ctx) {
  const { clone, log, sha } = ctx;
  await step(ctx, "clone and install the locked dependencies", async () => {
    await must(run("git", ["clone", "--quiet", root, clone], { cwd: ctx.work, log }), "git clone");
    await must(run("git", ["checkout", "--quiet", "--detach", sha], { cwd: clone, log }), "git checkout");
    await must(run("bash", ["scripts/ensure-deps.sh"], { cwd: clone, log }), "scripts/ensure-deps.sh");
    return `${sha.slice(0, 10)}, pnpm install --frozen-lockfile`;
  });
  ctx.rootName = JSON.parse(readFileSync(join(clone, "package.json"), "utf8")).name;
  for (const { manifest } of publicPackages(clone))
    ctx.packages.set(manifest.name, { round1: manifest.version });
  const pending = pendingChangesets(clone);
  if (pending.length > 0) {
    ctx.notes.push(
      `${pending.length} pending changeset(s) at ${sha.slice(0, 10)}: round 1 publishes the versions package.json ` +
        "has; the release workflow would version them first. Round 2 sets them aside so that its bump is the " +
        "rehearsal's patch alone.",
    );
  }
}

async function startRehearsalRegistry(ctx) {
  await step(ctx, `start Verdaccio ${VERDACCIO} on 127.0.0.1`, async () => {
    const bin = await installVerdaccio(ctx.log);
    ctx.registry = await startRegistry(bin, ctx.registryDir, join(ctx.work, "verdaccio.log"));
    const { url } = ctx.registry;
    const token = await addUser(url);
    const names = [...ctx.packages.keys()];
    const docs = await Promise.all(names.map((name) => packument(url, name)));
    const leaked = names.filter((_, i) => docs[i] !== undefined);
    if (leaked.length > 0) throw new Error(`the registry serves ${leaked.join(", ")} before any publish`);
    // The clone's own .npmrc carries the token; nothing outside the work folder learns it.
    appendFileSync(join(ctx.clone, ".npmrc"), `\n${npmrc(url, token)}`);
    return `${url} (storage in ${ctx.registryDir}); @sessions/* not proxied, a user added`;
  });
}

/** `pnpm release` in the clone, then the registry must hold every public package at its version. */
async function publish(ctx, round) {
  const list = publicPackages(ctx.clone);
  await step(ctx, `round ${round}: pnpm release`, async () => {
    // npm_config_registry: changesets reads it to choose where `npm info` looks and where it publishes.
    const env = { npm_config_registry: ctx.registry.url };
    const { code, output } = await run("pnpm", ["release"], { cwd: ctx.clone, log: ctx.log, env });
    if (code !== 0)
      throw new Error(`${failedPart(output, ctx.rootName)} (exit ${code})\n${tail(output, 40)}`);
    await checkPublished(ctx.registry.url, list);
    for (const { manifest } of list) console.log(`       published ${manifest.name}@${manifest.version}`);
    return `${list.length} packages published at ${[...new Set(list.map(({ manifest }) => manifest.version))].join(", ")}`;
  });
  return list;
}

const caret = (list) => list.map(({ manifest }) => `${manifest.name}@^${manifest.version}`);

/** The npm project: install by caret range, the snippets, `tsc --noEmit`. Resolves with whether it installed. */
async function installWithNpm(ctx, list) {
  const { npmProject, log, registry } = ctx;
  const extras = readmeExtras(list);
  const installed = await step(
    ctx,
    "npm install by caret range in a fresh project",
    async () => {
      freshProject(npmProject, "rehearsal-npm", registry.url);
      const args = ["install", `--registry=${registry.url}`, "--prefer-online", ...caret(list), ...extras];
      const tools = [`typescript@${TYPESCRIPT}`, "@types/node@20"];
      await must(run("npm", [...args, ...tools], { cwd: npmProject, log }), "npm install");
      return `${caret(list)[0]} … and ${extras.join(", ")}`;
    },
    { fatal: false },
  );
  if (!installed) return false;
  await step(ctx, "snippets in the npm project", () => runSnippets(ctx, npmProject, "npm", list), {
    fatal: false,
  });
  await step(ctx, "tsc --noEmit on a typed use (npm project)", () => typeCheck(ctx), { fatal: false });
  return true;
}

async function typeCheck(ctx) {
  const { npmProject, log } = ctx;
  writeFileSync(join(npmProject, "typed.ts"), TYPED_USE);
  const compilerOptions = {
    target: "es2022",
    module: "nodenext",
    moduleResolution: "nodenext",
    strict: true,
    exactOptionalPropertyTypes: true,
    noUncheckedIndexedAccess: true,
    skipLibCheck: true,
    noEmit: true,
    types: ["node"],
  };
  const tsconfig = { compilerOptions, files: ["typed.ts"] };
  writeFileSync(join(npmProject, "tsconfig.json"), `${JSON.stringify(tsconfig, null, 2)}\n`);
  // `--`: without it npx takes `-p` for its own --package.
  await must(run("npx", ["--no", "--", "tsc", "-p", "tsconfig.json"], { cwd: npmProject, log }), "tsc");
  return `typescript@${TYPESCRIPT}, strict + exactOptionalPropertyTypes, nodenext`;
}

/** The pnpm project: `pnpm add` by caret range, then the snippets. */
async function installWithPnpm(ctx, list) {
  const { pnpmProject, log, registry } = ctx;
  const added = await step(
    ctx,
    "pnpm add by caret range in a fresh project",
    async () => {
      // pnpm builds no dependency unless allowed: better-sqlite3 (native) and esbuild.
      freshProject(pnpmProject, "rehearsal-pnpm", registry.url, {
        pnpm: { onlyBuiltDependencies: ["better-sqlite3", "esbuild"] },
      });
      // A metadata cache of its own: an earlier rehearsal on the same port published other tarballs.
      appendFileSync(join(pnpmProject, ".npmrc"), `cache-dir=${join(ctx.work, "pnpm-cache")}\n`);
      const args = ["add", `--registry=${registry.url}`, ...caret(list), ...readmeExtras(list)];
      await must(run("pnpm", args, { cwd: pnpmProject, log }), "pnpm add");
      return "the same packages";
    },
    { fatal: false },
  );
  if (!added) return;
  await step(ctx, "snippets in the pnpm project", () => runSnippets(ctx, pnpmProject, "pnpm", list), {
    fatal: false,
  });
}

/** A patch changeset for @sessions/core and `pnpm version-packages`: every public package at the next patch. */
async function versionPatch(ctx, from) {
  const { clone, log } = ctx;
  const patch = nextPatch(from);
  await step(ctx, "round 2: a patch changeset for @sessions/core, pnpm version-packages", async () => {
    for (const file of pendingChangesets(clone)) unlinkSync(file);
    const changeset = `---\n"@sessions/core": patch\n---\n\n${PATCH_NOTE}\n`;
    writeFileSync(join(clone, ".changeset", "rehearsal-patch.md"), changeset);
    await must(run("pnpm", ["version-packages"], { cwd: clone, log }), "pnpm version-packages");
    const versioned = publicPackages(clone);
    for (const { manifest } of versioned) ctx.packages.get(manifest.name).round2 = manifest.version;
    const wrong = versioned.filter(({ manifest }) => manifest.version !== patch);
    if (wrong.length > 0) {
      const found = wrong.map(({ manifest }) => `${manifest.name} is ${manifest.version}`).join(", ");
      throw new Error(`the fixed group should put every public package at ${patch}: ${found}`);
    }
    const changelog = join(clone, "packages", "core", "CHANGELOG.md");
    const text = existsSync(changelog) ? readFileSync(changelog, "utf8") : "";
    if (!text.includes(`## ${patch}`) || !text.includes(PATCH_NOTE)) {
      throw new Error(`packages/core/CHANGELOG.md has no "## ${patch}" entry with the changeset's text`);
    }
    return `every public package at ${patch}; packages/core/CHANGELOG.md has the entry`;
  });
  return patch;
}

/** The npm project takes the patch by its caret ranges; dependants resolve @sessions/core to it too. */
async function takePatchWithNpm(ctx, from, patch, list) {
  const held = await step(
    ctx,
    "the npm project takes the patch by its caret ranges",
    () => updateNpm(ctx, from, patch, list),
    {
      fatal: false,
    },
  );
  if (!held) return;
  await step(
    ctx,
    "snippets in the npm project after the patch",
    () => runSnippets(ctx, ctx.npmProject, "patched", list),
    {
      fatal: false,
    },
  );
}

async function updateNpm(ctx, from, patch, list) {
  const { npmProject, log, registry } = ctx;
  const names = list.map(({ manifest }) => manifest.name);
  const flags = [`--registry=${registry.url}`, "--prefer-online"];
  if (caretAdmits(from, patch)) {
    await must(run("npm", ["update", ...flags, ...names], { cwd: npmProject, log }), "npm update");
  } else {
    ctx.notes.push(
      `^${from} does not admit ${patch} (semver fixes the leftmost non-zero part, so ^0.0.z is exactly 0.0.z): ` +
        `\`npm update\` cannot take this patch; installed ^${patch} instead. From 0.1.0 on, caret ranges take patches.`,
    );
    await must(run("npm", ["install", ...flags, ...caret(list)], { cwd: npmProject, log }), "npm install");
  }
  const stale = names
    .map((name) => {
      const file = join(npmProject, "node_modules", ...name.split("/"), "package.json");
      return { name, version: JSON.parse(readFileSync(file, "utf8")).version };
    })
    .filter(({ version }) => version !== patch);
  if (stale.length > 0)
    throw new Error(`still installed: ${stale.map((s) => `${s.name}@${s.version}`).join(", ")}`);
  // stdout alone: npm ls exits non-zero on unrelated peer warnings, and its JSON is what counts.
  const ls = spawnSync("npm", ["ls", "@sessions/core", "--all", "--json"], {
    cwd: npmProject,
    env: commandEnv({}),
    encoding: "utf8",
  });
  appendFileSync(log, `\n$ npm ls @sessions/core --all --json\n${ls.stdout}${ls.stderr}`);
  const found = versionsInTree(JSON.parse(ls.stdout || "{}"), "@sessions/core");
  if (found.length === 0 || found.some(({ version }) => version !== patch)) {
    const paths = found.map((f) => `${f.path}@${f.version}`).join(", ");
    throw new Error(`npm ls @sessions/core: ${paths || "not found"}`);
  }
  const how = caretAdmits(from, patch) ? "npm update" : `npm install ^${patch}`;
  return `${how}: all ${names.length} at ${patch}; @sessions/core is ${patch} on all ${found.length} paths of npm ls (dependants included)`;
}

async function rehearse(ctx) {
  await cloneAndInstall(ctx);
  await startRehearsalRegistry(ctx);
  const round1 = await publish(ctx, 1);
  const npmInstalled = await installWithNpm(ctx, round1);
  await installWithPnpm(ctx, round1);
  const from = ctx.packages.get("@sessions/core")?.round1;
  if (from === undefined) throw new Error("the clone has no public @sessions/core");
  const patch = await versionPatch(ctx, from);
  const round2 = await publish(ctx, 2);
  if (npmInstalled) await takePatchWithNpm(ctx, from, patch, round2);
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const started = Date.now();
  const ctx = createContext(opts, resolveRef(opts.ref));
  console.log(
    `release-rehearsal: ${opts.ref} (${ctx.sha.slice(0, 10)}) in ${ctx.work}; every command's output: ${ctx.log}`,
  );
  let ok = false;
  try {
    await rehearse(ctx);
    ok = ctx.steps.every((s) => s.ok);
  } catch (error) {
    if (!(error instanceof Stop)) {
      const detail = String(error?.stack ?? error);
      ctx.steps.push({
        what: "(the rehearsal itself)",
        ok: false,
        ms: 0,
        detail: detail.split("\n")[0],
        output: detail,
      });
      console.log(`  FAIL ${detail}`);
    }
  } finally {
    await cleanup(ctx, ok);
  }
  const ms = Date.now() - started;
  printSummary(ctx, ok, ms);
  if (opts.json) {
    const { sha, work, notes, steps, packages } = ctx;
    const summary = {
      ref: opts.ref,
      sha,
      work,
      ok,
      ms,
      notes,
      steps,
      packages: Object.fromEntries(packages),
    };
    writeFileSync(opts.json, `${JSON.stringify(summary, null, 2)}\n`);
  }
  process.exit(state.interrupted ? 130 : ok ? 0 : 1);
}

/** Stops Verdaccio and whatever still runs, then removes the work folder (keeps the logs when something failed). */
async function cleanup(ctx, ok) {
  await Promise.all([...running].map((child) => stopProcess(child)));
  if (ctx.registry !== undefined) await stopProcess(ctx.registry.child);
  if (ctx.opts.keep) return;
  if (ok && ctx.createdWork) rmSync(ctx.work, { recursive: true, force: true });
  else {
    for (const dir of ["clone", "npm-project", "pnpm-project", "registry", "pnpm-cache"]) {
      rmSync(join(ctx.work, dir), { recursive: true, force: true });
    }
  }
}

function printSummary({ opts, sha, work, steps, packages, notes }, ok, ms) {
  const cell = (result) => (result === undefined ? "—" : result.ok ? "ok" : "FAILED");
  console.log(
    `\nrelease rehearsal of ${opts.ref} (${sha.slice(0, 10)}): ${ok ? "all held" : "FAILED"}, ${minutes(ms)}`,
  );
  console.log("\n| step | result | took | detail |");
  console.log("| --- | --- | --- | --- |");
  for (const s of steps) {
    console.log(
      `| ${s.what} | ${s.ok ? "ok" : "FAILED"} | ${minutes(s.ms)} | ${s.detail.replaceAll("|", "\\|")} |`,
    );
  }
  if (packages.size > 0) {
    console.log("\n| package | round 1 | round 2 | npm snippet | pnpm snippet | npm after the patch |");
    console.log("| --- | --- | --- | --- | --- | --- |");
    for (const [name, p] of packages) {
      console.log(
        `| ${name} | ${p.round1 ?? "—"} | ${p.round2 ?? "—"} | ${cell(p.npm)} | ${cell(p.pnpm)} | ${cell(p.patched)} |`,
      );
    }
  }
  for (const note of notes) console.log(`\nnote: ${note}`);
  if (!ok || opts.keep) console.log(`\n${opts.keep ? "kept" : "logs"} in ${work}`);
}

for (const signal of ["SIGINT", "SIGTERM"]) {
  process.on(signal, () => {
    if (state.interrupted) return;
    state.interrupted = true;
    console.error(`\nrelease-rehearsal: ${signal}: stopping every process it started`);
    for (const child of running) signalGroup(child, "SIGTERM");
  });
}

if (process.argv[1] && resolve(process.argv[1]) === resolve(import.meta.filename)) await main();
