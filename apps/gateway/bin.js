#!/usr/bin/env node
// `sessions-gateway` from a clone: `pnpm --filter sessions-gateway... build`, then `node apps/gateway/bin.js --help`.
// The CLI itself is the published package @sessions/cli (packages/cli); npm users run `npx @sessions/cli serve`.
let cli;
try {
  cli = await import("@sessions/cli");
} catch (error) {
  if (error?.code !== "ERR_MODULE_NOT_FOUND") throw error;
  process.stderr.write(
    "sessions-gateway: @sessions/cli is not built yet; run `pnpm --filter sessions-gateway... build` first\n",
  );
  process.exit(1);
}
process.exitCode = await cli.runCli(process.argv.slice(2));
