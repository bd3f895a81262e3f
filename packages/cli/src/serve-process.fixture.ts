// `sessions-gateway serve` as a child process for the CLI's end-to-end tests: started from src with tsx, its URL
// read from the line it prints, killed by `stop` (call it in afterAll).
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const here = dirname(fileURLToPath(import.meta.url));
/** The CLI's entry, for tests that run other commands the same way. */
export const CLI = join(here, "cli.ts");

/** Starts servers with `token` as the operator token; `stop` kills every one started. */
export function serveProcesses(token: string) {
  const children = new Set<ChildProcess>();
  return {
    /** Runs `serve --port 0 …args`; resolves with its WebSocket URL once it listens. */
    serve(args: string[]): Promise<string> {
      return new Promise((resolve, reject) => {
        let log = "";
        const child = spawn(process.execPath, ["--import", "tsx", CLI, "serve", "--port", "0", ...args], {
          cwd: here,
          env: { ...process.env, SESSIONS_GATEWAY_TOKEN: token },
          stdio: ["ignore", "pipe", "pipe"],
        });
        children.add(child);
        const read = (d: Buffer) => {
          log += String(d);
          const match = /listening (ws:\/\/\S+)/.exec(log);
          if (match) resolve(match[1] as string);
        };
        child.stdout?.on("data", read);
        child.stderr?.on("data", read);
        child.on("exit", (code) => reject(new Error(`serve exited ${code}: ${log}`)));
      });
    },
    stop(): void {
      for (const child of children) child.kill("SIGKILL");
    },
  };
}

/** `sessions-gateway replay <recording> --config <config>` from source: its exit code and output. */
export async function replayCli(
  recording: string,
  config: string,
): Promise<{ code: number; stdout: string }> {
  try {
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ["--import", "tsx", CLI, "replay", recording, "--config", config],
      { cwd: here },
    );
    return { code: 0, stdout };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    return { code: failed.code ?? -1, stdout: `${failed.stdout ?? ""}${failed.stderr ?? ""}` };
  }
}

/** A config file in `dir` named `name-<maxHops>.json5`: visibility `agent`, the agent-to-agent hop limit `maxHops`. */
export function hopLimitConfig(dir: string, name: string, maxHops: number): string {
  const file = join(dir, `${name}-${maxHops}.json5`);
  writeFileSync(
    file,
    `{ tools: { sessions: { visibility: 'agent' } }, session: { agentToAgent: { maxHops: ${maxHops} } } }`,
  );
  return file;
}
