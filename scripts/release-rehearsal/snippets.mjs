// ---------------------------------------------------------------------------------------------------------------
// The snippets: one per public package, run in each fresh project after `import` and `require` of the package by
// name have both loaded it with the same exports. Each is serialised into its own file, so it may use only its
// argument `t` (see `toolkit`) and dynamic imports; it returns one line saying what it proved.
// ---------------------------------------------------------------------------------------------------------------
export const SNIPPETS = {
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
export const TYPED_USE = `import { type ParsedSessionKey, parseSessionKey } from "@sessions/core";
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
export function snippetSource(name, snippet) {
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
