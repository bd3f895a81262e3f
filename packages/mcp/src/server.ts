import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import {
  CallToolRequestSchema,
  type CallToolResult,
  ListToolsRequestSchema,
  type Tool,
  type ToolAnnotations,
} from "@modelcontextprotocol/sdk/types.js";
import { parseToolParams, SESSION_TOOL_NAMES, SessionsError, type SessionToolName } from "@sessions/core";
import {
  createSessionTools,
  type GatewayClient,
  providerJsonSchema,
  type SessionTool,
} from "@sessions/gateway-client";
import { VERSION } from "./version.js";

/** Options of `createSessionsMcpServer`. */
export interface SessionsMcpServerOptions {
  /** A gateway client (from `createGatewayClient`); the server never closes it. */
  client: GatewayClient;
  /** The requester session every tool acts as (`main`, `agent:ops:discord:group:123`, …). */
  requesterKey: string;
  /** Sandboxed sessions see at most their own tree. */
  sandboxed?: boolean | undefined;
  /** The server name reported to MCP clients (default `sessions`). */
  name?: string | undefined;
  /** The server version reported to MCP clients (default: this package's version). */
  version?: string | undefined;
  /**
   * How long a tool call waits for the gateway connection before it fails with `unavailable`
   * (default 10,000 ms). Calls made while connected do not wait.
   */
  connectTimeoutMs?: number | undefined;
}

const TITLES: Readonly<Record<SessionToolName, string>> = {
  sessions_list: "List sessions",
  sessions_history: "Read a session's history",
  sessions_send: "Send a message to a session",
  sessions_spawn: "Spawn a sub-agent",
  agents_list: "List spawnable agents",
};

const READ_ONLY: ToolAnnotations = { readOnlyHint: true, openWorldHint: false };
const WRITES: ToolAnnotations = {
  readOnlyHint: false,
  destructiveHint: false,
  idempotentHint: false,
  openWorldHint: true,
};
const ANNOTATIONS: Readonly<Record<SessionToolName, ToolAnnotations>> = {
  sessions_list: READ_ONLY,
  sessions_history: READ_ONLY,
  sessions_send: WRITES,
  sessions_spawn: WRITES,
  agents_list: READ_ONLY,
};

/** `<code>: <message>` for any error: a `SessionsError` keeps its code, anything else is `internal`. */
export function formatToolError(error: unknown): string {
  if (SessionsError.isInstance(error)) return `${error.code}: ${error.message}`;
  if (error instanceof Error) return `internal: ${error.message}`;
  return `internal: ${String(error)}`;
}

function errorResult(text: string): CallToolResult {
  return { isError: true, content: [{ type: "text", text }] };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Resolves once the client is connected; rejects with `unavailable` after `timeoutMs`, or with its own error. */
async function whenConnected(client: GatewayClient, timeoutMs: number, signal: AbortSignal): Promise<void> {
  if (client.state === "connected") {
    await client.ready();
    return;
  }
  let timer: ReturnType<typeof setTimeout> | undefined;
  let onAbort: (() => void) | undefined;
  try {
    await Promise.race([
      client.ready(),
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () =>
            reject(
              new SessionsError(
                "unavailable",
                `the sessions gateway is not reachable (still ${client.state} after ${timeoutMs} ms)`,
              ),
            ),
          timeoutMs,
        );
        onAbort = () => reject(new SessionsError("aborted", "the tool call was cancelled"));
        signal.addEventListener("abort", onAbort, { once: true });
      }),
    ]);
  } finally {
    if (timer !== undefined) clearTimeout(timer);
    if (onAbort !== undefined) signal.removeEventListener("abort", onAbort);
  }
}

/**
 * An MCP server (not yet connected to a transport) exposing the five session tools of one requester session.
 * Tools execute on the gateway through `client`; every failure comes back as an `isError` tool result.
 */
export function createSessionsMcpServer(options: SessionsMcpServerOptions): Server {
  const { client, requesterKey } = options;
  if (typeof requesterKey !== "string" || requesterKey.trim() === "") {
    throw new SessionsError("invalid_params", "createSessionsMcpServer: requesterKey must be a session key", {
      field: "requesterKey",
    });
  }
  const connectTimeoutMs = options.connectTimeoutMs ?? 10_000;
  const tools = createSessionTools(client, {
    requesterKey,
    ...(options.sandboxed === true ? { sandboxed: true } : {}),
  });
  const byName = new Map<string, SessionTool>(tools.map((tool) => [tool.name, tool]));
  const definitions: Tool[] = tools.map((tool) => ({
    name: tool.name,
    title: TITLES[tool.name],
    description: tool.description,
    inputSchema: providerJsonSchema(tool) as Tool["inputSchema"],
    annotations: { title: TITLES[tool.name], ...ANNOTATIONS[tool.name] },
  }));

  const server = new Server(
    { name: options.name ?? "sessions", version: options.version ?? VERSION },
    {
      capabilities: { tools: {} },
      instructions: `Session tools acting as the session "${requesterKey}" of a sessions gateway${
        options.sandboxed === true ? " (sandboxed: only this session and the sub-agents it spawned)" : ""
      }. Use sessions_list to find sessions, sessions_history to read one, sessions_send to message one, sessions_spawn to start a sub-agent, agents_list for the agent ids sessions_spawn accepts.`,
    },
  );

  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: definitions }));

  server.setRequestHandler(CallToolRequestSchema, async (request, extra): Promise<CallToolResult> => {
    const { name } = request.params;
    const args = request.params.arguments ?? {};
    const tool = byName.get(name);
    if (tool === undefined) {
      return errorResult(
        `invalid_params: Unknown tool: ${JSON.stringify(name)} (one of ${SESSION_TOOL_NAMES.join(", ")})`,
      );
    }
    try {
      // Model mistakes are reported at once, whether or not the gateway is reachable.
      parseToolParams(tool.name, args);
      await whenConnected(client, connectTimeoutMs, extra.signal);
      const result: unknown = await tool.execute(args, { signal: extra.signal });
      return {
        content: [{ type: "text", text: JSON.stringify(result) }],
        ...(isRecord(result) ? { structuredContent: result } : {}),
      };
    } catch (error) {
      return errorResult(formatToolError(error));
    }
  });

  return server;
}
