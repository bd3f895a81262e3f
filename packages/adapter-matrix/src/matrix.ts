import { createHash } from "node:crypto";
import {
  type ChannelAdapterV1,
  chunkMessage,
  createChunkSender,
  type DeliveryReceipt,
  type DeliveryTarget,
  type InboundGateway,
  type InboundMessage,
  type Logger,
  type OutboundMessage,
  routeInbound,
  SessionsError,
  silentLogger,
} from "@sessions/core";
import {
  type MatrixClientLike,
  type MatrixEventLike,
  type MatrixRoomLike,
  ROOM_MEMBER_MEMBERSHIP,
  ROOM_TIMELINE,
} from "./client.js";
import { createEncryptionCheck } from "./encryption.js";
import { toSessionsError } from "./errors.js";
import { matrixRoomId, matrixThreadRoot, messageText, relationOf } from "./events.js";
import { createMatrixStream } from "./stream.js";

/**
 * The longest text one message carries. Matrix caps a whole event at 65,536 bytes of JSON; 8,000 UTF-16 units stay
 * under it even when every character needs a six-byte escape.
 */
export const MATRIX_MAX_MESSAGE_LENGTH = 8000;

/** What {@link createMatrixAdapter} needs: a logged-in matrix-js-sdk client and how the bot behaves in rooms. */
export interface MatrixAdapterConfig {
  /** Your matrix-js-sdk client (`createClient({ baseUrl, accessToken, userId })`); it must know its user id. */
  client: MatrixClientLike;
  /** Which bot account this is, for several bots on one gateway (default `default`). */
  accountId?: string | undefined;
  /** Matrix user ids (`@alice:example.org`) allowed to run owner-only commands such as `/send on|off|inherit`. */
  ownerIds?: readonly string[] | undefined;
  /** The agent that answers (default: the gateway's default agent). */
  agentId?: string | undefined;
  /** Show "typing…" while a run is in progress (default true). */
  typing?: boolean | undefined;
  /** `m.notice` (default, what the spec asks of bots: other bots do not answer it) or `m.text`. */
  msgtype?: "m.notice" | "m.text" | undefined;
  /** Join rooms the bot is invited to: `true`, or a function that decides per invite (default `false`). */
  autoJoin?: boolean | ((invite: { roomId: string; inviter: string | undefined }) => boolean) | undefined;
  /** Unnamed rooms with exactly two members count as direct chats, besides those in `m.direct` (default true). */
  twoMemberRoomsAreDirect?: boolean | undefined;
  /**
   * Events older than this (ms since epoch) are history, not messages to answer. Default: when `attach` is called,
   * so a restart does not answer the backlog of the first sync again.
   */
  ignoreEventsBefore?: number | undefined;
  /** Where the adapter reports what it drops (encrypted rooms, edits, refused messages). Default: quiet. */
  logger?: Logger | undefined;
  /**
   * The least time between two edits of a reply streaming into one room, in ms (default 1,000). Whether replies
   * stream is the gateway's `channels.matrix.streaming` (default `off`).
   */
  streamIntervalMs?: number | undefined;
}

/** The facts the adapter reads from a Matrix event before handing it to the gateway. */
export interface MatrixInbound extends InboundMessage {
  channel: "matrix";
}

/** The adapter {@link createMatrixAdapter} returns: a `ChannelAdapterV1` for the gateway plus `attach`/`detach`. */
export interface MatrixAdapter extends ChannelAdapterV1 {
  readonly channel: "matrix";
  /** Routes the client's room messages into a gateway (`gateway.receive`) and joins invites (`autoJoin`). */
  attach(gateway: InboundGateway): void;
  /** Stops listening to the client (the client itself keeps running). */
  detach(): void;
  /** The inbound message for one timeline event, or `null` for events the bot does not answer. */
  resolveInbound(event: MatrixEventLike, room: MatrixRoomLike | null | undefined): MatrixInbound | null;
  /**
   * The client's sync, for `gateway.holdConnection(adapter.connection)` in place of `client.startClient()`: then
   * exactly one gateway of those sharing a store syncs (`matrix:<user id>`), and another starts when that one dies
   * (messages it had handled are not answered twice: the gateway deduplicates by event id). Every gateway still
   * delivers over the client-server API. `start` starts syncing (`initialSyncLimit` 20); `stop` stops it.
   */
  readonly connection: {
    /** The lease name: `matrix:<user id>`. */
    readonly name: string;
    /**
     * Starts syncing (`client.startClient({ initialSyncLimit: 20 })`). Throws `SessionsError` `invalid_config`
     * (field `client`) when the client has no `startClient`.
     */
    start(): Promise<void>;
    /** Stops syncing (`client.stopClient()`); deliveries keep working. */
    stop(): Promise<void>;
  };
}

/** A transaction id per chunk of an outbox item: a retried send is the same transaction, deduplicated by the server. */
function transactionId(idempotencyKey: string, chunk: number): string {
  return `sessions.${createHash("sha256").update(`${idempotencyKey}\u0000${chunk}`).digest("base64url").slice(0, 32)}`;
}

/**
 * A sessions channel adapter for a matrix-js-sdk client: rooms, DMs and threads as sessions, chunked delivery.
 * Unencrypted rooms only: encrypted events are ignored and deliveries to an encrypted room fail.
 *
 * @throws SessionsError `invalid_config` (field `client`) when `client` is not a matrix-js-sdk client or has no user
 * id (pass `userId` to `createClient`). Delivery failures reach the outbox as `SessionsError`s: `rate_limited` with
 * `retryAfterMs` for `M_LIMIT_EXCEEDED`, `invalid_params` for an encrypted or unknown room, `unavailable` for network
 * errors.
 * @example
 * ```ts
 * import { createMatrixAdapter } from "@sessions/adapter-matrix";
 * import { createClient } from "matrix-js-sdk";
 *
 * const client = createClient({ baseUrl: "https://matrix.example.org", accessToken, userId: "@bot:example.org" });
 * const matrix = createMatrixAdapter({ client, autoJoin: true });
 * const gateway = createGateway({ runner, adapters: [matrix] });
 * matrix.attach(gateway);
 * await client.startClient({ initialSyncLimit: 1 });
 * ```
 */
export function createMatrixAdapter(config: MatrixAdapterConfig): MatrixAdapter {
  const { client } = config;
  if (client === null || typeof client !== "object" || typeof client.http?.authedRequest !== "function") {
    throw new SessionsError(
      "invalid_config",
      "createMatrixAdapter: client must be a matrix-js-sdk MatrixClient",
      {
        field: "client",
      },
    );
  }
  const userId = client.getUserId();
  if (typeof userId !== "string" || !userId.startsWith("@")) {
    throw new SessionsError(
      "invalid_config",
      "createMatrixAdapter: the client has no user id; pass userId to createClient (GET /account/whoami tells it)",
      { field: "client" },
    );
  }
  const accountId = config.accountId ?? "default";
  const logger = (config.logger ?? silentLogger).child("matrix");
  const owners = new Set(config.ownerIds ?? []);
  const msgtype = config.msgtype ?? "m.notice";
  const typing = config.typing !== false;
  let ignoreBefore = config.ignoreEventsBefore ?? Number.POSITIVE_INFINITY;
  // Event ids already sent per idempotency key, so an outbox retry after a partial failure does not repeat them.
  const sendChunks = createChunkSender(toSessionsError);
  const warnedEncrypted = new Set<string>();
  const encryption = createEncryptionCheck(client);
  const detachers: (() => void)[] = [];
  const roomQueues = new Map<string, Promise<void>>();

  function isDirect(room: MatrixRoomLike | null | undefined, roomId: string): boolean {
    const direct = client.getAccountData("m.direct")?.getContent();
    if (direct !== null && typeof direct === "object") {
      for (const rooms of Object.values(direct as Record<string, unknown>))
        if (Array.isArray(rooms) && rooms.includes(roomId)) return true;
    }
    if (config.twoMemberRoomsAreDirect === false || room === null || room === undefined) return false;
    const named = room.currentState?.getStateEvents("m.room.name", "");
    const hasName =
      named !== null &&
      named !== undefined &&
      typeof (named as MatrixEventLike).getContent === "function" &&
      typeof (named as MatrixEventLike).getContent().name === "string" &&
      (named as MatrixEventLike).getContent().name !== "";
    return !hasName && room.getInvitedAndJoinedMemberCount() === 2;
  }

  function resolveInbound(
    event: MatrixEventLike,
    room: MatrixRoomLike | null | undefined,
  ): MatrixInbound | null {
    const sender = event.getSender();
    const roomId = event.getRoomId() ?? room?.roomId;
    const eventId = event.getId();
    if (sender === undefined || roomId === undefined || eventId === undefined) return null;
    if (sender === userId) return null; // our own messages, echoed back by /sync
    if (event.getType() === "m.room.encrypted") {
      if (!warnedEncrypted.has(roomId)) {
        warnedEncrypted.add(roomId);
        logger.warn("ignoring an end-to-end encrypted room (not supported)", { roomId });
      }
      return null;
    }
    if (event.getType() !== "m.room.message") return null;
    const content = event.getContent();
    const relation = relationOf(content);
    if (relation.relType === "m.replace") {
      logger.debug("ignoring an edit: the original message already started its run", { roomId, eventId });
      return null;
    }
    const said = messageText(content);
    if ("ignored" in said) {
      logger.debug(`ignoring a message: ${said.ignored}`, { roomId, eventId });
      return null;
    }
    const direct = isDirect(room, roomId);
    const member = room?.getMember(sender);
    const senderName = member?.name && member.name !== sender ? member.name : undefined;
    const threadId = relation.relType === "m.thread" ? relation.eventId : undefined;
    const displayName = direct ? senderName : room?.name || undefined;
    return {
      channel: "matrix",
      accountId,
      chatType: direct ? "direct" : "group",
      peerId: direct ? sender : roomId,
      senderId: sender,
      ...(senderName === undefined ? {} : { senderName }),
      isOwner: owners.has(sender),
      to: roomId,
      text: said.text,
      messageId: eventId,
      ...(threadId === undefined ? {} : { threadId, threadKind: "thread" as const, parentId: roomId }),
      ...(displayName === undefined ? {} : { displayName }),
      ...(config.agentId === undefined ? {} : { agentId: config.agentId }),
    };
  }

  async function send(roomId: string, content: Record<string, unknown>, txnId: string): Promise<string> {
    const path = `/rooms/${encodeURIComponent(roomId)}/send/m.room.message/${encodeURIComponent(txnId)}`;
    // Straight through the library's HTTP layer: its event scheduler would retry rate limits itself, out of sight
    // of the outbox, and it cannot take our transaction ids across restarts.
    const response = (await client.http.authedRequest("PUT", path, undefined, content)) as {
      event_id?: unknown;
    };
    if (typeof response?.event_id !== "string") {
      throw new SessionsError("unavailable", "Matrix homeserver answered a send without an event_id");
    }
    return response.event_id;
  }

  function messageContent(body: string, threadRoot: string | undefined): Record<string, unknown> {
    return {
      msgtype,
      body,
      // An empty m.mentions: model output never pings anyone (or @room).
      "m.mentions": {},
      ...(threadRoot === undefined
        ? {}
        : {
            "m.relates_to": {
              rel_type: "m.thread",
              event_id: threadRoot,
              is_falling_back: true,
              "m.in_reply_to": { event_id: threadRoot },
            },
          }),
    };
  }

  async function deliver(
    target: DeliveryTarget,
    message: OutboundMessage,
    options: { idempotencyKey: string },
  ): Promise<DeliveryReceipt> {
    const roomId = matrixRoomId(target.to);
    const threadRoot = target.threadId === undefined ? undefined : matrixThreadRoot(target.threadId);
    if (await encryption.isEncrypted(roomId)) {
      throw new SessionsError(
        "invalid_params",
        `Matrix room ${roomId} is end-to-end encrypted, which this adapter does not support`,
        { field: "to" },
      );
    }
    const chunks = chunkMessage(message.text, MATRIX_MAX_MESSAGE_LENGTH);
    return sendChunks(
      options.idempotencyKey,
      chunks,
      () => (chunk, i) =>
        send(roomId, messageContent(chunk, threadRoot), transactionId(options.idempotencyKey, i)),
    );
  }

  function onTimeline(
    gateway: InboundGateway,
    event: MatrixEventLike,
    room: MatrixRoomLike | undefined,
    toStartOfTimeline: boolean | undefined,
    removed: boolean | undefined,
    data: { liveEvent?: boolean | undefined } | undefined,
  ) {
    if (toStartOfTimeline === true || removed === true || data?.liveEvent === false) return;
    if (event.getType() === "m.room.redaction") {
      // A redacted thread root ends the thread's binding, like a deleted Discord thread.
      const redacts = event.event.redacts ?? event.getContent().redacts;
      if (
        typeof redacts === "string" &&
        gateway.threadClosed !== undefined &&
        event.getTs() >= ignoreBefore
      ) {
        gateway.threadClosed({ channel: "matrix", accountId, threadId: redacts }).catch((error: unknown) => {
          logger.warn("could not end a thread binding", { error: String(error) });
        });
      }
      return;
    }
    if (event.getTs() < ignoreBefore) return; // history from the first sync, not a message to answer
    const inbound = resolveInbound(event, room);
    if (inbound === null) return;
    // One room's messages reach the gateway in timeline order (a sync delivers them in a batch).
    const previous = roomQueues.get(inbound.to) ?? Promise.resolve();
    const next = previous.then(() =>
      routeInbound(gateway, inbound, {
        logger,
        typing,
        sendTyping: adapter.sendTyping,
        typingIntervalMs: 25_000,
      }),
    );
    const tail = next.then(() => {
      if (roomQueues.get(inbound.to) === tail) roomQueues.delete(inbound.to);
    });
    roomQueues.set(inbound.to, tail);
  }

  function onMembership(
    event: MatrixEventLike,
    member: { userId: string; roomId: string; membership?: string | undefined },
  ) {
    if (member.userId !== userId || member.membership !== "invite" || !config.autoJoin) return;
    const invite = { roomId: member.roomId, inviter: event.getSender() };
    if (typeof config.autoJoin === "function") {
      let accept = false;
      try {
        accept = config.autoJoin(invite);
      } catch (error) {
        logger.warn("autoJoin threw; not joining", { ...invite, error: String(error) });
      }
      if (!accept) return;
    }
    client.joinRoom(member.roomId).then(
      () => logger.info("joined a room the bot was invited to", invite),
      (error: unknown) => logger.warn("could not join a room", { ...invite, error: String(error) }),
    );
  }

  const adapter: MatrixAdapter = {
    specVersion: 1,
    channel: "matrix",
    capabilities: { threads: true, typing, maxMessageLength: MATRIX_MAX_MESSAGE_LENGTH },
    deliver,
    stream: createMatrixStream({
      client,
      intervalMs: config.streamIntervalMs ?? 1000,
      defaultMode: "off",
      maxMessageLength: MATRIX_MAX_MESSAGE_LENGTH,
      msgtype,
      send,
      messageContent,
      toError: toSessionsError,
    }),
    async createThread(request) {
      const roomId = matrixRoomId(request.parent.to);
      // Spawned from inside a thread: the sub-agent takes over that thread instead of opening another.
      if (request.parent.threadId !== undefined) {
        const root = matrixThreadRoot(request.parent.threadId);
        try {
          await send(
            roomId,
            messageContent(`Working on this here (session ${request.sessionKey}).`, root),
            transactionId(`thread:${request.sessionKey}`, 0),
          );
        } catch (error) {
          throw toSessionsError(error);
        }
        return { threadId: root, to: roomId };
      }
      const name = request.name.trim().slice(0, 200) || "sub-agent";
      try {
        const root = await send(
          roomId,
          messageContent(
            `Thread for "${name}" (session ${request.sessionKey}): replies here go to it.`,
            undefined,
          ),
          transactionId(`thread:${request.sessionKey}`, 0),
        );
        return { threadId: root, to: roomId };
      } catch (error) {
        throw toSessionsError(error);
      }
    },
    async sendTyping(target) {
      const roomId = (() => {
        try {
          return matrixRoomId(target.to);
        } catch {
          return undefined;
        }
      })();
      if (roomId !== undefined) await client.sendTyping(roomId, true, 30_000).catch(() => undefined);
    },
    resolveInbound,
    connection: {
      name: `matrix:${userId}`,
      async start() {
        if (typeof client.startClient !== "function") {
          throw new SessionsError("invalid_config", "createMatrixAdapter: the client cannot startClient()", {
            field: "client",
          });
        }
        await client.startClient({ initialSyncLimit: 20 });
      },
      async stop() {
        client.stopClient?.();
      },
    },
    attach(gateway) {
      if (config.ignoreEventsBefore === undefined) ignoreBefore = Date.now();
      const timeline = (
        event: MatrixEventLike,
        room: MatrixRoomLike | undefined,
        toStart: boolean | undefined,
        removed: boolean | undefined,
        data: { liveEvent?: boolean | undefined } | undefined,
      ) => onTimeline(gateway, event, room, toStart, removed, data);
      client.on(ROOM_TIMELINE, timeline);
      client.on(ROOM_MEMBER_MEMBERSHIP, onMembership);
      detachers.push(
        () => client.off(ROOM_TIMELINE, timeline),
        () => client.off(ROOM_MEMBER_MEMBERSHIP, onMembership),
      );
    },
    detach() {
      for (const off of detachers.splice(0)) off();
    },
  };
  return adapter;
}
