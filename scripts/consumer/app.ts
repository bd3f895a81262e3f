// A newcomer's program, as scripts/check-consumer.mjs runs it: compiled in a fresh npm project whose tsconfig is
// `tsc --init`'s (strict, exactOptionalPropertyTypes, noUncheckedIndexedAccess, nodenext) against the packed
// tarballs, then run with node — once with ai@6 and once with ai@7. Every optional option below gets a value that
// may be undefined, the way real code passes environment variables.
import { execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import { promisify } from "node:util";
import { createDiscordAdapter } from "@sessions/adapter-discord";
import { createTelegramAdapter, initTelegramBot } from "@sessions/adapter-telegram";
import {
  createAgentToAgentPolicy,
  formatDuration,
  parseSessionsConfig,
  resolveVisibility,
  SessionsError,
} from "@sessions/core";
import { createGateway, createMemoryStore, createScriptedRunner } from "@sessions/gateway";
import { createAiSdkRunner } from "@sessions/gateway/ai-sdk";
import { createGatewayClient, createSessionTools } from "@sessions/gateway-client";
import { toAiSdkTools } from "@sessions/gateway-client/ai-sdk";
import { createSessionsMcpServer } from "@sessions/mcp";
import { createFakeTelegramApi } from "@sessions/testing";
import { generateText, simulateReadableStream, stepCountIs } from "ai";
import { MockLanguageModelV3 } from "ai/test";
import { Client, GatewayIntentBits } from "discord.js";
import { Bot } from "grammy";

const run = promisify(execFile);
const maybe = (name: string): string | undefined => process.env[name];
function check(ok: boolean, what: string): void {
  if (!ok) throw new Error(`consumer check failed: ${what}`);
}

// Core: the contract, including the fixed defects.
check(resolveVisibility({ visibility: "ALL" }) === "all", 'resolveVisibility({ visibility: "ALL" }) is all');
check(
  !createAgentToAgentPolicy({ enabled: true, allow: [" "] }).isAllowed("main", "ops"),
  "blank allow fails closed",
);
check(formatDuration(0) === "n/a", "formatDuration(0) is n/a");
const config = parseSessionsConfig({ tools: { sessions: { visibility: "all" } } });

// A gateway with a scripted agent, on loopback, token from the environment (may be unset).
const token = maybe("CONSUMER_GATEWAY_TOKEN");
const gateway = createGateway({
  config,
  store: createMemoryStore(),
  runner: createScriptedRunner({ agents: {}, fallback: (turn) => `echo: ${turn.text}` }),
});
const server = await gateway.listen({
  host: "127.0.0.1",
  port: 0,
  auth: token === undefined ? "none" : { token },
  tickIntervalMs: undefined,
});

const client = createGatewayClient({ url: server.url, token, reconnect: false, requestTimeoutMs: undefined });
const started = await client.agent({ message: "hello", idempotencyKey: randomUUID() });
const runId: string | undefined = started.runId;
const waited = await client.agentWait({ runId: runId ?? "", timeoutMs: 10_000 });
check(waited.status === "ok", `agent.wait is ok (got ${waited.status})`);
const result = await client.waitRun(started.runId, { timeoutMs: 10_000 });
check(result.reply === "echo: hello", `the scripted agent replied (got ${result.reply})`);

// The session tools through the AI SDK (whichever major is installed): a mock model calls sessions_list.
const usage = {
  inputTokens: { total: 5, noCache: 5, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 2, text: 2, reasoning: undefined },
};
const model = new MockLanguageModelV3({
  doGenerate: [
    {
      content: [{ type: "tool-call", toolCallId: "c1", toolName: "sessions_list", input: "{}" }],
      finishReason: { unified: "tool-calls", raw: "tool_calls" },
      usage,
      warnings: [],
    },
    {
      content: [{ type: "text", text: "one session" }],
      finishReason: { unified: "stop", raw: "stop" },
      usage,
      warnings: [],
    },
  ],
});
const tools = toAiSdkTools(createSessionTools(client, { requesterKey: "main", sandboxed: undefined }));
const { text, steps } = await generateText({ model, tools, prompt: "list", stopWhen: stepCountIs(3) });
check(text === "one session", `generateText finished (got ${text})`);
check(steps[0]?.toolResults[0]?.toolName === "sessions_list", "the model's tool call ran on the gateway");

// The gateway's own AI SDK runner, streaming from a mock model.
const streaming = new MockLanguageModelV3({
  doStream: async () => ({
    stream: simulateReadableStream({
      initialDelayInMs: null,
      chunkDelayInMs: null,
      chunks: [
        { type: "stream-start", warnings: [] },
        { type: "text-start", id: "t" },
        { type: "text-delta", id: "t", delta: "streamed" },
        { type: "text-end", id: "t" },
        { type: "finish", finishReason: { unified: "stop", raw: "stop" }, usage },
      ],
    }),
  }),
});
const aiGateway = createGateway({
  store: createMemoryStore(),
  runner: createAiSdkRunner({ model: streaming, system: maybe("CONSUMER_SYSTEM"), maxSteps: undefined }),
});
const aiRun = await aiGateway.agent({ message: "hi", idempotencyKey: randomUUID() });
const aiResult = await aiGateway.agentWait({ runId: aiRun.runId, timeoutMs: 10_000 });
check(aiResult.reply === "streamed", `createAiSdkRunner replied (got ${aiResult.reply})`);
await aiGateway.close();

// Adapters and the MCP server accept options that may be undefined.
const fake = await createFakeTelegramApi({ forumChatIds: undefined });
const bot = new Bot(fake.token, { client: { apiRoot: fake.apiRoot } });
await initTelegramBot(bot, { timeoutMs: 10_000, signal: undefined });
createTelegramAdapter({ bot, accountId: maybe("TELEGRAM_ACCOUNT"), ownerIds: undefined });
await fake.close();
const unreachable = new Bot("1:x", { client: { apiRoot: "http://127.0.0.1:9" } });
const failed = await initTelegramBot(unreachable, { timeoutMs: 300 }).then(
  () => undefined,
  (error: unknown) => error,
);
check(
  SessionsError.isInstance(failed) && failed.code === "unavailable",
  "an unreachable Bot API is a typed error",
);
const discord = new Client({ intents: [GatewayIntentBits.Guilds] });
createDiscordAdapter({ client: discord, accountId: maybe("DISCORD_ACCOUNT") });
createSessionsMcpServer({ client, requesterKey: "main", name: maybe("MCP_NAME"), version: undefined });

// The published CLI: `npx @sessions/cli serve --help`, and a client command against this gateway.
const help = await run("npx", ["--no", "@sessions/cli", "serve", "--help"]);
check(/--drain-ms <N>/.test(help.stdout), "sessions-gateway serve --help documents --drain-ms");
const listed = await run(
  "npx",
  ["--no", "@sessions/cli", "sessions", "list", "--json", "--url", server.url],
  {
    env: { ...process.env, ...(token === undefined ? {} : { SESSIONS_GATEWAY_TOKEN: token }) },
  },
);
const page = JSON.parse(listed.stdout) as { sessions: { key: string; kind: string; channel: string }[] };
const main = page.sessions.find((s) => s.key === "agent:main:main");
check(
  main?.kind === "main" && main.channel === "unknown",
  "the CLI lists main as kind main / channel unknown",
);
const unknown = await run("npx", ["--no", "@sessions/cli", "serve", "--bogus"]).then(
  () => undefined,
  (error: { code?: number; stderr?: string }) => error,
);
check(unknown?.code === 2, "an unknown option exits 2");

await client.close();
await gateway.close();
console.log("consumer: ok");
