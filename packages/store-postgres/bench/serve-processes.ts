/**
 * The processes of serve.bench.ts: `sessions-gateway serve` (apps/gateway/bin.js, the CLI as shipped: its built
 * dist) on a schema of the bench's Postgres, and graphile-worker's bench/graphile.mjs; each started, awaited until it
 * printed its ready line, and stopped. The bench keeps every child in a set and stops them all in a `finally`.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
/**
 * The CLI the gateways run: this checkout's, or another's (`SERVE_CLI=/path/to/checkout/apps/gateway/bin.js`, built)
 * to measure a base commit beside this one on the same machine.
 */
const CLI = process.env.SERVE_CLI ?? join(here, "..", "..", "..", "apps", "gateway", "bin.js");
const ECHO_RUNNER = join(here, "echo-runner.mjs");

/** A child that printed its ready line: its process, its output so far (stdout and stderr) and what matched. */
export interface BenchChild {
  name: string;
  proc: ChildProcess;
  /** stdout, as it comes. */
  stdout: string[];
  /** stderr lines (serve's warnings and errors, graphile-worker's). */
  stderr: string[];
  ready: RegExpExecArray;
  exited: Promise<void>;
}

/** Starts `command` and resolves once its stdout matches `ready`; rejects if it exits first. */
export function startChild(
  children: Set<ChildProcess>,
  name: string,
  command: readonly string[],
  env: Record<string, string>,
  ready: RegExp,
): Promise<BenchChild> {
  return new Promise((resolve, reject) => {
    const [exec, ...args] = command as [string, ...string[]];
    const proc = spawn(exec, args, { env: { ...process.env, ...env }, stdio: ["pipe", "pipe", "pipe"] });
    children.add(proc);
    const stdout: string[] = [];
    const stderr: string[] = [];
    let partial = "";
    const exited = new Promise<void>((done) => proc.once("exit", () => done()));
    proc.stdout?.on("data", (chunk) => {
      stdout.push(String(chunk));
      const match = ready.exec(stdout.join(""));
      if (match) resolve({ name, proc, stdout, stderr, ready: match, exited });
    });
    proc.stderr?.on("data", (chunk) => {
      const lines = (partial + String(chunk)).split("\n");
      partial = lines.pop() ?? "";
      stderr.push(...lines.filter((line) => line.trim() !== ""));
    });
    proc.once("exit", (code, signal) =>
      reject(
        new Error(
          `${name} exited (${code ?? signal}) before it was ready: ${[...stdout, ...stderr].join("")}`,
        ),
      ),
    );
  });
}

/** SIGTERM (serve drains, then exits), SIGKILL after `graceMs`; resolves once the process is gone. */
export async function stopChild(child: BenchChild, graceMs = 15_000): Promise<void> {
  if (child.proc.exitCode !== null || child.proc.signalCode !== null) return;
  child.proc.kill("SIGTERM");
  const timer = setTimeout(() => child.proc.kill("SIGKILL"), graceMs);
  await child.exited;
  clearTimeout(timer);
}

/** Kills whatever is left (after a failure): the bench's `finally`. */
export async function killAll(children: Set<ChildProcess>): Promise<void> {
  const gone = [...children]
    .filter((proc) => proc.exitCode === null && proc.signalCode === null)
    .map((proc) => {
      const exited = new Promise((resolve) => proc.once("exit", resolve));
      proc.kill("SIGKILL");
      return exited;
    });
  await Promise.all(gone);
}

/** A `sessions-gateway serve` child and its WebSocket URL. */
export interface ServeProcess extends BenchChild {
  url: string;
}

/**
 * `sessions-gateway serve --store <url>?schema=<schema>` on 127.0.0.1, a free port, the echo runner, no console,
 * logging warnings and errors (to its stderr, kept in `stderr`). Cluster mode is the CLI's default for Postgres.
 */
export async function startServe(
  children: Set<ChildProcess>,
  name: string,
  databaseUrl: string,
  schema: string,
): Promise<ServeProcess> {
  const store = new URL(databaseUrl);
  store.searchParams.set("schema", schema);
  const child = await startChild(
    children,
    name,
    [
      process.execPath,
      // `SERVE_NODE_OPTIONS`: Node flags for the gateways alone (e.g. `--cpu-prof --cpu-prof-dir=<dir>`).
      ...(process.env.SERVE_NODE_OPTIONS?.split(" ").filter((flag) => flag !== "") ?? []),
      CLI,
      "serve",
      "--store",
      store.toString(),
      "--host",
      "127.0.0.1",
      "--port",
      "0",
      "--runner",
      ECHO_RUNNER,
      "--no-console",
      "--log-level",
      "warn",
      "--drain-ms",
      "5000",
    ],
    // No operator token: loopback only, no auth, as a local deployment behind its own network.
    { SESSIONS_GATEWAY_TOKEN: "" },
    /listening (ws:\/\/\S+)/,
  );
  return { ...child, url: child.ready[1] as string };
}

/** The warnings and errors in the children's stderr, counted by message (time and fields left out). */
export function logSummary(children: readonly BenchChild[]): { count: number; line: string }[] {
  const counts = new Map<string, number>();
  for (const child of children) {
    for (const line of child.stderr) {
      // `<ISO time> <level> <part>: <message> {fields}` → `<level> <part>: <message>`.
      const key = line
        .replace(/^\S+T\S+Z /, "")
        .replace(/ \{.*\}$/, "")
        .slice(0, 200);
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
  }
  return [...counts].map(([line, count]) => ({ count, line })).sort((a, b) => b.count - a.count);
}
