// The release rehearsal's processes (scripts/release-rehearsal.mjs).
import { spawn } from "node:child_process";
import { appendFileSync } from "node:fs";

// ---------------------------------------------------------------------------------------------------------------
// Processes: every command runs in its own process group, so stopping it stops what it started.
// ---------------------------------------------------------------------------------------------------------------
export const running = new Set();
/** Set once the rehearsal is interrupted (Ctrl-C): commands not yet started are not started. */
export const state = { interrupted: false };

export function signalGroup(child, signal) {
  try {
    process.kill(-child.pid, signal);
  } catch {
    // Already gone.
  }
}

export async function stopProcess(child, graceMs = 5000) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((done) => child.once("exit", done));
  signalGroup(child, "SIGTERM");
  const timer = setTimeout(() => signalGroup(child, "SIGKILL"), graceMs);
  await exited;
  clearTimeout(timer);
}

/** The environment of every command: quiet, non-interactive, and no registry but the ones named here. */
export function commandEnv(extra) {
  // A registry or provenance setting inherited (pnpm exports npm_config_* to scripts) would beat the .npmrc files.
  const inherited = Object.entries(process.env).filter(
    ([key]) => !/^npm_config_(.*registry|provenance)$/i.test(key),
  );
  return {
    ...Object.fromEntries(inherited),
    CI: "true",
    TURBO_TELEMETRY_DISABLED: "1",
    TURBO_DAEMON: "false",
    NO_COLOR: "1",
    FORCE_COLOR: "0",
    npm_config_update_notifier: "false",
    npm_config_fund: "false",
    npm_config_audit: "false",
    npm_config_provenance: "false",
    ...extra,
  };
}

/** Runs a command, its output appended to `log`; resolves with the exit code and the output. */
export function run(command, args, { cwd, log, env = {}, timeoutMs = 30 * 60_000 }) {
  return new Promise((done) => {
    if (state.interrupted) return done({ code: 130, output: "(interrupted)" });
    appendFileSync(log, `\n$ cd ${cwd} && ${[command, ...args].join(" ")}\n`);
    const chunks = [];
    const child = spawn(command, args, {
      cwd,
      env: commandEnv(env),
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
    });
    running.add(child);
    const take = (chunk) => {
      chunks.push(chunk);
      appendFileSync(log, chunk);
    };
    child.stdout.on("data", take);
    child.stderr.on("data", take);
    const timer = setTimeout(() => {
      take(`\n(no exit within ${timeoutMs / 1000} s: stopped)\n`);
      signalGroup(child, "SIGKILL");
    }, timeoutMs);
    let settled = false;
    const settle = (code) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      running.delete(child);
      done({ code, output: Buffer.concat(chunks.map((c) => Buffer.from(c))).toString() });
    };
    child.on("error", (error) => {
      take(`${error.message}\n`);
      settle(127);
    });
    child.on("close", (code, signal) => settle(code ?? (signal ? 128 : 1)));
  });
}

/** The last `lines` non-empty lines of a command's output, indented for the console. */
export function tail(output, lines = 25) {
  return output
    .split("\n")
    .filter((line) => line.trim() !== "")
    .slice(-lines)
    .map((line) => `      ${line}`)
    .join("\n");
}

export async function must(promise, what) {
  const { code, output } = await promise;
  if (code !== 0) throw new Error(`${what} exited ${code}\n${tail(output)}`);
  return output;
}
