// Child process of wire.bench.ts (item 5, cold start): `node --import tsx bench/cold-start.child.ts <db> <token>`.
// Creates a gateway on a fresh SQLite file, listens on loopback and prints one JSON line with its timings; on
// "stop" (or the end of stdin) prints its RSS again, closes the gateway and exits.
// The gateway is imported dynamically so its module graph (core, zod, ws, better-sqlite3) is part of the timing.
const firstLine = performance.now();

const [dbPath, token] = process.argv.slice(2);
if (dbPath === undefined || token === undefined) {
  console.error("usage: cold-start.child.ts <sqlite path> <token>");
  process.exit(2);
}

const { createGateway, createScriptedRunner, createSqliteStore } = await import("@sessions/gateway");
const imported = performance.now();
const gateway = createGateway({
  runner: createScriptedRunner({ agents: {}, fallback: () => "ok" }),
  store: createSqliteStore({ path: dbPath }),
});
await gateway.ready;
const gatewayReady = performance.now();
const server = await gateway.listen({ port: 0, auth: { token } });
const listening = performance.now();

process.stdout.write(
  `${JSON.stringify({
    type: "listening",
    url: server.url,
    /** performance.now() is relative to performance.timeOrigin, i.e. process start. */
    firstLineMs: firstLine,
    importMs: imported - firstLine,
    gatewayReadyMs: gatewayReady - imported,
    listenMs: listening - gatewayReady,
    readyMs: listening - firstLine,
    sinceProcessStartMs: listening,
    rss: process.memoryUsage().rss,
  })}\n`,
);

let stopping = false;
async function stop(): Promise<void> {
  if (stopping) return;
  stopping = true;
  const rss = process.memoryUsage().rss;
  process.stdout.write(`${JSON.stringify({ type: "stopping", rss, connections: server.connections() })}\n`);
  await gateway.close({ drainMs: 0 });
  process.exit(0);
}
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk: string) => {
  if (chunk.includes("stop")) void stop();
});
process.stdin.on("end", () => void stop());
