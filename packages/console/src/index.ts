import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

/**
 * The folder of the built console and web chat (static files). Serve it with the gateway:
 * `gateway.listen({ http: { static: consoleAssetsDir() } })` — the page then talks to that gateway over its
 * WebSocket, like every other client.
 */
export function consoleAssetsDir(): string {
  const built = fileURLToPath(new URL("./ui", import.meta.url));
  if (existsSync(built)) return built;
  // Running from the sources (tests, tsx): the build output beside them.
  return fileURLToPath(new URL("../dist/ui", import.meta.url));
}
