#!/usr/bin/env node
// Proves every public package works for someone who runs `npm install <package>`:
// pack → publint + attw on the tarball → npm install the tarballs into an empty project →
// `import` and `require` both load → the types resolve (`tsc --noEmit`) → the browser-safe packages bundle for a
// browser and run without Node globals. Run after `pnpm build`.
import { execFile, execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { runInNewContext } from "node:vm";
import { build } from "esbuild";
import { pack, publicPackages, root } from "./lib/packages.mjs";

const bin = (name) => join(root, "node_modules", ".bin", name);
const run = (cmd, args, cwd) =>
  execFileSync(cmd, args, { cwd, stdio: ["ignore", "pipe", "pipe"], encoding: "utf8" });
const runAsync = promisify(execFile);

// Per package: a call that must work from each module system, and whether it must run in a browser.
const smoke = {
  "@sessions/core": {
    expr: 'm.parseSessionKey("agent:main:discord:group:dev").kind === "group" && m.sessionTools.sessions_list.jsonSchema.type === "object"',
    types:
      'const kind: import("@sessions/core").SessionKind = m.sessionKindOf("agent:main:main");\nexport { kind };',
    browser: true,
  },
  "@sessions/gateway-client": {
    expr: 'typeof m.createGatewayClient === "function" && m.toOpenAiTools([]).length === 0',
    types:
      'const tools: import("@sessions/gateway-client").SessionTool[] = [];\nexport const openai = m.toOpenAiTools(tools);',
    browser: true,
  },
  "@sessions/mcp": {
    expr: 'typeof m.createSessionsMcpServer === "function" && typeof m.runSessionsMcp === "function"',
    types: "export type Options = Parameters<typeof m.runSessionsMcp>[0];",
    browser: false,
  },
  "@sessions/adapter-telegram": {
    expr: 'typeof m.createTelegramAdapter === "function" && m.telegramChatId("group:-1") === "-1"',
    types: 'export type Config = import("@sessions/adapter-telegram").TelegramAdapterConfig;',
    browser: false,
  },
  "@sessions/adapter-discord": {
    expr: 'typeof m.createDiscordAdapter === "function" && m.parseDiscordTarget("user:123456789012345678").kind === "user"',
    types: 'export type Config = import("@sessions/adapter-discord").DiscordAdapterConfig;',
    browser: false,
  },
  "@sessions/adapter-slack": {
    expr: 'typeof m.createSlackAdapter === "function" && m.slackChannelId("channel:c1") === "C1"',
    types: 'export type Config = import("@sessions/adapter-slack").SlackAdapterConfig;',
    browser: false,
  },
  "@sessions/adapter-matrix": {
    expr: 'typeof m.createMatrixAdapter === "function" && m.matrixRoomId("group:!abc:example.org") === "!abc:example.org"',
    types: 'export type Config = import("@sessions/adapter-matrix").MatrixAdapterConfig;',
    browser: false,
  },
  "@sessions/console": {
    expr: 'typeof m.consoleAssetsDir === "function" && typeof m.consoleAssetsDir() === "string"',
    types: "export const dir: string = m.consoleAssetsDir();",
    browser: false,
  },
  "@sessions/testing": {
    expr: 'typeof m.createFakeTelegramApi === "function" && m.telegramUpdate("group-text").message.chat.type === "supergroup"',
    types: 'export const update: Record<string, unknown> = m.telegramUpdate("private-text");',
    browser: false,
  },
  "@sessions/cli": {
    expr: 'typeof m.runCli === "function" && m.COMMANDS.some((c) => c.name === "serve")',
    types: 'export const exit: Promise<number> = m.runCli(["--help"]);',
    browser: false,
  },
  "@sessions/store-postgres": {
    expr: 'typeof m.createPostgresStore === "function" && m.SCHEMA_VERSION >= 1',
    types: 'export type Options = import("@sessions/store-postgres").PostgresStoreOptions;',
    browser: false,
  },
  "@sessions/gateway": {
    expr: 'typeof m.createGateway === "function" && typeof m.createMemoryStore().getEntry === "function"',
    types:
      'const store: import("@sessions/gateway").SessionStore = m.createMemoryStore();\nexport { store };',
    browser: false,
  },
};

// Every public package under packages/, new ones included.
const packages = publicPackages();

const work = mkdtempSync(join(tmpdir(), "sessions-pack-"));
const failures = [];
let current = "";
/** Prints and records one check's outcome: `error` undefined when it held. */
const report = (label, error) => {
  if (error === undefined) {
    console.log(`  ok   ${label}`);
    return;
  }
  const out = [error.stdout, error.stderr, error.message].filter(Boolean).join("\n");
  console.log(`  FAIL ${label}\n${out.replace(/^/gm, "       ")}`);
  failures.push(current === "" ? label : `${current}: ${label}`);
};
const step = (label, fn) => {
  try {
    fn();
    report(label);
  } catch (error) {
    report(label, error);
  }
};
/** Runs `fn` over `items` with at most the machine's parallelism at once; the results in the order of `items`. */
async function pool(items, fn) {
  const results = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(availableParallelism(), items.length) }, worker));
  return results;
}
/** `undefined` when the command exits 0, else the error (its stdout and stderr on it). */
const outcome = (cmd, args) =>
  runAsync(cmd, args, { cwd: root, encoding: "utf8", maxBuffer: 64 * 1024 * 1024 }).then(
    () => undefined,
    (error) => error,
  );

/**
 * One `tsc --noEmit` over every package's consumer files (`<slug>.ts` imports it as ESM, `<slug>.cts` as CJS): one
 * program shares the work of checking the dependencies' declarations (skipLibCheck off) that a program per package
 * repeated. An error is charged to the package whose consumer file or installed declarations it names; an error
 * that names none fails every package of the program. Resolves with the error lines of each package that has some.
 */
async function typeCheck(consumer, group, { browser }) {
  if (group.length === 0) return new Map();
  const slug = (name) => name.replace("@sessions/", "");
  const files = [];
  for (const name of group) {
    const check = smoke[name] ?? { types: "export type T = typeof m;" };
    writeFileSync(join(consumer, `${slug(name)}.ts`), `import * as m from "${name}";\n${check.types}\n`);
    writeFileSync(join(consumer, `${slug(name)}.cts`), `import m = require("${name}");\n${check.types}\n`);
    files.push(`${slug(name)}.ts`, `${slug(name)}.cts`);
  }
  const project = browser ? "tsconfig.browser.json" : "tsconfig.node.json";
  writeFileSync(
    join(consumer, project),
    JSON.stringify({
      compilerOptions: {
        module: "nodenext",
        moduleResolution: "nodenext",
        strict: true,
        noEmit: true,
        // The browser-safe packages must type-check without Node's globals.
        types: browser ? [] : ["node"],
        skipLibCheck: false,
      },
      files,
    }),
  );
  const error = await runAsync(bin("tsc"), ["-p", project, "--pretty", "false"], {
    cwd: consumer,
    encoding: "utf8",
    maxBuffer: 64 * 1024 * 1024,
  }).then(
    () => undefined,
    (e) => e,
  );
  const errors = new Map();
  if (error === undefined) return errors;
  const lines = String(error.stdout ?? "")
    .split("\n")
    .filter((l) => l.trim() !== "");
  // Any package may own an error: a dependency's declarations fail in the program of its dependants too.
  const owner = (line) =>
    packages.find(
      ({ manifest: { name } }) =>
        line.startsWith(`${slug(name)}.ts(`) ||
        line.startsWith(`${slug(name)}.cts(`) ||
        line.includes(`node_modules/${name}/`),
    )?.manifest.name;
  const unowned = lines.filter((l) => /error TS/.test(l) && owner(l) === undefined);
  for (const line of lines) {
    const name = owner(line);
    if (name !== undefined) errors.set(name, [...(errors.get(name) ?? []), line]);
  }
  if (unowned.length > 0 || errors.size === 0) {
    const all = unowned.length > 0 ? unowned : [String(error.message)];
    for (const name of group) errors.set(name, [...(errors.get(name) ?? []), ...all]);
  }
  return errors;
}

try {
  const packed = [];
  for (const { dir, manifest } of packages) {
    current = manifest.name;
    let tarball;
    let packError;
    try {
      tarball = pack(dir, work);
    } catch (error) {
      packError = error;
    }
    packed.push({ name: manifest.name, tarball, packError });
  }
  const tarballs = packed.filter((p) => p.tarball !== undefined);
  // publint and attw read only the tarball: they run side by side.
  const linted = await pool(tarballs, async ({ tarball }) => ({
    publint: await outcome(bin("publint"), ["run", tarball, "--strict"]),
    attw: await outcome(bin("attw"), [tarball, "--profile", "node16", "--format", "table-flipped"]),
  }));
  for (const { name, packError } of packed) {
    current = name;
    console.log(name);
    report("pack (prepack guard: dist present and newer than src)", packError);
    const i = tarballs.findIndex((t) => t.name === name);
    if (i === -1) continue;
    report("publint (tarball)", linted[i].publint);
    report("attw (tarball)", linted[i].attw);
  }

  const consumer = join(work, "consumer");
  mkdirSync(consumer);
  writeFileSync(
    join(consumer, "package.json"),
    JSON.stringify({ name: "consumer", private: true, type: "module" }),
  );
  current = "";
  console.log("npm install of the tarballs into an empty project");
  const before = failures.length;
  step("npm install", () =>
    run(
      "npm",
      // Node-only packages are checked the way Node users consume them: with @types/node present.
      [
        "install",
        "--no-audit",
        "--no-fund",
        "--ignore-scripts",
        "@types/node@20",
        // grammY's own .d.ts imports node-fetch, which ships no types; its users install these.
        "@types/node-fetch@2",
        ...tarballs.map((t) => t.tarball),
      ],
      consumer,
    ),
  );

  // Without the install (a package that did not pack, say), every check below would fail the same way: stop here.
  const installed = failures.length === before ? tarballs.map((t) => t.name) : [];
  const isBrowser = (name) => smoke[name]?.browser === true;
  const typeErrors = await Promise.all([
    typeCheck(
      consumer,
      installed.filter((n) => !isBrowser(n)),
      { browser: false },
    ),
    typeCheck(consumer, installed.filter(isBrowser), { browser: true }),
  ]);
  for (const name of installed) {
    const check = smoke[name] ?? { expr: "Object.keys(m).length > 0" };
    current = name;
    console.log(`${name} as a dependency`);
    writeFileSync(
      join(consumer, "esm.mjs"),
      `import * as m from "${name}";\nif (!(${check.expr})) process.exit(1);\n`,
    );
    writeFileSync(
      join(consumer, "cjs.cjs"),
      `const m = require("${name}");\nif (!(${check.expr})) process.exit(1);\n`,
    );
    step("import", () => run(process.execPath, ["esm.mjs"], consumer));
    step("require", () => run(process.execPath, ["cjs.cjs"], consumer));
    const errors = [...new Set(typeErrors.flatMap((program) => program.get(name) ?? []))];
    report(
      "types resolve (tsc --noEmit, nodenext, ESM + CJS)",
      errors.length > 0 ? { message: errors.join("\n") } : undefined,
    );
    if (check.browser) {
      writeFileSync(
        join(consumer, "browser.mjs"),
        `import * as m from "${name}";\nglobalThis.__ok = ${check.expr};\n`,
      );
      const bundled = await build({
        entryPoints: [join(consumer, "browser.mjs")],
        bundle: true,
        platform: "browser",
        format: "iife",
        write: false,
        logLevel: "silent",
      }).catch((error) => ({ error }));
      step("bundles for a browser and runs in a bare JS context (no Node globals)", () => {
        if (bundled.error) throw bundled.error;
        const sandbox = {};
        runInNewContext(bundled.outputFiles[0].text, sandbox);
        if (sandbox.__ok !== true) throw new Error("smoke expression was false in the browser bundle");
      });
    }
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}

if (failures.length > 0) {
  console.error(`\n${failures.length} package check(s) failed: ${failures.join(", ")}`);
  process.exit(1);
}
console.log("\nall package checks passed");
