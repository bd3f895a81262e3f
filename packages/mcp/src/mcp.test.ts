import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { getDefaultEnvironment, StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { sessionTools } from "@sessions/core";
import { createGatewayClient, type GatewayClient } from "@sessions/gateway-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseCliArgs } from "./args.js";

const here = dirname(fileURLToPath(import.meta.url));
const packageDir = dirname(here);
const cli = join(here, "cli.ts");
const fixture = join(packageDir, "..", "gateway-client", "src", "gateway-process.fixture.ts");
const TOKEN = "mcp-t0ken";
const TOOL_NAMES = ["sessions_list", "sessions_history", "sessions_send", "sessions_spawn", "agents_list"];

const dir = mkdtempSync(join(tmpdir(), "sessions-mcp-"));
const children = new Set<ChildProcess>();
const mcpClients: Client[] = [];
let gatewayProcess: ChildProcess;
let url: string;
let seed: GatewayClient;
let mcp: Client;

function startGatewayProcess(db: string): Promise<{ child: ChildProcess; port: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", fixture, db, "0", TOKEN], {
      cwd: dirname(fixture),
      stdio: ["ignore", "pipe", "pipe"],
    });
    children.add(child);
    let out = "";
    let err = "";
    child.stderr?.on("data", (d) => {
      err += String(d);
    });
    child.stdout?.on("data", (d) => {
      out += String(d);
      const match = /listening (\d+)/.exec(out);
      if (match) resolve({ child, port: Number(match[1]) });
    });
    child.on("exit", (code) => reject(new Error(`gateway process exited (${code}): ${err}`)));
  });
}

async function connectMcp(args: string[]): Promise<{ client: Client; transport: StdioClientTransport }> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: ["--import", "tsx", cli, ...args],
    cwd: packageDir,
    env: getDefaultEnvironment(),
    stderr: "pipe",
  });
  // Read the server's stderr (so its pipe never fills); shown only when DEBUG_MCP is set.
  transport.stderr?.on("data", (d) => {
    if (process.env.DEBUG_MCP) process.stderr.write(d);
  });
  const client = new Client({ name: "sessions-mcp-test", version: "0.0.0" });
  mcpClients.push(client);
  await client.connect(transport);
  return { client, transport };
}

function text(result: Awaited<ReturnType<Client["callTool"]>>): string {
  const first = (result as CallToolResult).content[0];
  if (first?.type !== "text") throw new Error(`expected a text content block, got ${JSON.stringify(result)}`);
  return first.text;
}

/** A successful call: the text block and structuredContent carry the same result. */
async function call(client: Client, name: string, args: Record<string, unknown> = {}) {
  const result = await client.callTool({ name, arguments: args });
  if (result.isError) throw new Error(`${name} failed: ${text(result)}`);
  expect(JSON.parse(text(result))).toEqual(result.structuredContent);
  return result.structuredContent as Record<string, unknown>;
}

function runCli(args: string[], env: NodeJS.ProcessEnv = getDefaultEnvironment()) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", cli, ...args], { cwd: packageDir, env });
    children.add(child);
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => {
      stdout += String(d);
    });
    child.stderr.on("data", (d) => {
      stderr += String(d);
    });
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
    child.stdin.end();
  });
}

beforeAll(async () => {
  const started = await startGatewayProcess(join(dir, "gateway.db"));
  gatewayProcess = started.child;
  url = `ws://127.0.0.1:${started.port}`;
  seed = createGatewayClient({ url, token: TOKEN });
  const { runId } = await seed.agent({ message: "hi", idempotencyKey: "mcp-seed-1" });
  expect(await seed.waitRun(runId, { timeoutMs: 60_000 })).toMatchObject({ status: "ok", reply: "echo: hi" });
  ({ client: mcp } = await connectMcp(["--url", url, "--token", TOKEN, "--session", "main"]));
});

afterAll(async () => {
  // Closing ends each server's stdin, then escalates to SIGTERM and SIGKILL (StdioClientTransport.close).
  for (const client of mcpClients) await client.close().catch(() => {});
  await seed?.close();
  if (gatewayProcess !== undefined && gatewayProcess.exitCode === null) {
    const exited = new Promise((r) => gatewayProcess.once("exit", r));
    gatewayProcess.kill("SIGTERM");
    await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
  }
  for (const child of children)
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  rmSync(dir, { recursive: true, force: true });
});

describe("sessions-mcp over stdio against a real gateway", () => {
  it("lists exactly the five session tools, with the core's JSON Schemas as input schemas", async () => {
    expect(mcp.getServerVersion()).toMatchObject({ name: "sessions" });
    const { tools } = await mcp.listTools();
    expect(tools.map((t) => t.name)).toEqual(TOOL_NAMES);
    for (const tool of tools) {
      expect(tool.inputSchema.type).toBe("object");
      expect(tool.inputSchema).not.toHaveProperty("$schema");
      const { $schema: _dialect, ...expected } =
        sessionTools[tool.name as keyof typeof sessionTools].jsonSchema;
      expect(tool.inputSchema).toEqual(expected);
      expect(tool.description).toBe(sessionTools[tool.name as keyof typeof sessionTools].description);
    }
    expect(tools.find((t) => t.name === "sessions_list")?.annotations?.readOnlyHint).toBe(true);
    expect(tools.find((t) => t.name === "sessions_send")?.annotations?.readOnlyHint).toBe(false);
  });

  it("runs agents_list, sessions_list and sessions_history on the gateway as the requester", async () => {
    expect(await call(mcp, "agents_list")).toEqual({
      requester: "main",
      allowAny: false,
      agents: [{ id: "main", configured: false }],
    });
    const list = (await call(mcp, "sessions_list", { limit: 10 })) as {
      count: number;
      sessions: { key: string }[];
    };
    expect(list.sessions.map((s) => s.key)).toContain("main");
    expect(list.count).toBe(list.sessions.length);
    const history = (await call(mcp, "sessions_history", { sessionKey: "main" })) as {
      status: string;
      messages: { role: string; content: unknown }[];
    };
    expect(history.status).toBe("ok");
    expect(history.messages).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ role: "user", content: "hi" }),
        expect.objectContaining({ role: "assistant", content: "echo: hi" }),
      ]),
    );
  });

  it("spawns a sub-agent and sends a message into it (visible: it is in the requester's tree)", async () => {
    const spawned = (await call(mcp, "sessions_spawn", { task: "ping", label: "helper" })) as {
      status: string;
      runId: string;
      childSessionKey: string;
    };
    expect(spawned).toMatchObject({ status: "accepted", mode: "run" });
    expect(spawned.childSessionKey).toMatch(/subagent/);
    expect(await seed.waitRun(spawned.runId, { timeoutMs: 60_000 })).toMatchObject({
      status: "ok",
      reply: "echo: ping",
    });
    const sent = await call(mcp, "sessions_send", {
      sessionKey: spawned.childSessionKey,
      message: "status?",
      timeoutSeconds: 60,
    });
    expect(sent).toMatchObject({ status: "ok", reply: "echo: status?", sessionKey: spawned.childSessionKey });
    const list = (await call(mcp, "sessions_list", {})) as { sessions: { key: string }[] };
    expect(list.sessions.map((s) => s.key)).toEqual(
      expect.arrayContaining(["main", spawned.childSessionKey]),
    );
  });

  it("reports invalid params as isError naming the field, and keeps working afterwards", async () => {
    const bogus = await mcp.callTool({ name: "sessions_list", arguments: { kinds: ["bogus"] } });
    expect(bogus.isError).toBe(true);
    expect(text(bogus)).toMatch(/^invalid_params: .*kinds\[0\]/);
    expect(bogus.structuredContent).toBeUndefined();

    const missing = await mcp.callTool({ name: "sessions_history", arguments: {} });
    expect(missing.isError).toBe(true);
    expect(text(missing)).toMatch(/^invalid_params: .*sessionKey/);

    const extra = await mcp.callTool({ name: "agents_list", arguments: { nope: 1 } });
    expect(extra.isError).toBe(true);
    expect(text(extra)).toMatch(/^invalid_params: /);

    const unknown = await mcp.callTool({ name: "sessions_delete", arguments: {} });
    expect(unknown.isError).toBe(true);
    expect(text(unknown)).toMatch(/^invalid_params: Unknown tool: "sessions_delete"/);

    expect(await call(mcp, "agents_list")).toMatchObject({ requester: "main" });
    expect((await mcp.listTools()).tools).toHaveLength(5);
  });

  it("reports gateway errors as isError tool results (a wrong token: forbidden) without crashing", async () => {
    const { client } = await connectMcp(["--url", url, "--token", "not-the-token", "--session", "main"]);
    const denied = await client.callTool({ name: "agents_list", arguments: {} });
    expect(denied.isError).toBe(true);
    expect(text(denied)).toMatch(/^forbidden: /);
    const again = await client.callTool({ name: "sessions_list", arguments: {} });
    expect(again.isError).toBe(true);
    expect((await client.listTools()).tools).toHaveLength(5);
    await client.close();
  });

  it("takes the token from SESSIONS_GATEWAY_TOKEN and exits 0 when stdin closes", async () => {
    const withEnv = parseCliArgs(["--url", url, "--session", "main"], { SESSIONS_GATEWAY_TOKEN: TOKEN });
    expect(withEnv).toEqual({ kind: "run", options: { url, session: "main", token: TOKEN } });
    const flagWins = parseCliArgs(["--url", url, "--session", "s", "--token", "a", "--sandboxed"], {
      SESSIONS_GATEWAY_TOKEN: "b",
    });
    expect(flagWins).toEqual({ kind: "run", options: { url, session: "s", token: "a", sandboxed: true } });

    const run = await runCli(["--url", url, "--session", "main"], {
      ...getDefaultEnvironment(),
      SESSIONS_GATEWAY_TOKEN: TOKEN,
    });
    expect(run).toMatchObject({ code: 0, stdout: "" });
  });

  it("exits 2 with a one-line usage error on stderr for missing or invalid arguments", async () => {
    const noUrl = await runCli(["--session", "main", "--token", TOKEN]);
    expect(noUrl.code).toBe(2);
    expect(noUrl.stdout).toBe("");
    expect(noUrl.stderr).toMatch(/^sessions-mcp: missing --url; usage: sessions-mcp --url /);
    expect(noUrl.stderr.trimEnd().split("\n")).toHaveLength(1);

    for (const args of [
      ["--url", url],
      ["--url", "http://127.0.0.1:1", "--session", "main"],
      ["--url", url, "--session", "main", "--bogus"],
      ["--url", url, "--session", "main", "extra"],
    ]) {
      const result = await runCli(args);
      expect(result.code, args.join(" ")).toBe(2);
      expect(result.stdout).toBe("");
      expect(result.stderr.trimEnd().split("\n")).toHaveLength(1);
      expect(result.stderr).toContain("usage: sessions-mcp");
    }
  });
});
