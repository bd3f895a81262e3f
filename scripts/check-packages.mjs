#!/usr/bin/env node
// Proves every public package works for someone who runs `npm install <package>`:
// pack → publint + attw on the tarball → npm install the tarballs into an empty project →
// `import` and `require` both load → the types resolve (`tsc --noEmit`) → the browser-safe packages bundle for a
// browser and run without Node globals. Run after `pnpm build`.
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runInNewContext } from "node:vm";
import { build } from "esbuild";
import { pack, publicPackages, root } from "./lib/packages.mjs";

const bin = (name) => join(root, "node_modules", ".bin", name);
const run = (cmd, args, cwd) =>
  execFileSync(cmd, args, { cwd, stdio: ["ignore", "pipe", "pipe"], encoding: "utf8" });

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
const step = (label, fn) => {
  try {
    fn();
    console.log(`  ok   ${label}`);
  } catch (error) {
    const out = [error.stdout, error.stderr, error.message].filter(Boolean).join("\n");
    console.log(`  FAIL ${label}\n${out.replace(/^/gm, "       ")}`);
    failures.push(current === "" ? label : `${current}: ${label}`);
  }
};

try {
  const tarballs = [];
  for (const { dir, manifest } of packages) {
    current = manifest.name;
    console.log(`${manifest.name}`);
    let tarball;
    step("pack (prepack guard: dist present and newer than src)", () => {
      tarball = pack(dir, work);
    });
    if (tarball === undefined) continue;
    tarballs.push({ name: manifest.name, tarball });
    step("publint (tarball)", () => run(bin("publint"), ["run", tarball, "--strict"], root));
    step("attw (tarball)", () =>
      run(bin("attw"), [tarball, "--profile", "node16", "--format", "table-flipped"], root),
    );
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
  for (const { name } of failures.length === before ? tarballs : []) {
    const check = smoke[name] ?? { expr: "Object.keys(m).length > 0", types: "export type T = typeof m;" };
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

    writeFileSync(join(consumer, "consumer.ts"), `import * as m from "${name}";\n${check.types}\n`);
    writeFileSync(join(consumer, "consumer.cts"), `import m = require("${name}");\n${check.types}\n`);
    writeFileSync(
      join(consumer, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: {
          module: "nodenext",
          moduleResolution: "nodenext",
          strict: true,
          noEmit: true,
          types: check.browser ? [] : ["node"],
          skipLibCheck: false,
        },
        files: ["consumer.ts", "consumer.cts"],
      }),
    );
    step("types resolve (tsc --noEmit, nodenext, ESM + CJS)", () =>
      run(bin("tsc"), ["-p", "tsconfig.json"], consumer),
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
