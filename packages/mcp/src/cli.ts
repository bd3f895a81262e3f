#!/usr/bin/env node
// sessions-mcp: a stdio MCP server for the session tools of one requester session of a sessions gateway.
// stdout carries MCP JSON-RPC only; everything else goes to stderr.
import { parseCliArgs, USAGE } from "./args.js";
import { runSessionsMcp } from "./run.js";
import { VERSION } from "./version.js";

// Anything that would print to stdout (a stray console.log in a dependency) goes to stderr instead.
console.log = console.error;
console.info = console.error;
console.debug = console.error;

async function main(): Promise<void> {
  const args = parseCliArgs(process.argv.slice(2));
  if (args.kind === "help") {
    process.stderr.write(`${USAGE}\n`);
    return;
  }
  if (args.kind === "version") {
    process.stderr.write(`${VERSION}\n`);
    return;
  }
  if (args.kind === "error") {
    process.stderr.write(`sessions-mcp: ${args.message}; ${USAGE}\n`);
    process.exitCode = 2;
    return;
  }
  const handle = await runSessionsMcp(args.options);
  const stop = () => void handle.close();
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
  await handle.closed;
  // Everything is closed; should a stray handle keep the loop alive, do not linger.
  setTimeout(() => process.exit(0), 1000).unref();
}

main().catch((error: unknown) => {
  process.stderr.write(`sessions-mcp: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
