import { parseArgs } from "node:util";
import type { RunSessionsMcpOptions } from "./run.js";

export const USAGE =
  "usage: sessions-mcp --url <ws url> --session <requester key> [--token <token>] [--sandboxed] (token also from SESSIONS_GATEWAY_TOKEN)";

export type CliArgs =
  | { kind: "run"; options: Pick<RunSessionsMcpOptions, "url" | "token" | "session" | "sandboxed"> }
  | { kind: "help" }
  | { kind: "version" }
  | { kind: "error"; message: string };

/** Parses the command line (`argv` without node and the script) and the environment. Never throws. */
export function parseCliArgs(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): CliArgs {
  let values: {
    url?: string | undefined;
    token?: string | undefined;
    session?: string | undefined;
    sandboxed?: boolean | undefined;
    help?: boolean | undefined;
    version?: boolean | undefined;
  };
  try {
    ({ values } = parseArgs({
      args: [...argv],
      options: {
        url: { type: "string" },
        token: { type: "string" },
        session: { type: "string" },
        sandboxed: { type: "boolean" },
        help: { type: "boolean", short: "h" },
        version: { type: "boolean", short: "v" },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    // node's messages can run on ("To specify a positional argument…"): keep the first sentence.
    return { kind: "error", message: message.split(/\.\s|\n/)[0] ?? message };
  }
  if (values.help === true) return { kind: "help" };
  if (values.version === true) return { kind: "version" };
  const url = values.url?.trim();
  if (url === undefined || url === "") return { kind: "error", message: "missing --url" };
  if (!/^wss?:\/\/[^\s/]/.test(url)) {
    return { kind: "error", message: `invalid --url ${JSON.stringify(url)}: expected ws:// or wss://` };
  }
  const session = values.session?.trim();
  if (session === undefined || session === "") return { kind: "error", message: "missing --session" };
  const token = values.token ?? env.SESSIONS_GATEWAY_TOKEN;
  if (values.token !== undefined && values.token.trim() === "") {
    return { kind: "error", message: "empty --token" };
  }
  return {
    kind: "run",
    options: {
      url,
      session,
      ...(token === undefined || token.trim() === "" ? {} : { token }),
      ...(values.sandboxed === true ? { sandboxed: true } : {}),
    },
  };
}
