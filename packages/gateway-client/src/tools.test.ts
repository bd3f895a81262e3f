import type { Tool as AnthropicTool } from "@anthropic-ai/sdk/resources/messages";
import { createGateway, createMemoryStore, createScriptedRunner, type Gateway } from "@sessions/gateway";
import { generateText, stepCountIs } from "ai";
import { MockLanguageModelV3 } from "ai/test";
import Ajv2020 from "ajv/dist/2020.js";
import type { ChatCompletionTool } from "openai/resources/chat/completions";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { toAiSdkTools } from "./ai-sdk.js";
import {
  createGatewayClient,
  createSessionTools,
  type GatewayClient,
  runToolCall,
  type SessionTool,
  toAnthropicTools,
  toOpenAiTools,
} from "./index.js";

let gateway: Gateway;
let client: GatewayClient;
let tools: SessionTool[];

beforeAll(async () => {
  gateway = createGateway({
    store: createMemoryStore(),
    runner: createScriptedRunner({ agents: { main: (t) => `echo: ${t.text}`, ops: () => "ops here" } }),
    config: { tools: { sessions: { visibility: "agent" } } },
  });
  const server = await gateway.listen({ auth: { token: "k" } });
  client = createGatewayClient({ url: server.url, token: "k" });
  await gateway.agent({ message: "hello", idempotencyKey: "seed" });
  await gateway.agent({ message: "x", idempotencyKey: "seed-2", sessionKey: "agent:main:chat:group:ops" });
  tools = createSessionTools(client, { requesterKey: "main" });
});

afterAll(async () => {
  await client.close();
  await gateway.close({ drainMs: 0 });
});

describe("createSessionTools", () => {
  it("returns the five tools, executing on the gateway as the requester", async () => {
    expect(tools.map((t) => t.name)).toEqual([
      "sessions_list",
      "sessions_history",
      "sessions_send",
      "sessions_spawn",
      "agents_list",
    ]);
    const list = (await tools[0]?.execute({ limit: 5 })) as { sessions: { key: string }[] };
    expect(list.sessions.map((s) => s.key).sort()).toEqual(["agent:main:chat:group:ops", "main"]);
    const sent = await runToolCall(
      tools,
      "sessions_send",
      JSON.stringify({ sessionKey: "agent:main:chat:group:ops", message: "status?" }),
    );
    expect(sent).toMatchObject({ status: "ok", reply: "echo: status?" });
  });

  it("validates parameters before sending and reports model mistakes as readable results", async () => {
    await expect(tools[0]?.execute({ kinds: ["bogus"] })).rejects.toMatchObject({
      code: "invalid_params",
      field: "kinds[0]",
    });
    expect(await runToolCall(tools, "sessions_list", "{oops")).toMatchObject({
      status: "error",
      code: "invalid_params",
    });
    expect(await runToolCall(tools, "nope", {})).toMatchObject({ status: "error", code: "unknown_tool" });
    expect(await runToolCall(tools, "sessions_history", {})).toMatchObject({
      status: "error",
      code: "invalid_params",
    });
    const ops = "agent:main:chat:group:ops";
    const listAs = async (requesterKey: string, sandboxed: boolean) => {
      const [list] = createSessionTools(client, { requesterKey, sandboxed, only: ["sessions_list"] });
      if (list === undefined) throw new Error("sessions_list missing");
      return ((await list.execute({})) as { sessions: { key: string }[] }).sessions.map((s) => s.key);
    };
    expect(await listAs(ops, true)).toEqual([ops]);
    // Sandboxing sticks to the session it was asked for, and only to that one.
    expect(await listAs(ops, false)).toEqual([ops]);
    expect((await listAs("main", false)).sort()).toEqual([ops, "main"]);
  });
});

describe("converters", () => {
  const ajv = new Ajv2020({ strict: true, strictRequired: false, allowUnionTypes: true });

  it("produces OpenAI function definitions (checked against the openai package's types and JSON Schema)", () => {
    const openai: ChatCompletionTool[] = toOpenAiTools(tools);
    expect(openai).toHaveLength(5);
    for (const def of openai) {
      if (def.type !== "function") throw new Error("expected function tools");
      expect(def.function.parameters).toMatchObject({ type: "object", additionalProperties: false });
      expect(def.function.parameters).not.toHaveProperty("$schema");
      const validate = ajv.compile(def.function.parameters as object);
      expect(validate({ __unknown: 1 })).toBe(false);
    }
    const send = openai.find((d) => d.type === "function" && d.function.name === "sessions_send");
    const validate = ajv.compile((send as { function: { parameters: object } }).function.parameters);
    expect(validate({ sessionKey: "main", message: "hi", timeoutSeconds: 0 })).toBe(true);
    expect(validate({ sessionKey: "main" })).toBe(false);
  });

  it("produces Anthropic tool definitions (checked against the @anthropic-ai/sdk types)", () => {
    const anthropic: AnthropicTool[] = toAnthropicTools(tools);
    expect(anthropic.map((t) => t.name)).toContain("sessions_spawn");
    for (const def of anthropic) {
      expect(def.input_schema.type).toBe("object");
      expect(ajv.validateSchema(def.input_schema)).toBe(true);
    }
  });

  it("plugs into the Vercel AI SDK: a mock model calls sessions_list through the wire", async () => {
    const model = new MockLanguageModelV3({
      doGenerate: [
        {
          content: [
            {
              type: "tool-call",
              toolCallId: "c1",
              toolName: "sessions_list",
              input: JSON.stringify({ limit: 3 }),
            },
          ],
          finishReason: { unified: "tool-calls", raw: "tool_calls" },
          usage: {
            inputTokens: { total: 5, noCache: 5, cacheRead: undefined, cacheWrite: undefined },
            outputTokens: { total: 2, text: 2, reasoning: undefined },
          },
          warnings: [],
        },
        {
          content: [{ type: "text", text: "You have two sessions." }],
          finishReason: { unified: "stop", raw: "stop" },
          usage: {
            inputTokens: { total: 9, noCache: 9, cacheRead: undefined, cacheWrite: undefined },
            outputTokens: { total: 4, text: 4, reasoning: undefined },
          },
          warnings: [],
        },
      ],
    });
    const result = await generateText({
      model,
      tools: toAiSdkTools(tools),
      prompt: "what sessions exist?",
      stopWhen: stepCountIs(3),
    });
    expect(result.text).toBe("You have two sessions.");
    const toolResult = result.steps[0]?.toolResults[0];
    expect(toolResult?.toolName).toBe("sessions_list");
    expect(toolResult?.output).toMatchObject({ count: 2 });
    const offered = model.doGenerateCalls[0]?.tools ?? [];
    expect(offered.map((t) => t.name).sort()).toEqual([
      "agents_list",
      "sessions_history",
      "sessions_list",
      "sessions_send",
      "sessions_spawn",
    ]);
  });
});
