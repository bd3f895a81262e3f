// Test helpers: `serve` as a child process on a free port. Not part of the published bundle.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const cli = join(here, "cli.ts");
const children: ChildProcess[] = [];
const dirs: string[] = [];

/** Starts `serve` on a free port; resolves once it listens. `log()` is everything it printed so far. */
export function serve(args: string[]): Promise<{ log: () => string; http: string }> {
  const dir = mkdtempSync(join(tmpdir(), "sessions-cli-serve-"));
  dirs.push(dir);
  const child = spawn(
    process.execPath,
    ["--import", "tsx", cli, "serve", "--port", "0", "--db", join(dir, "g.db"), ...args],
    { cwd: here, env: { ...process.env, SESSIONS_GATEWAY_TOKEN: "", SESSIONS_GATEWAY_STORE: "" } },
  );
  children.push(child);
  let log = "";
  return new Promise((resolve, reject) => {
    child.stdout?.on("data", (chunk) => {
      log += String(chunk);
      const match = /listening ws:\/\/(\S+)/.exec(log);
      if (match) resolve({ log: () => log, http: `http://${match[1]}/` });
    });
    child.on("exit", (code) => reject(new Error(`serve exited ${code}`)));
  });
}

/** Kills what `serve` started and removes its folders (call after each test). */
export function stopServed(): void {
  for (const child of children.splice(0)) child.kill("SIGKILL");
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
}
