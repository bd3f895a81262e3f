import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { SessionsError, toSessionsError } from "@sessions/core";
import {
  type AgentRunner,
  createGateway,
  createScriptedRunner,
  createSqliteStore,
  type GatewayToken,
} from "@sessions/gateway";
import JSON5 from "json5";
import { z } from "zod";

export interface ServeOptions {
  config?: string;
  port?: string;
  host?: string;
  db?: string;
  runner?: string;
  drainMs?: string;
}

interface ServerSettings {
  host?: string;
  port?: number;
  db?: string;
  tickIntervalMs?: number;
  tokens?: GatewayToken[];
}

const ServerSettingsSchema = z.strictObject({
  host: z.string().min(1).optional(),
  port: z.int().min(0).max(65535).optional(),
  db: z.string().min(1).optional(),
  tickIntervalMs: z.int().min(100).optional(),
  tokens: z
    .array(
      z.strictObject({
        token: z.string().min(8, "tokens must be at least 8 characters"),
        requesterKey: z.string().min(1).optional(),
        sandboxed: z.boolean().optional(),
        label: z.string().optional(),
      }),
    )
    .optional(),
});

function fail(message: string, field?: string): never {
  throw new SessionsError("invalid_config", message, field === undefined ? {} : { field });
}

/** Reads a JSON or JSON5 config: the sessions config plus an optional `gateway` block for the server itself. */
export function readConfigFile(path: string): { config: Record<string, unknown>; server: ServerSettings } {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    fail(
      `cannot read config ${path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
      "config",
    );
  }
  let parsed: unknown;
  try {
    parsed = JSON5.parse(text);
  } catch (error) {
    fail(`config ${path} is not valid JSON5: ${(error as Error).message}`, "config");
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed))
    fail(`config ${path} must be an object`);
  const { gateway, ...config } = parsed as Record<string, unknown>;
  const checked = ServerSettingsSchema.safeParse(gateway ?? {});
  if (!checked.success)
    throw toSessionsError(checked.error, "invalid_config", "Invalid gateway settings", ["gateway"]);
  return { config, server: checked.data as ServerSettings };
}

async function loadRunner(spec: string | undefined): Promise<AgentRunner> {
  if (spec === undefined || spec === "echo") {
    return createScriptedRunner({ agents: {}, fallback: (turn) => `echo: ${turn.text}` });
  }
  const mod = (await import(pathToFileURL(resolve(spec)).href)) as {
    default?: AgentRunner;
    runner?: AgentRunner;
  };
  const runner = mod.default ?? mod.runner;
  if (typeof runner?.run !== "function")
    fail(`--runner ${spec} must export an AgentRunner as default`, "runner");
  return runner;
}

/** `sessions-gateway serve`: runs until SIGINT/SIGTERM, then drains and exits 0. */
export async function serve(options: ServeOptions, out: (line: string) => void): Promise<void> {
  const { config, server } =
    options.config === undefined ? { config: {}, server: {} } : readConfigFile(options.config);
  const host = options.host ?? server.host ?? "127.0.0.1";
  const port = options.port !== undefined ? Number(options.port) : (server.port ?? 18789);
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    fail(`--port must be 0..65535 (got ${options.port})`, "port");
  const token = process.env.SESSIONS_GATEWAY_TOKEN;
  const tokens = server.tokens ?? [];
  const loopback = /^(127\.|::1$|localhost$)/.test(host);
  if (!token && tokens.length === 0 && !loopback) {
    fail(`set SESSIONS_GATEWAY_TOKEN to serve on ${host}`, "SESSIONS_GATEWAY_TOKEN");
  }
  const gateway = createGateway({
    config,
    store: createSqliteStore({ path: options.db ?? server.db ?? ".sessions/gateway.db" }),
    runner: await loadRunner(options.runner),
  });
  const listening = await gateway.listen({
    host,
    port,
    // Configured tokens always apply, with or without the shared operator token.
    auth:
      token || tokens.length > 0
        ? { ...(token ? { token } : {}), ...(tokens.length > 0 ? { tokens } : {}) }
        : "none",
    ...(server.tickIntervalMs ? { tickIntervalMs: server.tickIntervalMs } : {}),
  });
  // Handlers go in before "listening" is printed: a signal right after it must drain, not kill.
  const drainMs = options.drainMs === undefined ? 10_000 : Number(options.drainMs);
  const stopped = new Promise<void>((resolveStop) => {
    let stopping = false;
    // Listeners stay registered (not once) so a second signal during the drain is absorbed, not fatal.
    const stop = (signal: string) => {
      if (stopping) return;
      stopping = true;
      out(`${signal}: draining (up to ${drainMs} ms)…`);
      void gateway.close({ drainMs }).then(resolveStop);
    };
    process.on("SIGINT", () => stop("SIGINT"));
    process.on("SIGTERM", () => stop("SIGTERM"));
  });
  out(`listening ${listening.url}${token || tokens.length > 0 ? "" : " (no token: loopback only)"}`);
  await stopped;
  out("stopped");
}
