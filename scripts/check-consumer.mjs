#!/usr/bin/env node
// What a newcomer does, end to end, with the packages as npm would serve them: pack every public package, install
// the tarballs into a fresh npm project (peers resolved by npm, no --legacy-peer-deps: an ERESOLVE fails here),
// type-check scripts/consumer/app.ts — plus an import of every public package — with the tsconfig `tsc --init`
// writes (strict, exactOptionalPropertyTypes, …), and run it: a gateway, a scripted and an AI SDK agent, the
// adapters, the MCP server and `npx @sessions/cli`. Once with ai@6 and once with ai@7. Run after `pnpm build`.
import { execFileSync } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import ts from "typescript";
import { pack, publicPackages, root } from "./lib/packages.mjs";

const AI_MAJORS = ["6", "7"];
const tsc = join(root, "node_modules", ".bin", "tsc");
const started = Date.now();
const elapsed = () => `${((Date.now() - started) / 1000).toFixed(0)}s`;

function run(cmd, args, cwd, timeout = 300_000) {
  try {
    return execFileSync(cmd, args, {
      cwd,
      timeout,
      stdio: ["ignore", "pipe", "pipe"],
      encoding: "utf8",
      env: { ...process.env, npm_config_update_notifier: "false", npm_config_fund: "false" },
    });
  } catch (error) {
    const out = [error.stdout, error.stderr].filter(Boolean).join("\n").trim() || error.message;
    throw new Error(`${cmd} ${args.join(" ")}\n${out.replace(/^/gm, "     ")}`);
  }
}

const work = mkdtempSync(join(tmpdir(), "sessions-consumer-"));
try {
  const packages = publicPackages();
  const tarballs = packages.map(({ dir }) => pack(dir, work));
  console.log(`packed ${packages.length} public packages (${elapsed()})`);

  const app = join(work, "app");
  mkdirSync(app);
  writeFileSync(
    join(app, "package.json"),
    JSON.stringify({ name: "newcomer", private: true, type: "module" }),
  );
  copyFileSync(join(root, "scripts", "consumer", "app.ts"), join(app, "app.ts"));
  // Every public package, so a new one is type-checked and loaded without editing this script.
  writeFileSync(
    join(app, "all.ts"),
    `${packages.map(({ manifest }, i) => `import * as p${i} from "${manifest.name}";`).join("\n")}\n` +
      `const all: Record<string, object> = { ${packages.map(({ manifest }, i) => `"${manifest.name}": p${i}`).join(", ")} };\n` +
      `for (const [name, m] of Object.entries(all)) if (Object.keys(m).length === 0) throw new Error(\`\${name} exports nothing\`);\n` +
      `console.log(\`all \${Object.keys(all).length} public packages load\`);\n`,
  );

  // The tsconfig a new project gets from `tsc --init`, with node types and an output folder added.
  run(tsc, ["--init"], app);
  const init = ts.readConfigFile(join(app, "tsconfig.json"), ts.sys.readFile).config?.compilerOptions ?? {};
  if (init.strict !== true || init.exactOptionalPropertyTypes !== true) {
    console.log(
      "note: this TypeScript's `tsc --init` does not enable strict + exactOptionalPropertyTypes; forcing them",
    );
  }
  rmSync(join(app, "tsconfig.json"));
  writeFileSync(join(app, "tsconfig.init.json"), JSON.stringify({ compilerOptions: init }, null, 2));
  writeFileSync(
    join(app, "tsconfig.json"),
    JSON.stringify({
      extends: "./tsconfig.init.json",
      compilerOptions: {
        strict: true,
        exactOptionalPropertyTypes: true,
        types: ["node"],
        rootDir: ".",
        outDir: "out",
        declaration: false,
        declarationMap: false,
      },
      files: ["all.ts", "app.ts"],
    }),
  );

  const npm = (args) => run("npm", [...args, "--no-audit", "--no-fund", "--ignore-scripts"], app);
  npm(["install", "@types/node@20", `ai@${AI_MAJORS[0]}`, ...tarballs]);
  console.log(`npm install of the tarballs with ai@${AI_MAJORS[0]} (${elapsed()})`);
  for (const [i, major] of AI_MAJORS.entries()) {
    if (i > 0) {
      npm(["install", `ai@${major}`]);
      console.log(`npm install ai@${major} (${elapsed()})`);
    }
    const ai = JSON.parse(readFileSync(join(app, "node_modules", "ai", "package.json"), "utf8")).version;
    run(tsc, ["-p", "tsconfig.json"], app);
    console.log(
      `  ok   ai@${ai}: type-checks under tsc --init defaults + exactOptionalPropertyTypes (${elapsed()})`,
    );
    const out =
      run(process.execPath, ["out/all.js"], app, 60_000) +
      run(process.execPath, ["out/app.js"], app, 120_000);
    for (const line of out.trim().split("\n")) console.log(`       ${line}`);
    console.log(`  ok   ai@${ai}: runs (${elapsed()})`);
  }
  console.log(`consumer check passed (${elapsed()})`);
} catch (error) {
  console.error(`FAIL ${error.message}`);
  process.exitCode = 1;
} finally {
  rmSync(work, { recursive: true, force: true });
}
