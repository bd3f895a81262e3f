import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { WebSocketServer } from "ws";
import { createDiscordGatewaySocket } from "./gateway-socket.js";
import { discordMessageRoutes } from "./rest-messages.js";
import { discordRestRoutes } from "./rest-routes.js";
import { createDiscordState } from "./state.js";
import type {
  DiscordCall,
  DiscordFailure,
  DiscordRouteMatcher,
  FakeDiscordApi,
  FakeDiscordOptions,
} from "./types.js";
import {
  error,
  failureResponse,
  IDS,
  type Json,
  patternToRegExp,
  type RestResult,
  type Route,
} from "./wire.js";

export type * from "./types.js";

/**
 * A fake Discord API on 127.0.0.1 that a real discord.js 14 `Client` logs in to: REST under `restUrl` (the gateway
 * lookup, users, the application, guild and channel reads, messages, typing, threads, channel edits, reactions)
 * and the gateway WebSocket (HELLO, IDENTIFY → READY + GUILD_CREATE, heartbeats, RESUME, zlib-stream when asked).
 * It holds one guild with a category, the text channel "general", the forum "ideas" and the thread
 * "release-planning", plus a DM channel with "alice_example"; records every REST call; dispatches events on
 * demand; and fails calls on demand with Discord's 429 (headers included) or any other error.
 */
export async function createFakeDiscordApi(options: FakeDiscordOptions = {}): Promise<FakeDiscordApi> {
  const token =
    options.token ??
    `${Buffer.from(IDS.bot).toString("base64url")}.GfAkE0.sessions-fake-discord-token-0000000000`;
  const heartbeatInterval = options.heartbeatIntervalMs ?? 41_250;
  const echoOwnMessages = options.echoOwnMessages ?? true;
  const calls: DiscordCall[] = [];
  const failures: {
    matches: (call: DiscordCall) => boolean;
    times: number;
    after: number;
    failure: DiscordFailure;
  }[] = [];
  const state = createDiscordState();
  const { botUser, otherBot, general, forum, thread, dmChannel } = state;
  // Filled once the server listens: the gateway URL is part of the routes' answers and of READY.
  let routes: Route[] = [];

  function reply(res: ServerResponse, result: RestResult) {
    if (result.status === 204 || result.body === undefined) {
      res.writeHead(result.status, result.headers ?? {}).end();
    } else {
      res
        .writeHead(result.status, { "content-type": "application/json", ...result.headers })
        .end(JSON.stringify(result.body));
    }
    result.after?.();
  }

  async function readBody(
    req: IncomingMessage,
  ): Promise<{ body: unknown; files?: DiscordCall["files"] | undefined } | { invalid: true }> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks);
    if (raw.length === 0) return { body: undefined };
    const contentType = req.headers["content-type"] ?? "";
    try {
      if (contentType.startsWith("multipart/form-data")) {
        const form = await new Response(raw, { headers: { "content-type": contentType } }).formData();
        const files: NonNullable<DiscordCall["files"]> = [];
        let body: Json = {};
        for (const [field, value] of form.entries()) {
          if (typeof value === "string") {
            if (field === "payload_json") body = { ...body, ...(JSON.parse(value) as Json) };
            else body[field] = value;
          } else {
            files.push({ field, name: value.name, contentType: value.type, size: value.size });
          }
        }
        return { body, files };
      }
      return { body: JSON.parse(raw.toString("utf8")) as unknown };
    } catch {
      return { invalid: true };
    }
  }

  async function onRequest(req: IncomingMessage, res: ServerResponse) {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    const method = (req.method ?? "GET").toUpperCase();
    const versioned = /^\/api\/v\d+(\/.*)$/.exec(url.pathname);
    const path = versioned?.[1] ?? url.pathname;
    const read = await readBody(req);
    const call: DiscordCall = { method, path, body: "invalid" in read ? undefined : read.body };
    if (url.search !== "") call.query = Object.fromEntries(url.searchParams);
    if ("files" in read && read.files !== undefined) call.files = read.files;
    calls.push(call);
    const answer = (result: RestResult) => {
      call.status = result.status;
      reply(res, result);
    };

    if (versioned === null) {
      answer(error(404, 0, "Unknown"));
      return;
    }
    if (path !== "/gateway" && req.headers.authorization !== `Bot ${token}`) {
      answer(error(401, 0, "401: Unauthorized"));
      return;
    }
    if ("invalid" in read) {
      answer(error(400, 50109, "The request body contains invalid JSON."));
      return;
    }
    const failure = failures.find((f) => f.times > 0 && f.matches(call));
    if (failure !== undefined && failure.after > 0) failure.after--;
    else if (failure !== undefined) {
      failure.times--;
      answer(failureResponse(failure.failure));
      return;
    }
    for (const [routeMethod, pattern, handler] of routes) {
      if (routeMethod !== method) continue;
      const match = pattern.exec(path);
      if (match === null) continue;
      const body = typeof call.body === "object" && call.body !== null ? (call.body as Json) : {};
      answer(handler(match.slice(1), body, url.searchParams, call.files));
      return;
    }
    answer(error(404, 0, "Unknown"));
  }

  const server: Server = createServer((req, res) => {
    onRequest(req, res).catch(() => {
      if (!res.headersSent) reply(res, error(500, 0, "500: Internal Server Error (fake crashed)"));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  const gatewayUrl = `ws://127.0.0.1:${port}/gateway`;
  const socket = createDiscordGatewaySocket(state, { token, heartbeatInterval, gatewayUrl });
  const wss = new WebSocketServer({ server, path: "/gateway" });
  wss.on("connection", socket.onConnection);
  const context = { broadcast: socket.broadcast, echoOwnMessages, gatewayUrl };
  routes = [...discordRestRoutes(state, context), ...discordMessageRoutes(state, context)];

  function toMatcher(route: DiscordRouteMatcher): (call: DiscordCall) => boolean {
    if (typeof route === "function") return route;
    if (route instanceof RegExp) return (call) => route.test(`${call.method} ${call.path}`);
    const spaced = /^([A-Za-z]+)\s+(\/.*)$/.exec(route);
    const method = spaced?.[1]?.toUpperCase();
    const pattern = patternToRegExp(spaced?.[2] ?? route);
    return (call) => (method === undefined || call.method === method) && pattern.test(call.path);
  }
  return {
    restUrl: `http://127.0.0.1:${port}/api`,
    gatewayUrl,
    token,
    botUser,
    user: state.alice,
    otherBot,
    guild: { id: IDS.guild, name: state.guildInfo.name, general, forum, thread },
    dmChannel,
    calls,
    identifies: socket.identifies,
    get connections() {
      return socket.connections.size;
    },
    callsOf(method, pathPattern) {
      const upper = method.toUpperCase();
      const pattern = typeof pathPattern === "string" ? patternToRegExp(pathPattern) : pathPattern;
      return calls.filter((c) => c.method === upper && (pattern === undefined || pattern.test(c.path)));
    },
    channel: (id) => state.channels.get(id),
    messages: (channelId) =>
      [...state.messages.values()]
        .filter((message) => message.channel_id === channelId)
        .sort((a, b) => (BigInt(String(a.id)) < BigInt(String(b.id)) ? -1 : 1))
        .map((message) => ({
          id: String(message.id),
          authorId: String((message.author as { id?: unknown } | undefined)?.id ?? ""),
          content: typeof message.content === "string" ? message.content : "",
          edited: message.edited_timestamp !== null && message.edited_timestamp !== undefined,
        })),
    dispatch(event, data) {
      state.learn(event, data);
      return socket.broadcast(event, data);
    },
    failNext(route, times, failure = {}, options = {}) {
      failures.push({ matches: toMatcher(route), times, after: options.after ?? 0, failure });
    },
    requestReconnect: () => socket.requestReconnect(),
    async close() {
      for (const connection of socket.connections) connection.socket.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
