import { createRequire } from "node:module";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import {
  createGateway,
  createMemoryStore,
  createScriptedRunner,
  type Gateway,
  type GatewayServer,
} from "@sessions/gateway";
import { createGatewayClient, type GatewayClient } from "@sessions/gateway-client";
import { eventually } from "@sessions/testing/eventually";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSessionsMcpServer } from "./server.js";

/** What these tests read of a finished span (`ReadableSpan` of @opentelemetry/sdk-trace-base). */
interface FinishedSpan {
  name: string;
  kind: number;
  attributes: Record<string, unknown>;
  status: { code: number };
  parentSpanContext?: { spanId: string } | undefined;
  spanContext(): { traceId: string; spanId: string };
}
interface Otel {
  trace: { setGlobalTracerProvider(provider: unknown): boolean; disable(): void };
  SpanKind: { SERVER: number; INTERNAL: number };
  SpanStatusCode: { UNSET: number; ERROR: number };
}
interface SdkTraceBase {
  BasicTracerProvider: new (config: { spanProcessors: unknown[] }) => { shutdown(): Promise<void> };
  InMemorySpanExporter: new () => { getFinishedSpans(): FinishedSpan[]; reset(): void };
  SimpleSpanProcessor: new (exporter: unknown) => unknown;
}

// The OpenTelemetry packages are the gateway's (an optional peer it loads itself), so they are loaded from where it
// resolves them; the tracer provider registered here is global, the one the gateway's spans go to.
const fromGateway = createRequire(createRequire(import.meta.url).resolve("@sessions/gateway"));
const { trace, SpanKind, SpanStatusCode } = fromGateway("@opentelemetry/api") as Otel;
const sdk = fromGateway("@opentelemetry/sdk-trace-base") as SdkTraceBase;

const TOKEN = "mcp-trace-t0ken";
const MAIN = "agent:main:main";
const exporter = new sdk.InMemorySpanExporter();
const provider = new sdk.BasicTracerProvider({ spanProcessors: [new sdk.SimpleSpanProcessor(exporter)] });
let gateway: Gateway;
let server: GatewayServer;
let client: GatewayClient;
let mcp: Client;

beforeAll(async () => {
  trace.setGlobalTracerProvider(provider);
  gateway = createGateway({
    store: createMemoryStore(),
    runner: createScriptedRunner({ agents: { main: async (turn) => `echo: ${turn.text}` } }),
  });
  await gateway.chat.send({ sessionKey: "main", message: "hi", idempotencyKey: "mcp-trace-seed" });
  server = await gateway.listen({ port: 0, auth: { token: TOKEN } });
  client = createGatewayClient({ url: server.url, token: TOKEN });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await createSessionsMcpServer({ client, requesterKey: "main", sandboxed: true }).connect(serverSide);
  mcp = new Client({ name: "sessions-mcp-trace-test", version: "0.0.0" });
  await mcp.connect(clientSide);
});

afterAll(async () => {
  await mcp?.close();
  await client?.close();
  await server?.close();
  await gateway?.close();
  trace.disable();
  await provider.shutdown();
});

/** The gateway's `sessions.tools.call` span and its `execute_tool <tool>` child, once both have ended. */
async function spansOf(tool: string) {
  const named = (name: string) => exporter.getFinishedSpans().filter((s) => s.name === name);
  await eventually(() => {
    expect(named("sessions.tools.call")).toHaveLength(1);
    expect(named(`execute_tool ${tool}`)).toHaveLength(1);
  }, `the gateway's spans of the ${tool} call`);
  const [request] = named("sessions.tools.call") as [FinishedSpan];
  const [span] = named(`execute_tool ${tool}`) as [FinishedSpan];
  expect(request.kind).toBe(SpanKind.SERVER);
  expect(span.kind).toBe(SpanKind.INTERNAL);
  expect(span.parentSpanContext?.spanId).toBe(request.spanContext().spanId);
  expect(span.spanContext().traceId).toBe(request.spanContext().traceId);
  exporter.reset();
  return { request, span };
}

describe("an MCP tools/call on the gateway's trace", () => {
  it("is a sessions.tools.call request span with an execute_tool child, as the requester, sandboxed", async () => {
    exporter.reset();
    const result = await mcp.callTool({ name: "sessions_list", arguments: {} });
    expect(result.isError).toBeFalsy();
    const { request, span } = await spansOf("sessions_list");
    expect(request.attributes["sessions.key"]).toBe(MAIN);
    expect(span.attributes).toEqual({
      "gen_ai.operation.name": "execute_tool",
      "gen_ai.tool.name": "sessions_list",
      "gen_ai.tool.type": "function",
      "sessions.key": MAIN,
      "sessions.sandboxed": true,
    });
    expect(span.status.code).toBe(SpanStatusCode.UNSET);
  });

  it("sets the error status when the tool answers an error (a send to itself)", async () => {
    exporter.reset();
    const result = await mcp.callTool({
      name: "sessions_send",
      arguments: { sessionKey: "main", message: "me?", timeoutSeconds: 0 },
    });
    expect(result.structuredContent).toMatchObject({ status: "error" });
    const { request, span } = await spansOf("sessions_send");
    expect(span.status.code).toBe(SpanStatusCode.ERROR);
    expect(span.attributes["error.type"]).toBe("tool_error");
    expect(request.status.code).toBe(SpanStatusCode.UNSET);
  });
});
