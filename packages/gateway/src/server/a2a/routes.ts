import type { IncomingMessage, ServerResponse } from "node:http";
import {
  A2A_VERSION_HEADER,
  AGENT_CARD_PATH,
  AgentCard,
  Extensions,
  formatSSEErrorEvent,
  formatSSEEvent,
  HTTP_EXTENSION_HEADER,
  SSE_HEADERS,
} from "@a2a-js/sdk";
import { isV1JsonRpcMethod, LEGACY_HTTP_EXTENSION_HEADER } from "@a2a-js/sdk/compat/v0_3";
import { LegacyJsonRpcTransportHandler } from "@a2a-js/sdk/compat/v0_3/server";
import {
  DefaultRequestHandler,
  JsonRpcTransportHandler,
  ServerCallContext,
  validateVersion,
} from "@a2a-js/sdk/server";
import { defaultAgentId, normalizeAgentId, SessionsError } from "@sessions/core";
import type { Gateway } from "../../gateway.js";
import { hasScope } from "../auth.js";
import { Caller } from "./caller.js";
import { type A2ACardInput, agentCard, legacyAgentCard } from "./card.js";
import { createA2AExecutor } from "./executor.js";
import { RunTaskStore } from "./tasks.js";

/** `ListenOptions.a2a`: which agents the server serves over A2A, and the URL callers reach it at. */
export interface A2AServerOptions {
  /** The agents served (default: every configured agent, or `main`). */
  agents?: readonly string[] | undefined;
  /** The base URL callers reach the server at, for the cards (default: the address it listens on, `http://…`). */
  publicUrl?: string | undefined;
}

/** Who a request is: the operator scopes its bearer token holds and its name, or undefined when refused. */
export type A2AAuthorize = (req: IncomingMessage) => { scopes: readonly string[]; name: string } | undefined;

/** Largest JSON-RPC request body read (1 MiB). */
const MAX_BODY = 1024 * 1024;

/** The scope each A2A method needs (v1.0 and v0.3 names); any other method needs write. */
const READ_METHODS = new Set(["GetTask", "ListTasks", "tasks/get"]);

/** One served agent's SDK handlers, made on first use (its card names the server's address). */
interface Served {
  input: A2ACardInput;
  card: AgentCard;
  v1: JsonRpcTransportHandler;
  legacy: LegacyJsonRpcTransportHandler;
}

function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name.toLowerCase()];
  return Array.isArray(value) ? value[0] : value;
}

function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  extra: Record<string, string> = {},
): true {
  res.writeHead(status, { "content-type": "application/json", ...extra }).end(JSON.stringify(body));
  return true;
}

async function readBody(req: IncomingMessage): Promise<string> {
  let size = 0;
  const chunks: Buffer[] = [];
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY) throw new SessionsError("invalid_params", `request body over ${MAX_BODY} bytes`);
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString("utf8");
}

/**
 * The gateway's agents over A2A (`@a2a-js/sdk`): each agent's card at `/a2a/<agentId>/.well-known/agent-card.json`
 * (the default agent's also at `/.well-known/agent-card.json`), its JSON-RPC at `POST /a2a/<agentId>` — v1.0
 * (`A2A-Version: 1.0`: `SendMessage`, `SendStreamingMessage` over SSE, `GetTask`, `CancelTask`) and v0.3 (no header:
 * `message/send`, `message/stream`, `tasks/get`, `tasks/cancel`). Calls need the gateway's bearer token (read scope
 * for `GetTask`, write for the rest); cards are public. Answers the requests it takes (true), leaves others (false).
 */
export function createA2ARoutes(
  gateway: Gateway,
  options: A2AServerOptions,
  authorize: A2AAuthorize,
  bearer: boolean,
  baseUrl: () => string,
): (req: IncomingMessage, res: ServerResponse) => Promise<boolean> {
  const configured = gateway.config.agents.list.map((agent) => agent.id);
  const ids = (options.agents ?? (configured.length > 0 ? configured : ["main"])).map((id) =>
    normalizeAgentId(id),
  );
  const names = new Map(gateway.config.agents.list.map((agent) => [agent.id, agent.name]));
  const fallback = defaultAgentId(gateway.config);
  const tasks = new RunTaskStore(gateway.store);
  const served = new Map<string, Served>();

  function agent(id: string): Served | undefined {
    if (!ids.includes(id)) return undefined;
    let found = served.get(id);
    if (found === undefined) {
      const base = (options.publicUrl ?? baseUrl()).replace(/\/+$/, "");
      const input = { agentId: id, name: names.get(id), url: `${base}/a2a/${id}`, bearer };
      const card = agentCard(input);
      const handler = new DefaultRequestHandler(card, tasks, createA2AExecutor(gateway, id));
      found = {
        input,
        card,
        v1: new JsonRpcTransportHandler(handler),
        legacy: new LegacyJsonRpcTransportHandler(handler),
      };
      served.set(id, found);
    }
    return found;
  }

  function serveCard(req: IncomingMessage, res: ServerResponse, target: Served): true {
    const version = header(req, A2A_VERSION_HEADER);
    const legacy = version === undefined || version.startsWith("0.");
    return sendJson(res, 200, legacy ? legacyAgentCard(target.input) : AgentCard.toJSON(target.card), {
      vary: A2A_VERSION_HEADER,
    });
  }

  async function call(req: IncomingMessage, res: ServerResponse, target: Served): Promise<true> {
    let body: { id?: unknown; method?: unknown };
    try {
      body = JSON.parse(await readBody(req)) as typeof body;
    } catch (error) {
      const message = SessionsError.isInstance(error) ? error.message : "Parse error";
      return sendJson(res, 200, { jsonrpc: "2.0", id: null, error: { code: -32700, message } });
    }
    const id = typeof body?.id === "string" || typeof body?.id === "number" ? body.id : null;
    const method = typeof body?.method === "string" ? body.method : "";
    // No version header: an older peer (v0.3), unless the method is one only v1.0 has.
    const version = header(req, A2A_VERSION_HEADER) ?? (isV1JsonRpcMethod(method) ? "1.0" : "0.3");
    const legacy = version.startsWith("0.");
    const mapError = legacy
      ? LegacyJsonRpcTransportHandler.mapToLegacyJSONRPCError
      : JsonRpcTransportHandler.mapToJSONRPCError;
    const caller = authorize(req);
    if (caller === undefined) {
      return sendJson(
        res,
        401,
        { jsonrpc: "2.0", id, error: { code: -32600, message: "a bearer token of the gateway is required" } },
        { "www-authenticate": "Bearer" },
      );
    }
    const { scopes } = caller;
    const needed = READ_METHODS.has(method) ? "operator.read" : "operator.write";
    if (!hasScope(scopes, needed)) {
      return sendJson(res, 403, {
        jsonrpc: "2.0",
        id,
        error: { code: -32600, message: `${method} needs scope ${needed}` },
      });
    }
    try {
      const extensions = legacy
        ? (header(req, LEGACY_HTTP_EXTENSION_HEADER) ?? header(req, HTTP_EXTENSION_HEADER))
        : header(req, HTTP_EXTENSION_HEADER);
      const context = new ServerCallContext({
        user: new Caller(caller.name, header(req, "traceparent")),
        requestedVersion: version,
        requestedExtensions: Extensions.parseServiceParameter(extensions),
      });
      validateVersion(context.requestedVersion, target.card, "JSONRPC");
      const out = await (legacy ? target.legacy : target.v1).handle(body, context);
      if (!(Symbol.asyncIterator in Object(out))) return sendJson(res, 200, out);
      const stream = out as AsyncGenerator<unknown>;
      res.writeHead(200, SSE_HEADERS);
      // A caller that goes away ends the stream (the run goes on: its task can be read with GetTask).
      req.once("close", () => void stream.return(undefined));
      try {
        for await (const event of stream) res.write(formatSSEEvent(event));
      } catch (error) {
        res.write(formatSSEErrorEvent({ jsonrpc: "2.0", id, error: mapError(error) }));
      }
      res.end();
      return true;
    } catch (error) {
      return sendJson(res, 200, { jsonrpc: "2.0", id, error: mapError(error) });
    }
  }

  return async (req, res) => {
    const path = (req.url ?? "/").split("?")[0] as string;
    if (req.method === "GET" && path === `/${AGENT_CARD_PATH}`) {
      const target = agent(fallback) ?? agent(ids[0] as string);
      return target === undefined ? false : serveCard(req, res, target);
    }
    const match = /^\/a2a\/([^/]+)(\/.*)?$/.exec(path);
    if (match === null) return false;
    const target = agent(normalizeAgentId(decodeURIComponent(match[1] as string)));
    if (target === undefined)
      return sendJson(res, 404, { error: `no agent ${match[1]} is served over A2A here` });
    const rest = match[2] ?? "";
    if (req.method === "GET" && rest === `/${AGENT_CARD_PATH}`) return serveCard(req, res, target);
    if (req.method === "POST" && (rest === "" || rest === "/")) return call(req, res, target);
    return sendJson(res, 404, { error: "not found" });
  };
}
