import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { consoleAssetsDir } from "@sessions/console";
import { type Logger, SessionsError, silentLogger, toSessionsError } from "@sessions/core";
import {
  type AgentRunner,
  createGateway,
  createScriptedRunner,
  createSqliteStore,
  type GatewayToken,
  type SessionStore,
} from "@sessions/gateway";
import JSON5 from "json5";
import { z } from "zod";
import { type OptionValues, text, usageError, wholeNumber } from "./args.js";
import { LOG_LEVELS, type LogLevel, lineLogger, parseLogLevel } from "./logger.js";
import { logRuns } from "./run-log.js";
import { SERVE } from "./spec.js";
import { startTelemetry } from "./telemetry.js";

interface ServerSettings {
  host?: string | undefined;
  port?: number | undefined;
  db?: string | undefined;
  store?: string | undefined;
  tickIntervalMs?: number | undefined;
  tokens?: GatewayToken[] | undefined;
  cluster?: { leaseTtlMs?: number | undefined; recoveryIntervalMs?: number | undefined } | undefined;
  a2a?: boolean | { agents?: string[] | undefined; publicUrl?: string | undefined } | undefined;
}

const ServerSettingsSchema = z.strictObject({
  host: z.string().min(1).optional(),
  port: z.int().min(0).max(65535).optional(),
  db: z.string().min(1).optional(),
  store: z.string().min(1).optional(),
  tickIntervalMs: z.int().min(100).optional(),
  // Several gateways on one Postgres: how soon a dead one is noticed (createGateway's `cluster`).
  cluster: z
    .strictObject({
      leaseTtlMs: z.int().min(300).optional(),
      recoveryIntervalMs: z.int().min(50).optional(),
    })
    .optional(),
  // The agents over A2A on the same port (listen's `a2a`): `true`, or which agents and the URL callers use.
  a2a: z
    .union([
      z.boolean(),
      z.strictObject({
        agents: z.array(z.string().min(1)).min(1).optional(),
        publicUrl: z.url().optional(),
      }),
    ])
    .optional(),
  tokens: z
    .array(
      z.strictObject({
        token: z.string().min(8, "tokens must be at least 8 characters"),
        requesterKey: z.string().min(1).optional(),
        sandboxed: z.boolean().optional(),
        scopes: z
          .array(z.enum(["operator.read", "operator.write", "operator.admin"]))
          .min(1)
          .optional(),
        label: z.string().optional(),
      }),
    )
    .optional(),
});

function fail(message: string, field?: string): never {
  throw new SessionsError("invalid_config", message, field === undefined ? {} : { field });
}

/**
 * Reads a JSON or JSON5 config: the sessions config plus an optional `gateway` block for the server itself.
 *
 * @throws SessionsError `invalid_config`: field `config` when the file cannot be read or is not JSON5, and the
 * offending path under `gateway` when the server block is invalid (`gateway.port`, `gateway.tokens.0.scopes`, …).
 */
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
    default?: AgentRunner | undefined;
    runner?: AgentRunner | undefined;
  };
  const runner = mod.default ?? mod.runner;
  if (typeof runner?.run !== "function")
    fail(`--runner ${spec} must export an AgentRunner as default`, "runner");
  return runner;
}

/**
 * The store `serve` (and `import-openclaw`) uses: Postgres when `--store` (or `$SESSIONS_GATEWAY_STORE`, or `gateway.store`) names a
 * `postgres://` URL — loaded only then, so SQLite users never load the Postgres driver — else SQLite at `--db`.
 */
export async function openStore(
  options: OptionValues,
  server: ServerSettings,
  command: string = SERVE.name,
  logger: Logger = silentLogger,
): Promise<SessionStore> {
  const db = text(options.db);
  const flag = text(options.store);
  const url = flag ?? (process.env.SESSIONS_GATEWAY_STORE || undefined) ?? server.store;
  if (url === undefined) return createSqliteStore({ path: db ?? server.db ?? ".sessions/gateway.db" });
  if (db !== undefined)
    throw usageError("--db and --store name two different stores: give one", command, "--db");
  if (!/^postgres(ql)?:\/\//.test(url)) {
    const from =
      flag !== undefined ? "--store" : server.store === url ? "gateway.store" : "SESSIONS_GATEWAY_STORE";
    throw usageError(`${from} must be a postgres:// URL (SQLite files go to --db)`, command, from);
  }
  const { createPostgresStore } = await import("@sessions/store-postgres");
  return createPostgresStore({ connectionString: url, logger });
}

/** `--log-level`, else `$SESSIONS_LOG_LEVEL`, else `info`. */
function logLevel(options: OptionValues): LogLevel {
  const flag = text(options["log-level"]);
  const value = flag ?? (process.env.SESSIONS_LOG_LEVEL || undefined);
  if (value === undefined) return "info";
  const level = parseLogLevel(value);
  if (level !== undefined) return level;
  const from = flag !== undefined ? "--log-level" : "SESSIONS_LOG_LEVEL";
  throw usageError(`${from} must be one of ${LOG_LEVELS.join(", ")} (got "${value}")`, SERVE.name, from);
}

/** `sessions-gateway serve` (options as `SERVE` in spec.ts declares them): runs until SIGINT/SIGTERM, drains, returns. */
export async function serve(options: OptionValues, out: (line: string) => void): Promise<void> {
  const port = wholeNumber(options.port, "port", SERVE.name, -1, { min: 0, max: 65535 });
  const level = logLevel(options);
  const logger = lineLogger(level);
  const drainMs = wholeNumber(options["drain-ms"], "drain-ms", SERVE.name, 10_000);
  const configPath = text(options.config);
  const runnerSpec = text(options.runner);
  const record = text(options.record);
  if (record?.trim() === "") throw usageError("--record needs a file", SERVE.name, "--record");
  if (text(options.host)?.trim() === "") throw usageError("--host must not be empty", SERVE.name, "--host");
  const { config, server } =
    configPath === undefined ? { config: {}, server: {} } : readConfigFile(configPath);
  const host = text(options.host) ?? server.host ?? "127.0.0.1";
  const token = process.env.SESSIONS_GATEWAY_TOKEN;
  const tokens = server.tokens ?? [];
  const loopback = /^(127\.|::1$|localhost$)/.test(host);
  if (!token && tokens.length === 0 && !loopback) {
    fail(`set SESSIONS_GATEWAY_TOKEN to serve on ${host}`, "SESSIONS_GATEWAY_TOKEN");
  }
  // Registered before the gateway starts, so its first run is traced.
  const telemetry = await startTelemetry();
  const store = await openStore(options, server, SERVE.name, logger);
  const gateway = createGateway({
    config,
    store,
    logger,
    runner: await loadRunner(runnerSpec),
    // Only for a shared store: an object would turn cluster mode on for a SQLite file too.
    ...(server.cluster === undefined || store.kind === "sqlite" ? {} : { cluster: server.cluster }),
    ...(record === undefined ? {} : { record }),
  });
  // Each run's steps, for operators following one request: only at debug (it costs a line per step).
  if (level === "debug") logRuns(gateway, logger.child("runs"));
  // --a2a turns A2A on; the config's `gateway.a2a` (an object) says which agents and the public URL.
  const a2a = server.a2a || (options.a2a === true ? true : undefined);
  const listening = await gateway.listen({
    host,
    port: port === -1 ? (server.port ?? 18789) : port,
    // Configured tokens always apply, with or without the shared operator token.
    auth:
      token || tokens.length > 0
        ? { ...(token ? { token } : {}), ...(tokens.length > 0 ? { tokens } : {}) }
        : "none",
    ...(server.tickIntervalMs ? { tickIntervalMs: server.tickIntervalMs } : {}),
    // The console and web chat: static files at `/`, talking to this gateway over the same WebSocket.
    ...(options["no-console"] === true ? {} : { http: { static: consoleAssetsDir() } }),
    ...(a2a === undefined ? {} : { a2a }),
  });
  // Handlers go in before "listening" is printed: a signal right after it must drain, not kill.
  const stopped = new Promise<void>((resolveStop) => {
    let stopping = false;
    // Listeners stay registered (not once) so a second signal during the drain is absorbed, not fatal.
    const stop = (signal: string) => {
      if (stopping) return;
      stopping = true;
      out(`${signal}: draining (up to ${drainMs} ms)…`);
      const say = (what: string) => (error: unknown) =>
        out(`${what}: ${error instanceof Error ? error.message : String(error)}`);
      // The spans of the drain are flushed whatever the close said.
      void gateway
        .close({ drainMs })
        .catch(say("close"))
        .then(() => telemetry?.shutdown())
        .catch(say("telemetry"))
        .then(resolveStop);
    };
    process.on("SIGINT", () => stop("SIGINT"));
    process.on("SIGTERM", () => stop("SIGTERM"));
  });
  out(`listening ${listening.url}${token || tokens.length > 0 ? "" : " (no token: loopback only)"}`);
  if (options["no-console"] !== true) out(`console ${listening.url.replace(/^ws/, "http")}/`);
  if (a2a !== undefined) {
    const base = (typeof a2a === "object" && a2a.publicUrl) || listening.url.replace(/^ws/, "http");
    out(`a2a ${base.replace(/\/+$/, "")}/a2a/<agentId>/ (agent cards at .well-known/agent-card.json)`);
  }
  if (telemetry !== undefined) out(telemetry.description);
  await stopped;
  out("stopped");
}
