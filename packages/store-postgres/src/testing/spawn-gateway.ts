import { type ChildProcess, spawn } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));

/** A gateway process started by `startGatewayProcess`: its name, the child, its output and its WebSocket URL. */
export interface GatewayProcess {
  name: string;
  child: ChildProcess;
  url: string;
  log: string[];
}

/**
 * Starts `gateway-process.ts` (a real gateway on the shared schema) as a child process and resolves once it
 * listens. Every child started is added to `children`, for the test file to kill at the end.
 */
export function startGatewayProcess(
  children: Set<ChildProcess>,
  options: { url: string; schema: string; name: string; platformUrl: string; leaseTtlMs?: number },
): Promise<GatewayProcess> {
  const { name } = options;
  return new Promise((resolve, reject) => {
    const log: string[] = [];
    const child = spawn(process.execPath, ["--import", "tsx", join(here, "gateway-process.ts")], {
      cwd: here,
      env: {
        ...process.env,
        DATABASE_URL: options.url,
        SCHEMA: options.schema,
        NAME: name,
        PLATFORM_URL: options.platformUrl,
        // Outlasts a stall of a busy machine: a test about a lease lapsing sets a short one (a gateway killed
        // on this host is noticed at once all the same, by its pid).
        LEASE_TTL_MS: String(options.leaseTtlMs ?? 15_000),
        RECOVERY_MS: "250",
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    children.add(child);
    child.stdout?.on("data", (chunk) => {
      log.push(String(chunk));
      const match = /listening (ws:\/\/\S+)/.exec(log.join(""));
      if (match) resolve({ name, child, url: match[1] as string, log });
    });
    child.stderr?.on("data", (chunk) => log.push(String(chunk)));
    child.on("exit", (code) => reject(new Error(`${name} exited ${code}: ${log.join("")}`)));
  });
}

/** The environment of `telegram-gateway-process.ts` (see its header), beyond the database and the bot's API. */
export interface TelegramGatewayEnv {
  NAME: string;
  LEASE_TTL_MS: string;
  RECOVERY_MS?: string | undefined;
  STREAM_MS?: string | undefined;
  STREAM_INTERVAL_MS?: string | undefined;
}

/**
 * Spawns `telegram-gateway-process.ts` (a gateway with a Telegram bot on the shared schema), its bot's HTTP pointed
 * at a fake Bot API; added to `children`. The caller reads its output (it prints `ready` once it runs).
 */
export function spawnTelegramGateway(
  children: Set<ChildProcess>,
  options: { url: string; schema: string; apiRoot: string; token: string },
  env: TelegramGatewayEnv,
): ChildProcess {
  const child = spawn(process.execPath, ["--import", "tsx", join(here, "telegram-gateway-process.ts")], {
    cwd: join(here, ".."),
    env: {
      ...process.env,
      DATABASE_URL: options.url,
      SCHEMA: options.schema,
      TELEGRAM_API_ROOT: options.apiRoot,
      TELEGRAM_TOKEN: options.token,
      RECOVERY_MS: "250",
      ...Object.fromEntries(Object.entries(env).filter(([, value]) => value !== undefined)),
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.add(child);
  return child;
}
