#!/usr/bin/env node
// Rehearses a release the way a user meets it: the packages published by the project's own `pnpm release` to a real
// npm registry, then installed by name and caret range in fresh projects outside the workspace.
//
//   pnpm release:rehearse                                        # HEAD, in a temporary folder
//   node scripts/release-rehearsal.mjs --ref main~3 --keep --json rehearsal.json
//
// 1. Clones the committed HEAD (or --ref) into a work folder and installs the locked dependencies
//    (scripts/ensure-deps.sh). Uncommitted changes are not rehearsed: commit first. The work tree is never touched.
// 2. Starts Verdaccio 6.8.0 on 127.0.0.1 (a free port), its storage in the work folder. It serves @sessions/* only
//    from what was published to it (no uplink: the real npm may hold that scope) and proxies every other package
//    from registry.npmjs.org. Verdaccio is installed once into ~/.cache/sessions-release-rehearsal, never into the
//    workspace (6.10 and later need Node 22).
// 3. Runs `pnpm release` (build, check:packages, changeset publish) in the clone against it.
// 4. Installs every public package by caret range (`@sessions/core@^X.Y.Z`), plus what each README's install line
//    adds (discord.js, grammy, …), in a fresh npm project and a fresh pnpm project, and runs one snippet per
//    package (SNIPPETS below) in each; `tsc --noEmit` checks a typed use in the npm project.
// 5. The patch: a patch changeset for @sessions/core, `pnpm version-packages`, every public package at the next
//    patch (fixed group) with its CHANGELOG entry, `pnpm release` again; the npm project takes the patch through its
//    caret ranges (`npm update`), dependants included (`npm ls @sessions/core`), and the snippets run again.
//
// Everything binds 127.0.0.1 and every process started here is stopped at the end (and on Ctrl-C). Takes several
// minutes: better-sqlite3 builds from source. The logs stay in the work folder unless everything held; --keep
// keeps the whole folder. Exits 1 when any step or snippet failed, 0 when all held.
import { spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import {
  appendFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  unlinkSync,
  writeFileSync,
} from "node:fs";
import { createServer } from "node:net";
import { homedir, tmpdir } from "node:os";
import { join, resolve } from "node:path";

const root = resolve(import.meta.dirname, "..");
const VERDACCIO = "6.8.0";
const TYPESCRIPT = "5.9.3";
const PATCH_NOTE = "Release rehearsal: a patch of @sessions/core, to prove caret ranges take it.";
const usage =
  "usage: node scripts/release-rehearsal.mjs [--ref <git ref>] [--dir <work folder>] [--json <file>] [--keep] [--help]";

function parseArgs(argv) {
  const opts = { ref: "HEAD", dir: undefined, json: undefined, keep: false };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const value = () => {
      const next = argv[++i];
      if (next === undefined || next.startsWith("--")) fail(`${arg} needs a value`);
      return next;
    };
    if (arg === "--ref") opts.ref = value();
    else if (arg === "--dir") opts.dir = resolve(value());
    else if (arg === "--json") opts.json = resolve(value());
    else if (arg === "--keep") opts.keep = true;
    else if (arg === "--help" || arg === "-h") {
      console.log(usage);
      process.exit(0);
    } else fail(`unknown option ${arg}`);
  }
  return opts;
}

function fail(message) {
  console.error(`release-rehearsal: ${message}\n${usage}`);
  process.exit(2);
}

// ---------------------------------------------------------------------------------------------------------------
// The snippets: one per public package, run in each fresh project after `import` and `require` of the package by
// name have both loaded it with the same exports. Each is serialised into its own file, so it may use only its
// argument `t` (see `toolkit`) and dynamic imports; it returns one line saying what it proved.
// ---------------------------------------------------------------------------------------------------------------
const SNIPPETS = {
  "@sessions/core": async (t) => {
    const { parseSessionKey } = await import("@sessions/core");
    const parsed = parseSessionKey("agent:main:discord:group:dev");
    t.check(parsed?.kind === "group", `parseSessionKey gave ${JSON.stringify(parsed)}`);
    return `parseSessionKey("agent:main:discord:group:dev").kind is "${parsed.kind}"`;
  },

  "@sessions/gateway": async (t) => {
    const { createGateway, createScriptedRunner } = await import("@sessions/gateway");
    const path = t.path.join(t.tempDir("gateway"), "sessions.db");
    const runner = createScriptedRunner({ agents: {}, fallback: (turn) => `echo: ${turn.text}` });
    const gateway = createGateway({ path, runner });
    try {
      const { runId } = await gateway.agent({ message: "hello", idempotencyKey: t.randomUUID() });
      const result = await gateway.agentWait({ runId, timeoutMs: 10_000 });
      t.check(result.reply === "echo: hello", `agent.wait answered ${JSON.stringify(result)}`);
    } finally {
      await gateway.close();
    }
    t.check(t.fs.existsSync(path), `no SQLite file at ${path}`);
    return 'createGateway on its SQLite store: a run replied "echo: hello", then close()';
  },

  "@sessions/gateway-client": async (t) => {
    const { createGatewayClient } = await import("@sessions/gateway-client");
    const db = t.path.join(t.tempDir("serve"), "gateway.db");
    const args = ["serve", "--port", "0", "--db", db, "--no-console", "--drain-ms", "0"];
    const server = await t.start("sessions-gateway", args, /^listening (ws:\/\/\S+)/m);
    const url = server.match[1];
    const client = createGatewayClient({ url, reconnect: false });
    try {
      const started = await client.agent({ message: "hello", idempotencyKey: t.randomUUID() });
      const result = await client.waitRun(started.runId, { timeoutMs: 10_000 });
      t.check(result.reply === "echo: hello", `waitRun answered ${JSON.stringify(result)}`);
      const page = await client.sessions.list();
      t.check(
        page.sessions.some((s) => s.key === "agent:main:main"),
        `sessions.list has no agent:main:main: ${JSON.stringify(page)}`,
      );
      return `sessions-gateway serve on ${url}: a run replied, sessions.list lists ${page.sessions.length}`;
    } finally {
      await client.close();
      await server.stop();
    }
  },

  "@sessions/cli": async (t) => {
    // `--`: without it npx takes `--help` for itself.
    const help = await t.run("npx", ["--no", "--", "sessions-gateway", "--help"]);
    t.check(help.code === 0 && /\bserve\b/.test(help.stdout), `--help exited ${help.code}: ${help.stdout}`);
    const printed = (await t.run("npx", ["--no", "--", "sessions-gateway", "--version"])).stdout.trim();
    const installed = t.version("@sessions/cli");
    t.check(printed === installed, `--version prints ${printed}, the installed package is ${installed}`);
    return `npx sessions-gateway --help lists serve; --version prints ${printed}`;
  },

  "@sessions/console": async (t) => {
    const { consoleAssetsDir } = await import("@sessions/console");
    const dir = consoleAssetsDir();
    t.check(t.fs.existsSync(t.path.join(dir, "index.html")), `${dir} has no index.html`);
    return `consoleAssetsDir() holds index.html and ${t.fs.readdirSync(dir).length - 1} other entries`;
  },

  "@sessions/store-postgres": async (t) => {
    const { createPostgresStore, MIGRATIONS, SCHEMA_VERSION } = await import("@sessions/store-postgres");
    t.check(Number.isInteger(SCHEMA_VERSION) && SCHEMA_VERSION >= 1, `SCHEMA_VERSION is ${SCHEMA_VERSION}`);
    t.check(typeof createPostgresStore === "function", "createPostgresStore is not a function");
    return `SCHEMA_VERSION is ${SCHEMA_VERSION} (${MIGRATIONS.length} migrations); createPostgresStore loads`;
  },

  "@sessions/testing": async (t) => {
    const { createFakeTelegramApi } = await import("@sessions/testing");
    const fake = await createFakeTelegramApi();
    try {
      const response = await fetch(`${fake.apiRoot}/bot${fake.token}/getMe`, { method: "POST" });
      const body = await response.json();
      t.check(body.ok === true && body.result?.username === fake.bot.username, JSON.stringify(body));
      return `a fake Telegram Bot API on ${fake.apiRoot} answers getMe (@${body.result.username}), then closes`;
    } finally {
      await fake.close();
    }
  },

  "@sessions/mcp": async (t) => {
    const { createGateway, createMemoryStore, createScriptedRunner } = await import("@sessions/gateway");
    const gateway = createGateway({
      store: createMemoryStore(),
      runner: createScriptedRunner({ agents: {} }),
    });
    const server = await gateway.listen({ host: "127.0.0.1", port: 0, auth: "none" });
    const mcp = t.jsonRpc("sessions-mcp", ["--url", server.url, "--session", "main"]);
    try {
      const clientInfo = { name: "release-rehearsal", version: "0.0.0" };
      await mcp.request("initialize", { protocolVersion: "2025-06-18", capabilities: {}, clientInfo });
      mcp.notify("notifications/initialized");
      const names = (await mcp.request("tools/list")).tools.map((tool) => tool.name).sort();
      t.check(names.includes("sessions_list"), `tools/list gave ${names.join(", ")}`);
      const listed = await mcp.request("tools/call", { name: "sessions_list", arguments: {} });
      t.check(listed.isError !== true, `sessions_list failed: ${JSON.stringify(listed)}`);
      return `sessions-mcp over stdio: ${names.length} tools (${names.join(", ")}); sessions_list ran on a gateway`;
    } finally {
      await mcp.close();
      await gateway.close();
    }
  },

  "@sessions/adapter-discord": async (t) => {
    const { createDiscordAdapter } = await import("@sessions/adapter-discord");
    const { Client, GatewayIntentBits } = await import("discord.js");
    const client = new Client({ intents: [GatewayIntentBits.Guilds] });
    try {
      const adapter = createDiscordAdapter({ client });
      t.check(adapter.channel === "discord", `the adapter's channel is ${adapter.channel}`);
      return 'createDiscordAdapter({ client }) on a discord.js Client (not logged in): channel "discord"';
    } finally {
      await client.destroy();
    }
  },

  "@sessions/adapter-telegram": async (t) => {
    const { createTelegramAdapter, initTelegramBot } = await import("@sessions/adapter-telegram");
    const { createFakeTelegramApi } = await import("@sessions/testing");
    const { Bot } = await import("grammy");
    const fake = await createFakeTelegramApi();
    try {
      const bot = new Bot(fake.token, { client: { apiRoot: fake.apiRoot } });
      await initTelegramBot(bot, { timeoutMs: 10_000 });
      const adapter = createTelegramAdapter({ bot });
      t.check(adapter.channel === "telegram", `the adapter's channel is ${adapter.channel}`);
      return 'initTelegramBot against a fake Bot API, then createTelegramAdapter({ bot }): channel "telegram"';
    } finally {
      await fake.close();
    }
  },

  "@sessions/adapter-slack": async (t) => {
    const { createSlackAdapter, splitForSlack } = await import("@sessions/adapter-slack");
    const bolt = await import("@slack/bolt");
    const { App, LogLevel } = bolt.default ?? bolt;
    const app = new App({
      token: "xoxb-rehearsal",
      signingSecret: "rehearsal",
      tokenVerificationEnabled: false,
      logLevel: LogLevel.ERROR,
    });
    const adapter = createSlackAdapter({ app });
    t.check(adapter.channel === "slack", `the adapter's channel is ${adapter.channel}`);
    const parts = splitForSlack("word ".repeat(10_000));
    t.check(parts.length > 1, `splitForSlack kept 50,000 characters in ${parts.length} message`);
    return `createSlackAdapter({ app }) on a bolt App (not started): channel "slack"; splitForSlack made ${parts.length} messages`;
  },

  "@sessions/adapter-matrix": async (t) => {
    const { createMatrixAdapter } = await import("@sessions/adapter-matrix");
    const { createClient } = await import("matrix-js-sdk");
    const client = createClient({
      baseUrl: "http://127.0.0.1:9",
      accessToken: "rehearsal",
      userId: "@rehearsal:example.org",
    });
    const adapter = createMatrixAdapter({ client });
    t.check(adapter.channel === "matrix", `the adapter's channel is ${adapter.channel}`);
    return 'createMatrixAdapter({ client }) on a matrix-js-sdk client (not syncing): channel "matrix"';
  },
};

/** A typed use for `tsc --noEmit`: it compiles only when the declarations resolve by name and are not `any`. */
const TYPED_USE = `import { type ParsedSessionKey, parseSessionKey } from "@sessions/core";
import { createGateway, createScriptedRunner, type Gateway } from "@sessions/gateway";
import { createGatewayClient, type GatewayClient } from "@sessions/gateway-client";

export function open(url: string): { key: ParsedSessionKey | null; gateway: Gateway; client: GatewayClient } {
  const key = parseSessionKey("agent:main:main");
  // @ts-expect-error parseSessionKey may return null (were the types \`any\`, this would be no error)
  key.kind;
  const gateway = createGateway({ path: ":memory:", runner: createScriptedRunner({ agents: {} }) });
  const client = createGatewayClient({ url, reconnect: false });
  return { key, gateway, client };
}
`;

/**
 * What a snippet gets as `t`. Serialised into each snippet file with `toString()`, so it uses only its argument:
 * the Node modules the snippet file imports. Long-lived processes run the project's own bin (what `npx` runs).
 */
function toolkit({ spawn, crypto, fs, os, path, require }) {
  const temps = [];
  const children = new Set();
  const check = (ok, what) => {
    if (!ok) throw new Error(what);
  };
  const bin = (name) => path.join(process.cwd(), "node_modules", ".bin", name);
  const launch = (command, args, stdin) => {
    const child = spawn(command, args, { stdio: [stdin, "pipe", "pipe"] });
    children.add(child);
    child.on("exit", () => children.delete(child));
    return child;
  };
  const stop = (child) =>
    new Promise((done) => {
      if (child.exitCode !== null || child.signalCode !== null) return done();
      child.once("exit", () => done());
      child.kill("SIGTERM");
      setTimeout(() => child.kill("SIGKILL"), 5000).unref();
    });
  return {
    fs,
    path,
    check,
    randomUUID: () => crypto.randomUUID(),
    version: (name) => require(`${name}/package.json`).version,
    tempDir(label) {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), `rehearsal-${label}-`));
      temps.push(dir);
      return dir;
    },
    /** `import` and `require` by name both load the package, with the same exports. */
    loads(name, imported) {
      const required = require(name);
      const names = Object.keys(imported).filter((key) => key !== "default");
      check(names.length > 0, `import("${name}") has no exports`);
      const missing = names.filter((key) => !(key in required));
      check(missing.length === 0, `require("${name}") lacks what import() has: ${missing.join(", ")}`);
    },
    /** Runs a command to its end: `{ code, stdout, stderr }`. */
    run(command, args, timeoutMs = 120_000) {
      return new Promise((done, reject) => {
        const child = launch(command, args, "ignore");
        let stdout = "";
        let stderr = "";
        child.stdout.on("data", (chunk) => {
          stdout += chunk;
        });
        child.stderr.on("data", (chunk) => {
          stderr += chunk;
        });
        const timer = setTimeout(() => {
          reject(
            new Error(`${command} ${args.join(" ")}: no exit within ${timeoutMs} ms\n${stdout}${stderr}`),
          );
          stop(child);
        }, timeoutMs);
        child.on("close", (code) => {
          clearTimeout(timer);
          done({ code, stdout, stderr });
        });
      });
    },
    /** Starts the project's bin `name` and waits until its stdout matches `ready`: `{ match, stop() }`. */
    start(name, args, ready, timeoutMs = 60_000) {
      return new Promise((done, reject) => {
        const child = launch(bin(name), args, "ignore");
        let output = "";
        const timer = setTimeout(() => {
          reject(new Error(`${name} ${args.join(" ")}: no ${ready} within ${timeoutMs} ms\n${output}`));
          stop(child);
        }, timeoutMs);
        child.stdout.on("data", (chunk) => {
          output += chunk;
          const match = ready.exec(output);
          if (match === null) return;
          clearTimeout(timer);
          done({ match, stop: () => stop(child) });
        });
        child.stderr.on("data", (chunk) => {
          output += chunk;
        });
        child.on("exit", (code) => {
          clearTimeout(timer);
          reject(new Error(`${name} ${args.join(" ")} exited ${code} before it was ready\n${output}`));
        });
      });
    },
    /** The project's bin `name` as a newline-delimited JSON-RPC peer on stdio (MCP's stdio transport). */
    jsonRpc(name, args, timeoutMs = 30_000) {
      const child = launch(bin(name), args, "pipe");
      const pending = new Map();
      let nextId = 1;
      let buffer = "";
      let stderr = "";
      child.stderr.on("data", (chunk) => {
        stderr += chunk;
      });
      child.stdout.on("data", (chunk) => {
        buffer += chunk;
        for (let end = buffer.indexOf("\n"); end >= 0; end = buffer.indexOf("\n")) {
          const line = buffer.slice(0, end).trim();
          buffer = buffer.slice(end + 1);
          if (line === "") continue;
          const message = JSON.parse(line);
          pending.get(message.id)?.(message);
          pending.delete(message.id);
        }
      });
      const send = (message) => child.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", ...message })}\n`);
      return {
        request(method, params = {}) {
          const id = nextId++;
          return new Promise((done, reject) => {
            const timer = setTimeout(
              () => reject(new Error(`${method}: no answer within ${timeoutMs} ms\n${stderr}`)),
              timeoutMs,
            );
            pending.set(id, (message) => {
              clearTimeout(timer);
              if (message.error) reject(new Error(`${method}: ${JSON.stringify(message.error)}\n${stderr}`));
              else done(message.result);
            });
            send({ id, method, params });
          });
        },
        notify(method, params = {}) {
          send({ method, params });
        },
        /** Closes stdin, as an MCP client that goes away does: the server should exit by itself. */
        close() {
          return new Promise((done) => {
            if (child.exitCode !== null) return done();
            child.once("exit", () => done());
            child.stdin.end();
            setTimeout(() => stop(child), 10_000).unref();
          });
        },
      };
    },
    async cleanup() {
      await Promise.all([...children].map(stop));
      for (const dir of temps) fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The file one snippet runs as: load by name (import and require), then the snippet, then clean up. */
function snippetSource(name, snippet) {
  return `// The release rehearsal's snippet for ${name} (written by scripts/release-rehearsal.mjs).
import { spawn } from "node:child_process";
import * as crypto from "node:crypto";
import * as fs from "node:fs";
import { createRequire } from "node:module";
import * as os from "node:os";
import * as path from "node:path";

const t = (${toolkit.toString()})({ spawn, crypto, fs, os, path, require: createRequire(import.meta.url) });
let code = 0;
try {
  t.loads(${JSON.stringify(name)}, await import(${JSON.stringify(name)}));
  console.log(await (${snippet.toString()})(t));
} catch (error) {
  console.error(error?.stack ?? String(error));
  code = 1;
} finally {
  await t.cleanup();
}
process.exit(code);
`;
}

// ---------------------------------------------------------------------------------------------------------------
// Processes: every command runs in its own process group, so stopping it stops what it started.
// ---------------------------------------------------------------------------------------------------------------
const running = new Set();
let interrupted = false;

function signalGroup(child, signal) {
  try {
    process.kill(-child.pid, signal);
  } catch {
    // Already gone.
  }
}

async function stopProcess(child, graceMs = 5000) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((done) => child.once("exit", done));
  signalGroup(child, "SIGTERM");
  const timer = setTimeout(() => signalGroup(child, "SIGKILL"), graceMs);
  await exited;
  clearTimeout(timer);
}

/** The environment of every command: quiet, non-interactive, and no registry but the ones named here. */
function commandEnv(extra) {
  // A registry or provenance setting inherited (pnpm exports npm_config_* to scripts) would beat the .npmrc files.
  const inherited = Object.entries(process.env).filter(
    ([key]) => !/^npm_config_(.*registry|provenance)$/i.test(key),
  );
  return {
    ...Object.fromEntries(inherited),
    CI: "true",
    TURBO_TELEMETRY_DISABLED: "1",
    TURBO_DAEMON: "false",
    NO_COLOR: "1",
    FORCE_COLOR: "0",
    npm_config_update_notifier: "false",
    npm_config_fund: "false",
    npm_config_audit: "false",
    npm_config_provenance: "false",
    ...extra,
  };
}

/** Runs a command, its output appended to `log`; resolves with the exit code and the output. */
function run(command, args, { cwd, log, env = {}, timeoutMs = 30 * 60_000 }) {
  return new Promise((done) => {
    if (interrupted) return done({ code: 130, output: "(interrupted)" });
    appendFileSync(log, `\n$ cd ${cwd} && ${[command, ...args].join(" ")}\n`);
    const chunks = [];
    const child = spawn(command, args, {
      cwd,
      env: commandEnv(env),
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
    });
    running.add(child);
    const take = (chunk) => {
      chunks.push(chunk);
      appendFileSync(log, chunk);
    };
    child.stdout.on("data", take);
    child.stderr.on("data", take);
    const timer = setTimeout(() => {
      take(`\n(no exit within ${timeoutMs / 1000} s: stopped)\n`);
      signalGroup(child, "SIGKILL");
    }, timeoutMs);
    let settled = false;
    const settle = (code) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      running.delete(child);
      done({ code, output: Buffer.concat(chunks.map((c) => Buffer.from(c))).toString() });
    };
    child.on("error", (error) => {
      take(`${error.message}\n`);
      settle(127);
    });
    child.on("close", (code, signal) => settle(code ?? (signal ? 128 : 1)));
  });
}

/** The last `lines` non-empty lines of a command's output, indented for the console. */
function tail(output, lines = 25) {
  return output
    .split("\n")
    .filter((line) => line.trim() !== "")
    .slice(-lines)
    .map((line) => `      ${line}`)
    .join("\n");
}

async function must(promise, what) {
  const { code, output } = await promise;
  if (code !== 0) throw new Error(`${what} exited ${code}\n${tail(output)}`);
  return output;
}

// ---------------------------------------------------------------------------------------------------------------
// The registry.
// ---------------------------------------------------------------------------------------------------------------
/** Verdaccio's bin, installed once into the user's cache (never into the workspace or its lockfile). */
async function installVerdaccio(log) {
  const dir = join(homedir(), ".cache", "sessions-release-rehearsal", `verdaccio-${VERDACCIO}`);
  const manifest = join(dir, "node_modules", "verdaccio", "package.json");
  const bin = join(dir, "node_modules", "verdaccio", "bin", "verdaccio");
  if (existsSync(manifest) && JSON.parse(readFileSync(manifest, "utf8")).version === VERDACCIO) return bin;
  mkdirSync(dir, { recursive: true });
  const pkg = {
    name: "sessions-release-rehearsal-registry",
    private: true,
    dependencies: { verdaccio: VERDACCIO },
    // verdaccio-audit asks for node-fetch's `cjs` tag; 2.7.0 is the CommonJS line that runs on Node 20.
    overrides: { "node-fetch": "2.7.0" },
  };
  writeFileSync(join(dir, "package.json"), `${JSON.stringify(pkg, null, 2)}\n`);
  await must(run("npm", ["install", "--no-audit", "--no-fund"], { cwd: dir, log }), `npm install in ${dir}`);
  return bin;
}

function freePort() {
  return new Promise((done, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => done(port));
    });
  });
}

function verdaccioConfig(dir, port) {
  const quote = (text) => JSON.stringify(text);
  return `storage: ${quote(join(dir, "storage"))}
auth:
  htpasswd:
    file: ${quote(join(dir, "htpasswd"))}
    max_users: 10
uplinks:
  npmjs:
    url: https://registry.npmjs.org/
    timeout: 120s
    max_fails: 20
    fail_timeout: 10s
packages:
  # No proxy: @sessions/* comes only from what the rehearsal published (the real npm may hold the scope).
  "@sessions/*":
    access: $all
    publish: $authenticated
    unpublish: $authenticated
  "**":
    access: $all
    publish: $authenticated
    proxy: npmjs
web:
  enable: false
max_body_size: 200mb
log: { type: stdout, format: pretty, level: warn }
listen: 127.0.0.1:${port}
`;
}

/** Starts Verdaccio on a free loopback port; resolves once it answers `/-/ping`. */
async function startRegistry(bin, dir, logFile) {
  mkdirSync(dir, { recursive: true });
  const port = await freePort();
  const config = join(dir, "config.yaml");
  writeFileSync(config, verdaccioConfig(dir, port));
  const out = openSync(logFile, "a");
  const child = spawn(process.execPath, [bin, "--config", config, "--listen", `127.0.0.1:${port}`], {
    cwd: dir,
    env: commandEnv({}),
    detached: true,
    stdio: ["ignore", out, out],
  });
  running.add(child);
  child.on("exit", () => running.delete(child));
  const url = `http://127.0.0.1:${port}/`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`Verdaccio exited ${child.exitCode} (see ${logFile})`);
    const ok = await fetch(`${url}-/ping`).then(
      (response) => response.ok,
      () => false,
    );
    if (ok) return { url, child };
    if (Date.now() > deadline)
      throw new Error(`Verdaccio did not answer on ${url} within 60 s (see ${logFile})`);
    await new Promise((done) => setTimeout(done, 250));
  }
}

/** Creates the publishing user the way `npm adduser` does; resolves with its token. */
async function addUser(url) {
  const name = "rehearsal";
  const password = randomBytes(16).toString("hex");
  const response = await fetch(`${url}-/user/org.couchdb.user:${name}`, {
    method: "PUT",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ name, password }),
  });
  const body = await response.json().catch(() => ({}));
  if (!response.ok || typeof body.token !== "string") {
    throw new Error(`adding a user answered ${response.status}: ${JSON.stringify(body)}`);
  }
  return body.token;
}

/** An .npmrc that points everything, @sessions/* included, at the rehearsal registry. */
function npmrc(url, token) {
  const lines = [`registry=${url}`, `@sessions:registry=${url}`];
  if (token !== undefined) lines.push(`${url.replace(/^https?:/, "")}:_authToken=${token}`);
  return `${lines.join("\n")}\n`;
}

async function packument(url, name) {
  const response = await fetch(`${url}${name.replace("/", "%2f")}`);
  if (response.status === 404) return undefined;
  if (!response.ok) throw new Error(`GET ${name} answered ${response.status}`);
  return response.json();
}

/** Checks the registry holds every package at its version, as latest, with no `workspace:` range left in it. */
async function checkPublished(url, packages) {
  const problems = [];
  for (const { manifest } of packages) {
    const doc = await packument(url, manifest.name);
    const published = doc?.versions?.[manifest.version];
    if (published === undefined) {
      problems.push(`${manifest.name}@${manifest.version} is not on the registry`);
      continue;
    }
    if (doc["dist-tags"]?.latest !== manifest.version) {
      problems.push(`${manifest.name}: latest is ${doc["dist-tags"]?.latest}, not ${manifest.version}`);
    }
    for (const field of ["dependencies", "peerDependencies", "optionalDependencies"]) {
      for (const [dep, range] of Object.entries(published[field] ?? {})) {
        if (/^(workspace|catalog|link|file):/.test(range)) {
          problems.push(
            `${manifest.name}@${manifest.version} was published with ${field} ${dep}: "${range}"`,
          );
        }
      }
    }
  }
  if (problems.length > 0) throw new Error(problems.join("\n"));
}

// ---------------------------------------------------------------------------------------------------------------
// The clone and its packages.
// ---------------------------------------------------------------------------------------------------------------
/** `{ dir, manifest }` of every public package of the clone, read now (versions change between rounds). */
function publicPackages(clone) {
  return readdirSync(join(clone, "packages"), { withFileTypes: true })
    .filter((d) => d.isDirectory() && existsSync(join(clone, "packages", d.name, "package.json")))
    .map((d) => join(clone, "packages", d.name))
    .map((dir) => ({ dir, manifest: JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) }))
    .filter(({ manifest }) => manifest.private !== true)
    .sort((a, b) => a.manifest.name.localeCompare(b.manifest.name));
}

/** What the READMEs' install lines add besides our packages (`npm install @sessions/x discord.js`). */
function readmeExtras(packages) {
  const extras = new Set();
  for (const { dir } of packages) {
    const file = join(dir, "README.md");
    if (!existsSync(file)) continue;
    const line = readFileSync(file, "utf8")
      .split("\n")
      .find((l) => l.startsWith("npm install "));
    for (const word of (line ?? "").replace(/#.*/, "").trim().split(/\s+/).slice(2)) {
      if (!word.startsWith("-") && !word.startsWith("@sessions/")) extras.add(word);
    }
  }
  return [...extras];
}

/** Pending changesets (every .changeset/*.md but its README). */
function pendingChangesets(clone) {
  const dir = join(clone, ".changeset");
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => f.endsWith(".md") && f.toLowerCase() !== "readme.md")
    .map((f) => join(dir, f));
}

function parseVersion(version) {
  const match = /^(\d+)\.(\d+)\.(\d+)$/.exec(version);
  if (match === null)
    throw new Error(`version ${version} is not X.Y.Z: the rehearsal does not handle prereleases`);
  return match.slice(1).map(Number);
}

function nextPatch(version) {
  const [major, minor, patch] = parseVersion(version);
  return `${major}.${minor}.${patch + 1}`;
}

/** Whether `^from` admits `to` (semver: the leftmost non-zero part is fixed, so ^0.0.z admits only 0.0.z). */
function caretAdmits(from, to) {
  const [a, b, c] = parseVersion(from);
  const [x, y, z] = parseVersion(to);
  if (a > 0) return x === a && (y > b || (y === b && z >= c));
  if (b > 0) return x === 0 && y === b && z >= c;
  return x === 0 && y === 0 && z === c;
}

/** Which part of `pnpm release` failed, from its output. */
function failedPart(output, rootName) {
  if (output.includes("🦋")) return "`changeset publish` failed (see which packages above)";
  const escaped = rootName.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
  const parts = [...output.matchAll(new RegExp(`^> ${escaped}@\\S* (build|check:packages) `, "gm"))];
  const last = parts.at(-1)?.[1];
  if (last === "check:packages") return "`pnpm check:packages` failed, before anything was published";
  return "`pnpm build` failed, before anything was published";
}

// ---------------------------------------------------------------------------------------------------------------
// Fresh projects.
// ---------------------------------------------------------------------------------------------------------------
function freshProject(dir, name, registryUrl, extra = {}) {
  mkdirSync(dir, { recursive: true });
  const manifest = { name, version: "1.0.0", private: true, type: "module", ...extra };
  writeFileSync(join(dir, "package.json"), `${JSON.stringify(manifest, null, 2)}\n`);
  writeFileSync(join(dir, ".npmrc"), npmrc(registryUrl));
}

/** Versions of `name` anywhere in an `npm ls --json --all` tree, with the path to each. */
function versionsInTree(node, name, path = []) {
  const found = [];
  for (const [dep, child] of Object.entries(node.dependencies ?? {})) {
    if (dep === name) found.push({ path: [...path, dep].join(" > "), version: child.version });
    found.push(...versionsInTree(child, name, [...path, dep]));
  }
  return found;
}

// ---------------------------------------------------------------------------------------------------------------
// The rehearsal: one context every phase receives, the phases in order, and the summary.
// ---------------------------------------------------------------------------------------------------------------
const minutes = (ms) => (ms < 60_000 ? `${Math.round(ms / 1000)} s` : `${(ms / 60_000).toFixed(1)} min`);
class Stop extends Error {}

/** The commit `ref` names, or a usage error. */
function resolveRef(ref) {
  const result = spawnSync("git", ["rev-parse", "--verify", "--quiet", `${ref}^{commit}`], {
    cwd: root,
    encoding: "utf8",
  });
  const sha = result.stdout.trim();
  if (result.status !== 0 || sha === "") fail(`${ref} is not a commit of ${root}`);
  const dirty = spawnSync("git", ["status", "--porcelain", "--untracked-files=no"], {
    cwd: root,
    encoding: "utf8",
  }).stdout.trim();
  if (dirty && ref === "HEAD") {
    console.error(
      "release-rehearsal: the work tree has uncommitted changes; the rehearsal uses the commit only",
    );
  }
  return sha;
}

/** What every phase receives: the folders, the log, the registry once started, and what was found so far. */
function createContext(opts, sha) {
  const work = opts.dir ?? mkdtempSync(join(tmpdir(), `sessions-release-rehearsal-${sha.slice(0, 8)}-`));
  mkdirSync(work, { recursive: true });
  const ctx = {
    opts,
    sha,
    work,
    createdWork: opts.dir === undefined,
    log: join(work, "rehearsal.log"),
    clone: join(work, "clone"),
    npmProject: join(work, "npm-project"),
    pnpmProject: join(work, "pnpm-project"),
    registryDir: join(work, "registry"),
    registry: undefined,
    steps: [],
    notes: [],
    packages: new Map(), // name → { round1, round2, npm, pnpm, patched }
  };
  writeFileSync(ctx.log, "");
  for (const dir of [ctx.clone, ctx.npmProject, ctx.pnpmProject, ctx.registryDir]) {
    rmSync(dir, { recursive: true, force: true });
  }
  return ctx;
}

/** Runs one step and records it; resolves with whether it held. A failed step stops the rehearsal if `fatal`. */
async function step(ctx, what, fn, { fatal = true } = {}) {
  const t0 = Date.now();
  console.log(`› ${what}`);
  try {
    const detail = (await fn()) ?? "";
    ctx.steps.push({ what, ok: true, ms: Date.now() - t0, detail });
    console.log(`  ok   ${what} (${minutes(Date.now() - t0)})${detail ? `: ${detail}` : ""}`);
    return true;
  } catch (error) {
    const message = interrupted ? "interrupted" : String(error?.message ?? error);
    ctx.steps.push({ what, ok: false, ms: Date.now() - t0, detail: message.split("\n")[0], output: message });
    console.log(`  FAIL ${what} (${minutes(Date.now() - t0)}): ${message}`);
    if (fatal || interrupted) throw new Stop(what);
    return false;
  }
}

/** Runs every public package's snippet in `project`; `column` names where each result goes. */
async function runSnippets(ctx, project, column, list) {
  mkdirSync(join(project, "snippets"), { recursive: true });
  let failed = 0;
  for (const { manifest } of list) {
    const result = await runSnippet(ctx, project, manifest.name);
    ctx.packages.get(manifest.name)[column] = result;
    console.log(`  ${result.ok ? "ok  " : "FAIL"} [${column}] ${manifest.name}: ${result.detail}`);
    if (!result.ok && result.output) console.log(tail(result.output, 30));
    if (!result.ok) failed++;
  }
  if (failed > 0) throw new Error(`${failed} of ${list.length} snippets failed`);
  return `${list.length} snippets ran`;
}

async function runSnippet(ctx, project, name) {
  const snippet = SNIPPETS[name];
  if (snippet === undefined) {
    return { ok: false, detail: "no snippet: add one to SNIPPETS in scripts/release-rehearsal.mjs" };
  }
  const file = join(project, "snippets", `${name.split("/").pop()}.mjs`);
  writeFileSync(file, snippetSource(name, snippet));
  const { code, output } = await run(process.execPath, [file], {
    cwd: project,
    log: ctx.log,
    timeoutMs: 180_000,
  });
  const lines = output.split("\n").filter((l) => l.trim() !== "");
  if (code === 0) return { ok: true, detail: lines.at(-1) ?? "" };
  return { ok: false, detail: lines.find((l) => /error/i.test(l)) ?? `exit ${code}`, output };
}

async function cloneAndInstall(ctx) {
  const { clone, log, sha } = ctx;
  await step(ctx, "clone and install the locked dependencies", async () => {
    await must(run("git", ["clone", "--quiet", root, clone], { cwd: ctx.work, log }), "git clone");
    await must(run("git", ["checkout", "--quiet", "--detach", sha], { cwd: clone, log }), "git checkout");
    await must(run("bash", ["scripts/ensure-deps.sh"], { cwd: clone, log }), "scripts/ensure-deps.sh");
    return `${sha.slice(0, 10)}, pnpm install --frozen-lockfile`;
  });
  ctx.rootName = JSON.parse(readFileSync(join(clone, "package.json"), "utf8")).name;
  for (const { manifest } of publicPackages(clone))
    ctx.packages.set(manifest.name, { round1: manifest.version });
  const pending = pendingChangesets(clone);
  if (pending.length > 0) {
    ctx.notes.push(
      `${pending.length} pending changeset(s) at ${sha.slice(0, 10)}: round 1 publishes the versions package.json ` +
        "has; the release workflow would version them first. Round 2 sets them aside so that its bump is the " +
        "rehearsal's patch alone.",
    );
  }
}

async function startRehearsalRegistry(ctx) {
  await step(ctx, `start Verdaccio ${VERDACCIO} on 127.0.0.1`, async () => {
    const bin = await installVerdaccio(ctx.log);
    ctx.registry = await startRegistry(bin, ctx.registryDir, join(ctx.work, "verdaccio.log"));
    const { url } = ctx.registry;
    const token = await addUser(url);
    const names = [...ctx.packages.keys()];
    const docs = await Promise.all(names.map((name) => packument(url, name)));
    const leaked = names.filter((_, i) => docs[i] !== undefined);
    if (leaked.length > 0) throw new Error(`the registry serves ${leaked.join(", ")} before any publish`);
    // The clone's own .npmrc carries the token; nothing outside the work folder learns it.
    appendFileSync(join(ctx.clone, ".npmrc"), `\n${npmrc(url, token)}`);
    return `${url} (storage in ${ctx.registryDir}); @sessions/* not proxied, a user added`;
  });
}

/** `pnpm release` in the clone, then the registry must hold every public package at its version. */
async function publish(ctx, round) {
  const list = publicPackages(ctx.clone);
  await step(ctx, `round ${round}: pnpm release`, async () => {
    // npm_config_registry: changesets reads it to choose where `npm info` looks and where it publishes.
    const env = { npm_config_registry: ctx.registry.url };
    const { code, output } = await run("pnpm", ["release"], { cwd: ctx.clone, log: ctx.log, env });
    if (code !== 0)
      throw new Error(`${failedPart(output, ctx.rootName)} (exit ${code})\n${tail(output, 40)}`);
    await checkPublished(ctx.registry.url, list);
    for (const { manifest } of list) console.log(`       published ${manifest.name}@${manifest.version}`);
    return `${list.length} packages published at ${[...new Set(list.map(({ manifest }) => manifest.version))].join(", ")}`;
  });
  return list;
}

const caret = (list) => list.map(({ manifest }) => `${manifest.name}@^${manifest.version}`);

/** The npm project: install by caret range, the snippets, `tsc --noEmit`. Resolves with whether it installed. */
async function installWithNpm(ctx, list) {
  const { npmProject, log, registry } = ctx;
  const extras = readmeExtras(list);
  const installed = await step(
    ctx,
    "npm install by caret range in a fresh project",
    async () => {
      freshProject(npmProject, "rehearsal-npm", registry.url);
      const args = ["install", `--registry=${registry.url}`, "--prefer-online", ...caret(list), ...extras];
      const tools = [`typescript@${TYPESCRIPT}`, "@types/node@20"];
      await must(run("npm", [...args, ...tools], { cwd: npmProject, log }), "npm install");
      return `${caret(list)[0]} … and ${extras.join(", ")}`;
    },
    { fatal: false },
  );
  if (!installed) return false;
  await step(ctx, "snippets in the npm project", () => runSnippets(ctx, npmProject, "npm", list), {
    fatal: false,
  });
  await step(ctx, "tsc --noEmit on a typed use (npm project)", () => typeCheck(ctx), { fatal: false });
  return true;
}

async function typeCheck(ctx) {
  const { npmProject, log } = ctx;
  writeFileSync(join(npmProject, "typed.ts"), TYPED_USE);
  const compilerOptions = {
    target: "es2022",
    module: "nodenext",
    moduleResolution: "nodenext",
    strict: true,
    exactOptionalPropertyTypes: true,
    noUncheckedIndexedAccess: true,
    skipLibCheck: true,
    noEmit: true,
    types: ["node"],
  };
  const tsconfig = { compilerOptions, files: ["typed.ts"] };
  writeFileSync(join(npmProject, "tsconfig.json"), `${JSON.stringify(tsconfig, null, 2)}\n`);
  // `--`: without it npx takes `-p` for its own --package.
  await must(run("npx", ["--no", "--", "tsc", "-p", "tsconfig.json"], { cwd: npmProject, log }), "tsc");
  return `typescript@${TYPESCRIPT}, strict + exactOptionalPropertyTypes, nodenext`;
}

/** The pnpm project: `pnpm add` by caret range, then the snippets. */
async function installWithPnpm(ctx, list) {
  const { pnpmProject, log, registry } = ctx;
  const added = await step(
    ctx,
    "pnpm add by caret range in a fresh project",
    async () => {
      // pnpm builds no dependency unless allowed: better-sqlite3 (native) and esbuild.
      freshProject(pnpmProject, "rehearsal-pnpm", registry.url, {
        pnpm: { onlyBuiltDependencies: ["better-sqlite3", "esbuild"] },
      });
      // A metadata cache of its own: an earlier rehearsal on the same port published other tarballs.
      appendFileSync(join(pnpmProject, ".npmrc"), `cache-dir=${join(ctx.work, "pnpm-cache")}\n`);
      const args = ["add", `--registry=${registry.url}`, ...caret(list), ...readmeExtras(list)];
      await must(run("pnpm", args, { cwd: pnpmProject, log }), "pnpm add");
      return "the same packages";
    },
    { fatal: false },
  );
  if (!added) return;
  await step(ctx, "snippets in the pnpm project", () => runSnippets(ctx, pnpmProject, "pnpm", list), {
    fatal: false,
  });
}

/** A patch changeset for @sessions/core and `pnpm version-packages`: every public package at the next patch. */
async function versionPatch(ctx, from) {
  const { clone, log } = ctx;
  const patch = nextPatch(from);
  await step(ctx, "round 2: a patch changeset for @sessions/core, pnpm version-packages", async () => {
    for (const file of pendingChangesets(clone)) unlinkSync(file);
    const changeset = `---\n"@sessions/core": patch\n---\n\n${PATCH_NOTE}\n`;
    writeFileSync(join(clone, ".changeset", "rehearsal-patch.md"), changeset);
    await must(run("pnpm", ["version-packages"], { cwd: clone, log }), "pnpm version-packages");
    const versioned = publicPackages(clone);
    for (const { manifest } of versioned) ctx.packages.get(manifest.name).round2 = manifest.version;
    const wrong = versioned.filter(({ manifest }) => manifest.version !== patch);
    if (wrong.length > 0) {
      const found = wrong.map(({ manifest }) => `${manifest.name} is ${manifest.version}`).join(", ");
      throw new Error(`the fixed group should put every public package at ${patch}: ${found}`);
    }
    const changelog = join(clone, "packages", "core", "CHANGELOG.md");
    const text = existsSync(changelog) ? readFileSync(changelog, "utf8") : "";
    if (!text.includes(`## ${patch}`) || !text.includes(PATCH_NOTE)) {
      throw new Error(`packages/core/CHANGELOG.md has no "## ${patch}" entry with the changeset's text`);
    }
    return `every public package at ${patch}; packages/core/CHANGELOG.md has the entry`;
  });
  return patch;
}

/** The npm project takes the patch by its caret ranges; dependants resolve @sessions/core to it too. */
async function takePatchWithNpm(ctx, from, patch, list) {
  const held = await step(
    ctx,
    "the npm project takes the patch by its caret ranges",
    () => updateNpm(ctx, from, patch, list),
    {
      fatal: false,
    },
  );
  if (!held) return;
  await step(
    ctx,
    "snippets in the npm project after the patch",
    () => runSnippets(ctx, ctx.npmProject, "patched", list),
    {
      fatal: false,
    },
  );
}

async function updateNpm(ctx, from, patch, list) {
  const { npmProject, log, registry } = ctx;
  const names = list.map(({ manifest }) => manifest.name);
  const flags = [`--registry=${registry.url}`, "--prefer-online"];
  if (caretAdmits(from, patch)) {
    await must(run("npm", ["update", ...flags, ...names], { cwd: npmProject, log }), "npm update");
  } else {
    ctx.notes.push(
      `^${from} does not admit ${patch} (semver fixes the leftmost non-zero part, so ^0.0.z is exactly 0.0.z): ` +
        `\`npm update\` cannot take this patch; installed ^${patch} instead. From 0.1.0 on, caret ranges take patches.`,
    );
    await must(run("npm", ["install", ...flags, ...caret(list)], { cwd: npmProject, log }), "npm install");
  }
  const stale = names
    .map((name) => {
      const file = join(npmProject, "node_modules", ...name.split("/"), "package.json");
      return { name, version: JSON.parse(readFileSync(file, "utf8")).version };
    })
    .filter(({ version }) => version !== patch);
  if (stale.length > 0)
    throw new Error(`still installed: ${stale.map((s) => `${s.name}@${s.version}`).join(", ")}`);
  // stdout alone: npm ls exits non-zero on unrelated peer warnings, and its JSON is what counts.
  const ls = spawnSync("npm", ["ls", "@sessions/core", "--all", "--json"], {
    cwd: npmProject,
    env: commandEnv({}),
    encoding: "utf8",
  });
  appendFileSync(log, `\n$ npm ls @sessions/core --all --json\n${ls.stdout}${ls.stderr}`);
  const found = versionsInTree(JSON.parse(ls.stdout || "{}"), "@sessions/core");
  if (found.length === 0 || found.some(({ version }) => version !== patch)) {
    const paths = found.map((f) => `${f.path}@${f.version}`).join(", ");
    throw new Error(`npm ls @sessions/core: ${paths || "not found"}`);
  }
  const how = caretAdmits(from, patch) ? "npm update" : `npm install ^${patch}`;
  return `${how}: all ${names.length} at ${patch}; @sessions/core is ${patch} on all ${found.length} paths of npm ls (dependants included)`;
}

async function rehearse(ctx) {
  await cloneAndInstall(ctx);
  await startRehearsalRegistry(ctx);
  const round1 = await publish(ctx, 1);
  const npmInstalled = await installWithNpm(ctx, round1);
  await installWithPnpm(ctx, round1);
  const from = ctx.packages.get("@sessions/core")?.round1;
  if (from === undefined) throw new Error("the clone has no public @sessions/core");
  const patch = await versionPatch(ctx, from);
  const round2 = await publish(ctx, 2);
  if (npmInstalled) await takePatchWithNpm(ctx, from, patch, round2);
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const started = Date.now();
  const ctx = createContext(opts, resolveRef(opts.ref));
  console.log(
    `release-rehearsal: ${opts.ref} (${ctx.sha.slice(0, 10)}) in ${ctx.work}; every command's output: ${ctx.log}`,
  );
  let ok = false;
  try {
    await rehearse(ctx);
    ok = ctx.steps.every((s) => s.ok);
  } catch (error) {
    if (!(error instanceof Stop)) {
      const detail = String(error?.stack ?? error);
      ctx.steps.push({
        what: "(the rehearsal itself)",
        ok: false,
        ms: 0,
        detail: detail.split("\n")[0],
        output: detail,
      });
      console.log(`  FAIL ${detail}`);
    }
  } finally {
    await cleanup(ctx, ok);
  }
  const ms = Date.now() - started;
  printSummary(ctx, ok, ms);
  if (opts.json) {
    const { sha, work, notes, steps, packages } = ctx;
    const summary = {
      ref: opts.ref,
      sha,
      work,
      ok,
      ms,
      notes,
      steps,
      packages: Object.fromEntries(packages),
    };
    writeFileSync(opts.json, `${JSON.stringify(summary, null, 2)}\n`);
  }
  process.exit(interrupted ? 130 : ok ? 0 : 1);
}

/** Stops Verdaccio and whatever still runs, then removes the work folder (keeps the logs when something failed). */
async function cleanup(ctx, ok) {
  await Promise.all([...running].map((child) => stopProcess(child)));
  if (ctx.registry !== undefined) await stopProcess(ctx.registry.child);
  if (ctx.opts.keep) return;
  if (ok && ctx.createdWork) rmSync(ctx.work, { recursive: true, force: true });
  else {
    for (const dir of ["clone", "npm-project", "pnpm-project", "registry", "pnpm-cache"]) {
      rmSync(join(ctx.work, dir), { recursive: true, force: true });
    }
  }
}

function printSummary({ opts, sha, work, steps, packages, notes }, ok, ms) {
  const cell = (result) => (result === undefined ? "—" : result.ok ? "ok" : "FAILED");
  console.log(
    `\nrelease rehearsal of ${opts.ref} (${sha.slice(0, 10)}): ${ok ? "all held" : "FAILED"}, ${minutes(ms)}`,
  );
  console.log("\n| step | result | took | detail |");
  console.log("| --- | --- | --- | --- |");
  for (const s of steps) {
    console.log(
      `| ${s.what} | ${s.ok ? "ok" : "FAILED"} | ${minutes(s.ms)} | ${s.detail.replaceAll("|", "\\|")} |`,
    );
  }
  if (packages.size > 0) {
    console.log("\n| package | round 1 | round 2 | npm snippet | pnpm snippet | npm after the patch |");
    console.log("| --- | --- | --- | --- | --- | --- |");
    for (const [name, p] of packages) {
      console.log(
        `| ${name} | ${p.round1 ?? "—"} | ${p.round2 ?? "—"} | ${cell(p.npm)} | ${cell(p.pnpm)} | ${cell(p.patched)} |`,
      );
    }
  }
  for (const note of notes) console.log(`\nnote: ${note}`);
  if (!ok || opts.keep) console.log(`\n${opts.keep ? "kept" : "logs"} in ${work}`);
}

for (const signal of ["SIGINT", "SIGTERM"]) {
  process.on(signal, () => {
    if (interrupted) return;
    interrupted = true;
    console.error(`\nrelease-rehearsal: ${signal}: stopping every process it started`);
    for (const child of running) signalGroup(child, "SIGTERM");
  });
}

if (process.argv[1] && resolve(process.argv[1]) === resolve(import.meta.filename)) await main();
