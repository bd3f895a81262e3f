import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import {
  A2A_PROTOCOL_VERSION,
  AGENT_CARD_PATH,
  AgentCard,
  formatSSEEvent,
  type Message,
  Role,
  SSE_HEADERS,
  TaskState,
} from "@a2a-js/sdk";
import { LegacyJsonRpcTransportHandler } from "@a2a-js/sdk/compat/v0_3/server";
import {
  AgentEvent,
  type AgentExecutor,
  DefaultRequestHandler,
  InMemoryTaskStore,
  JsonRpcTransportHandler,
  ServerCallContext,
} from "@a2a-js/sdk/server";
import { textPart } from "../server/a2a/tasks.js";

/** One message the agent received, as it arrived. */
export interface Received {
  text: string;
  contextId: string;
  taskId: string;
  messageId: string;
  metadata: Record<string, unknown> | undefined;
  authorization: string | undefined;
  traceparent: string | undefined;
}

/** An A2A agent made of `@a2a-js/sdk` alone (not this gateway), on loopback, as a remote peer would run one. */
export interface SdkAgent {
  /** Its card's URL. */
  readonly cardUrl: string;
  readonly received: Received[];
  /** Tasks it was asked to cancel. */
  readonly canceled: string[];
  close(): Promise<void>;
}

const agentMessage = (value: string, taskId: string, contextId: string): Message => ({
  messageId: `${taskId}:${Math.random()}`,
  contextId,
  taskId,
  role: Role.ROLE_AGENT,
  parts: [textPart(value)],
  metadata: undefined,
  extensions: [],
  referenceTaskIds: [],
});

/**
 * Starts the agent. It answers `<text>` with `remote heard: <text> (message <n> of this context)`, streamed in two
 * chunks; `fail…` fails the task; `ask…` asks a question back (`input-required`) and completes with the answer;
 * `hold…` works until canceled. `legacy` serves only A2A v0.3 (its card and methods); `token` is required when set.
 */
export async function startSdkAgent(
  options: { legacy?: boolean; streaming?: boolean; token?: string } = {},
): Promise<SdkAgent> {
  const received: Received[] = [];
  const canceled: string[] = [];
  const perContext = new Map<string, number>();
  const holds = new Map<string, () => void>();
  const headersOf = new WeakMap<object, IncomingMessage>();
  let base = "";
  const executor: AgentExecutor = {
    async execute(request, bus) {
      const { taskId, contextId, userMessage } = request;
      const said = userMessage.parts
        .map((p) => (p.content?.$case === "text" ? p.content.value : ""))
        .join("");
      const req = headersOf.get(request.context as object);
      received.push({
        text: said,
        contextId,
        taskId,
        messageId: userMessage.messageId,
        metadata: userMessage.metadata,
        authorization: req?.headers.authorization,
        traceparent: req?.headers.traceparent as string | undefined,
      });
      const n = (perContext.get(contextId) ?? 0) + 1;
      perContext.set(contextId, n);
      const status = (state: TaskState, message?: string) =>
        bus.publish(
          AgentEvent.statusUpdate({
            taskId,
            contextId,
            status: {
              state,
              message: message === undefined ? undefined : agentMessage(message, taskId, contextId),
              timestamp: new Date().toISOString(),
            },
            metadata: undefined,
          }),
        );
      // A stream starts with the task (a new one, or the one the message answers).
      bus.publish(
        AgentEvent.task({
          id: taskId,
          contextId,
          status: { state: TaskState.TASK_STATE_WORKING, message: undefined, timestamp: undefined },
          artifacts: [],
          history: [userMessage],
          metadata: undefined,
        }),
      );
      if (said.startsWith("fail")) return status(TaskState.TASK_STATE_FAILED, "no can do");
      if (said.startsWith("ask")) return status(TaskState.TASK_STATE_INPUT_REQUIRED, "which city?");
      if (said.startsWith("hold")) {
        await new Promise<void>((resolve) => holds.set(taskId, resolve));
        return status(TaskState.TASK_STATE_CANCELED, "stopped");
      }
      const reply =
        request.task === undefined
          ? `remote heard: ${said} (message ${n} of this context)`
          : `weather in ${said}`;
      const half = Math.ceil(reply.length / 2);
      for (const [i, chunk] of [reply.slice(0, half), reply.slice(half)].entries()) {
        bus.publish(
          AgentEvent.artifactUpdate({
            taskId,
            contextId,
            artifact: {
              artifactId: "answer",
              name: "answer",
              description: "",
              parts: [textPart(chunk)],
              metadata: undefined,
              extensions: [],
            },
            append: i > 0,
            lastChunk: i > 0,
            metadata: undefined,
          }),
        );
      }
      status(TaskState.TASK_STATE_COMPLETED);
    },
    async cancelTask(taskId) {
      canceled.push(taskId);
      holds.get(taskId)?.();
    },
  };
  const streaming = options.streaming ?? true;
  const card: AgentCard = {
    name: "sdk-agent",
    description: "An agent built on @a2a-js/sdk alone.",
    version: "1.0.0",
    provider: undefined,
    supportedInterfaces: [],
    capabilities: { streaming, pushNotifications: false, extensions: [], extendedAgentCard: false },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ["text/plain"],
    defaultOutputModes: ["text/plain"],
    skills: [],
    signatures: [],
  };
  const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), executor);
  const v1 = new JsonRpcTransportHandler(handler);
  const legacy = new LegacyJsonRpcTransportHandler(handler);
  const server: Server = createServer(async (req, res) => {
    if (req.method === "GET" && req.url === `/${AGENT_CARD_PATH}`) {
      const url = `${base}/rpc`;
      const body = options.legacy
        ? {
            protocolVersion: "0.3.0",
            name: card.name,
            description: card.description,
            version: card.version,
            url,
            preferredTransport: "JSONRPC",
            capabilities: { streaming, pushNotifications: false },
            defaultInputModes: ["text/plain"],
            defaultOutputModes: ["text/plain"],
            skills: [],
          }
        : AgentCard.toJSON({
            ...card,
            supportedInterfaces: [
              { url, protocolBinding: "JSONRPC", tenant: "", protocolVersion: A2A_PROTOCOL_VERSION },
            ],
          });
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(body));
      return;
    }
    if (req.method !== "POST" || req.url !== "/rpc") {
      res.writeHead(404).end();
      return;
    }
    if (options.token !== undefined && req.headers.authorization !== `Bearer ${options.token}`) {
      res.writeHead(401).end();
      return;
    }
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const context = new ServerCallContext({ requestedVersion: options.legacy ? "0.3" : "1.0" });
    headersOf.set(context, req);
    const out = await (options.legacy ? legacy : v1).handle(
      JSON.parse(Buffer.concat(chunks).toString()),
      context,
    );
    if (!(Symbol.asyncIterator in Object(out))) {
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(out));
      return;
    }
    res.writeHead(200, SSE_HEADERS);
    for await (const event of out as AsyncGenerator<unknown>) res.write(formatSSEEvent(event));
    res.end();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    cardUrl: `${base}/${AGENT_CARD_PATH}`,
    received,
    canceled,
    async close() {
      for (const release of holds.values()) release();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
