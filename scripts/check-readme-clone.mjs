#!/usr/bin/env node
// Runs the README's "Run a gateway server → From a clone" commands, as written, in a fresh copy of the repository
// (the files git would clone — tracked and new, nothing ignored, so no dist/ — with the installed node_modules
// linked in): the build line must build everything the CLI needs, `serve` must come up, the client commands must
// exit 0. A build line that skips the CLI's dependencies fails here with ERR_MODULE_NOT_FOUND, as it did for users.
import { execFileSync, spawn } from "node:child_process";
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { root } from "./lib/packages.mjs";

const started = Date.now();
const elapsed = () => `${((Date.now() - started) / 1000).toFixed(0)}s`;

function readmeCommands() {
  const readme = readFileSync(join(root, "README.md"), "utf8");
  const section = readme.split(/\n## /).find((s) => s.startsWith("Run a gateway server"));
  if (section === undefined) throw new Error('README.md has no "## Run a gateway server" section');
  const block = [...section.matchAll(/```sh\n([\s\S]*?)```/g)]
    .map((m) => m[1] ?? "")
    .find((b) => /pnpm (--filter|-F) /.test(b));
  if (block === undefined)
    throw new Error('"Run a gateway server" has no sh block that builds with pnpm --filter');
  return block
    .split("\n")
    .map((line) => line.replace(/\s+#.*$/, "").trim())
    .filter((line) => line !== "" && !line.startsWith("#"));
}

/** The files a fresh clone has (tracked, plus new files not ignored), with node_modules linked from this checkout. */
function freshCopy(into) {
  const files = execFileSync("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], {
    cwd: root,
    encoding: "utf8",
  })
    .split("\0")
    .filter((f) => f !== "" && existsSync(join(root, f)));
  for (const file of files) {
    mkdirSync(dirname(join(into, file)), { recursive: true });
    copyFileSync(join(root, file), join(into, file));
  }
  symlinkSync(join(root, "node_modules"), join(into, "node_modules"));
  // Workspace packages' node_modules hold only links (relative, so they resolve inside the copy).
  for (const group of ["packages", "apps"]) {
    for (const name of readdirSync(join(root, group))) {
      const modules = join(root, group, name, "node_modules");
      if (existsSync(modules) && existsSync(join(into, group, name)))
        execFileSync("cp", ["-a", modules, join(into, group, name, "node_modules")]);
    }
  }
  return files.length;
}

function startServe(command, cwd, env) {
  const child = spawn("bash", ["-c", `${command} --port 0`], { cwd, env, detached: true, stdio: "pipe" });
  let log = "";
  const ready = new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no "listening" within 60 s:\n${log}`)), 60_000);
    const read = (chunk) => {
      log += String(chunk);
      const match = /listening (ws:\/\/\S+)/.exec(log);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    };
    child.stdout.on("data", read);
    child.stderr.on("data", read);
    child.on("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`serve exited ${code}:\n${log}`));
    });
  });
  const stop = () => {
    try {
      process.kill(-child.pid, "SIGKILL");
    } catch {}
  };
  return { ready, stop };
}

const work = mkdtempSync(join(tmpdir(), "sessions-readme-"));
let serving;
try {
  const commands = readmeCommands();
  console.log(`fresh copy: ${freshCopy(work)} files (${elapsed()})`);
  const env = { ...process.env };
  for (const command of commands) {
    if (/ serve( |$)/.test(command)) {
      serving = startServe(command, work, env);
      env.SESSIONS_GATEWAY_URL = await serving.ready;
    } else {
      try {
        execFileSync("bash", ["-c", command], {
          cwd: work,
          env,
          stdio: ["ignore", "pipe", "pipe"],
          timeout: 600_000,
        });
      } catch (error) {
        throw new Error(`${command}\n${[error.stdout, error.stderr].filter(Boolean).join("\n").trim()}`);
      }
    }
    console.log(`  ok   ${command} (${elapsed()})`);
  }
  console.log(`README "From a clone" commands work in a fresh copy (${elapsed()})`);
} catch (error) {
  console.error(`FAIL ${error.message}`);
  process.exitCode = 1;
} finally {
  serving?.stop();
  rmSync(work, { recursive: true, force: true });
}
