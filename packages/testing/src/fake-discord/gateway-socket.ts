// The fake Discord's gateway WebSocket: HELLO, IDENTIFY → READY + GUILD_CREATE, heartbeats, RESUME, member
// chunks, zlib-stream compression when asked, and dispatching events to sessions whose intents cover them.
import { randomUUID } from "node:crypto";
import type { IncomingMessage } from "node:http";
import { createDeflate, constants as zlibConstants } from "node:zlib";
import type { WebSocket } from "ws";
import type { DiscordState } from "./state.js";
import type { DiscordUserData } from "./types.js";
import { GUILD_EVENTS, IDS, INTENTS, type Json, MESSAGE_EVENTS } from "./wire.js";

interface GatewaySession {
  id: string;
  seq: number;
  intents: number;
  connection: GatewayConnection | null;
}
interface GatewayConnection {
  socket: WebSocket;
  session: GatewaySession | null;
  send(payload: Json): void;
}

export interface DiscordGatewaySocketOptions {
  token: string;
  heartbeatInterval: number;
  /** The URL READY hands out as `resume_gateway_url`. */
  gatewayUrl: string;
}

/** The gateway side of one fake Discord: attach `onConnection` to a WebSocket server at `/gateway`. */
export function createDiscordGatewaySocket(state: DiscordState, options: DiscordGatewaySocketOptions) {
  const { token, heartbeatInterval, gatewayUrl } = options;
  const { members, botUser, guildCreatePayload } = state;
  const identifies: Record<string, unknown>[] = [];
  const sessions = new Map<string, GatewaySession>();
  const connections = new Set<GatewayConnection>();

  function sendDispatch(session: GatewaySession, event: string, data: unknown) {
    if (session.connection === null) return;
    session.seq++;
    session.connection.send({ op: 0, t: event, s: session.seq, d: data });
  }

  function visibleTo(session: GatewaySession, event: string, data: unknown): unknown | undefined {
    const intents = session.intents;
    if (MESSAGE_EVENTS.has(event)) {
      const message = (data ?? {}) as Json;
      const inGuild = message.guild_id !== undefined;
      if ((intents & (inGuild ? INTENTS.GuildMessages : INTENTS.DirectMessages)) === 0) return undefined;
      const author = message.author as { id?: string | undefined } | undefined;
      const mentionsBot = (message.mentions as { id?: string | undefined }[] | undefined)?.some(
        (m) => m.id === IDS.bot,
      );
      if (
        inGuild &&
        (intents & INTENTS.MessageContent) === 0 &&
        author !== undefined &&
        author.id !== IDS.bot &&
        mentionsBot !== true
      ) {
        return { ...message, content: "", embeds: [], attachments: [], components: [] };
      }
      return data;
    }
    if (GUILD_EVENTS.test(event) && (intents & INTENTS.Guilds) === 0) return undefined;
    return data;
  }

  function broadcast(event: string, data: unknown): number {
    let sent = 0;
    for (const session of sessions.values()) {
      if (session.connection === null) continue;
      const visible = visibleTo(session, event, data);
      if (visible === undefined) continue;
      sendDispatch(session, event, visible);
      sent++;
    }
    return sent;
  }
  function makeSender(socket: WebSocket, compress: boolean): (payload: Json) => void {
    if (!compress) {
      return (payload) => {
        if (socket.readyState === socket.OPEN) socket.send(JSON.stringify(payload));
      };
    }
    // zlib-stream: one deflate context per connection, every payload flushed with Z_SYNC_FLUSH (ends in 00 00 ff ff).
    const deflate = createDeflate();
    const chunks: Buffer[] = [];
    deflate.on("data", (chunk: Buffer) => chunks.push(chunk));
    socket.once("close", () => deflate.close());
    let queue = Promise.resolve();
    return (payload) => {
      queue = queue.then(
        () =>
          new Promise<void>((resolve) => {
            if (socket.readyState !== socket.OPEN) {
              resolve();
              return;
            }
            deflate.write(JSON.stringify(payload));
            deflate.flush(zlibConstants.Z_SYNC_FLUSH, () => {
              const frame = Buffer.concat(chunks.splice(0));
              if (socket.readyState === socket.OPEN) socket.send(frame);
              resolve();
            });
          }),
      );
    };
  }

  function onGatewayConnection(socket: WebSocket, req: IncomingMessage) {
    const query = new URL(req.url ?? "/", "http://127.0.0.1").searchParams;
    const connection: GatewayConnection = {
      socket,
      session: null,
      send: makeSender(socket, query.get("compress") === "zlib-stream"),
    };
    connections.add(connection);
    socket.on("close", () => {
      connections.delete(connection);
      if (connection.session !== null && connection.session.connection === connection) {
        connection.session.connection = null;
      }
    });
    socket.on("error", () => {});
    socket.on("message", (raw) => {
      let payload: { op?: unknown; d?: unknown };
      try {
        payload = JSON.parse(String(raw)) as { op?: unknown; d?: unknown };
      } catch {
        socket.close(4002, "Error while decoding payload.");
        return;
      }
      onGatewayPayload(connection, payload.op, (payload.d ?? null) as Json | number | null);
    });
    connection.send({
      op: 10,
      d: { heartbeat_interval: heartbeatInterval, _trace: ['["gateway-fake",{"micros":0}]'] },
      s: null,
      t: null,
    });
  }

  function onGatewayPayload(connection: GatewayConnection, op: unknown, d: Json | number | null) {
    const { socket } = connection;
    const data = (typeof d === "object" && d !== null ? d : {}) as Json;
    switch (op) {
      case 1: // HEARTBEAT
        connection.send({ op: 11, d: null, s: null, t: null });
        return;
      case 2: {
        // IDENTIFY
        if (connection.session !== null) {
          socket.close(4005, "Already authenticated.");
          return;
        }
        if (data.token !== token) {
          socket.close(4004, "Authentication failed.");
          return;
        }
        identifies.push(structuredClone(data));
        const session: GatewaySession = {
          id: randomUUID().replaceAll("-", ""),
          seq: 0,
          intents: typeof data.intents === "number" ? data.intents : 0,
          connection,
        };
        connection.session = session;
        sessions.set(session.id, session);
        sendDispatch(session, "READY", {
          v: 10,
          user_settings: {},
          user: { ...botUser, verified: true, mfa_enabled: false, email: null, flags: 0 },
          guilds: [{ id: IDS.guild, unavailable: true }],
          session_id: session.id,
          session_type: "normal",
          resume_gateway_url: gatewayUrl,
          shard: Array.isArray(data.shard) ? data.shard : [0, 1],
          application: { id: IDS.bot, flags: 8_945_664 },
          private_channels: [],
          relationships: [],
          presences: [],
          guild_join_requests: [],
          geo_ordered_rtc_regions: ["rotterdam", "frankfurt", "milan", "madrid", "london"],
          auth: {},
          _trace: ['["gateway-fake",{"micros":0}]'],
        });
        sendDispatch(session, "GUILD_CREATE", guildCreatePayload());
        return;
      }
      case 6: {
        // RESUME
        const session = sessions.get(String(data.session_id));
        if (data.token !== token) {
          socket.close(4004, "Authentication failed.");
          return;
        }
        if (session === undefined) {
          connection.send({ op: 9, d: false, s: null, t: null });
          return;
        }
        if (session.connection !== null && session.connection !== connection)
          session.connection.socket.close(4009);
        session.connection = connection;
        connection.session = session;
        sendDispatch(session, "RESUMED", { _trace: ['["gateway-fake",{"micros":0}]'] });
        return;
      }
      case 8: {
        // REQUEST_GUILD_MEMBERS
        if (connection.session === null) {
          socket.close(4003, "Not authenticated.");
          return;
        }
        const wanted = Array.isArray(data.user_ids) ? data.user_ids.map(String) : null;
        const list = [...members.values()].filter(
          (m) => wanted === null || wanted.includes((m.user as DiscordUserData).id),
        );
        sendDispatch(connection.session, "GUILD_MEMBERS_CHUNK", {
          guild_id: IDS.guild,
          members: list,
          chunk_index: 0,
          chunk_count: 1,
          not_found: [],
          ...(data.nonce === undefined ? {} : { nonce: data.nonce }),
        });
        return;
      }
      default:
        // PRESENCE_UPDATE, VOICE_STATE_UPDATE and the rest: accepted, ignored.
        if (connection.session === null) socket.close(4003, "Not authenticated.");
    }
  }
  return {
    identifies,
    connections,
    broadcast,
    onConnection: onGatewayConnection,
    /** Sends op 7 RECONNECT to every connection. */
    requestReconnect() {
      for (const connection of connections) connection.send({ op: 7, d: null, s: null, t: null });
    },
  };
}
