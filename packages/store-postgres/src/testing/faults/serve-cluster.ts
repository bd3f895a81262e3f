import { type ChildProcess, spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { createGatewayClient, type GatewayClient } from "@sessions/gateway-client";
import { type FaultProxy, startFaultProxy } from "./fault-proxy.js";

const here = dirname(fileURLToPath(import.meta.url));
const bin = resolve(here, "../../../../../apps/gateway/bin.js");
const fixture = join(here, "witness-runner.fixture.ts");

/** One `sessions-gateway serve --store postgres://…` process, reaching Postgres through a fault proxy of its own. */
export interface ServedGateway {
  name: string;
  child: ChildProcess;
  /** Between this gateway and Postgres: cut, hold, delay it. */
  proxy: FaultProxy;
  client: GatewayClient;
  /** Everything it printed (logged at debug): shown when a test fails. */
  log: string[];
}

/**
 * Starts the shipped `serve` (the built `apps/gateway/bin.js`; `pnpm build` first) for each name, every one on the
 * same Postgres schema through its own `startFaultProxy`, with the witness runner writing to `witnessFile`.
 * `cluster` goes to the config file (`gateway.cluster`): left out, the defaults users get. Every process, proxy and
 * client is added to `cleanup`.
 */
export async function startServeCluster(options: {
  names: readonly string[];
  postgresUrl: string;
  schema: string;
  witnessFile: string;
  work: string;
  cluster?: { leaseTtlMs?: number; recoveryIntervalMs?: number } | undefined;
  cleanup: (() => Promise<unknown>)[];
}): Promise<ServedGateway[]> {
  const config = join(options.work, `config-${options.schema}.json`);
  writeFileSync(config, JSON.stringify(options.cluster ? { gateway: { cluster: options.cluster } } : {}));
  const target = new URL(options.postgresUrl);
  return Promise.all(
    options.names.map(async (name) => {
      const proxy = await startFaultProxy({ target: { host: target.hostname, port: Number(target.port) } });
      options.cleanup.push(() => proxy.close());
      const store = new URL(proxy.url(options.postgresUrl));
      store.searchParams.set("schema", options.schema);
      const log: string[] = [];
      const child = spawn(
        process.execPath,
        [
          "--import",
          "tsx",
          bin,
          "serve",
          "--port",
          "0",
          "--store",
          store.toString(),
          "--config",
          config,
          "--runner",
          fixture,
          "--no-console",
          "--log-level",
          "debug",
        ],
        {
          cwd: here,
          env: {
            ...process.env,
            WITNESS_FILE: options.witnessFile,
            GATEWAY_NAME: name,
            SESSIONS_GATEWAY_TOKEN: "",
          },
          stdio: ["ignore", "pipe", "pipe"],
        },
      );
      options.cleanup.push(async () => {
        if (child.exitCode !== null || child.signalCode !== null) return;
        const exited = new Promise((resolveExit) => child.once("exit", resolveExit));
        child.kill("SIGKILL");
        await exited;
      });
      const url = await new Promise<string>((resolveUrl, reject) => {
        const read = (chunk: Buffer) => {
          log.push(String(chunk));
          const match = /listening (ws:\/\/\S+)/.exec(log.join(""));
          if (match) resolveUrl(match[1] as string);
        };
        child.stdout?.on("data", read);
        child.stderr?.on("data", read);
        child.once("exit", (code) => reject(new Error(`${name} exited ${code}: ${log.join("")}`)));
      });
      const client = createGatewayClient({ url, reconnect: { initialDelayMs: 50, maxDelayMs: 500 } });
      options.cleanup.push(() => client.close());
      await client.ready();
      return { name, child, proxy, client, log };
    }),
  );
}
