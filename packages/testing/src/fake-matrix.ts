import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { type FakeMatrixRoomOptions, FakeMatrixWorld, type MatrixStoredEvent } from "./fake-matrix-world.js";
import type { MatrixEventInput } from "./matrix-fixtures.js";
import { type MatrixShownMessage, shownMessages } from "./matrix-shown.js";

/** One client-server API call the fake received (`/sync` polls are counted in `syncCount`, not recorded). */
export interface MatrixCall {
  /** The route's name: `send`, `typing`, `join`, `whoami`, `filter`, … */
  route: string;
  method: string;
  /** The path after `/_matrix/client/<version>`, as requested. */
  path: string;
  /** Decoded path parameters (`roomId`, `eventType`, `txnId`, `userId`, …). */
  params: Record<string, string>;
  query: Record<string, string>;
  body: Record<string, unknown>;
}

/** A Matrix error response the fake answers with (`failNext`). */
export interface FakeMatrixError {
  status: number;
  errcode: string;
  error?: string | undefined;
  /** `M_LIMIT_EXCEEDED`'s deprecated body field. */
  retry_after_ms?: number | undefined;
  /** Sets a `Retry-After` header (seconds), as homeservers do since spec v1.10. */
  retryAfterSeconds?: number | undefined;
}

/** What the bot sent into a room. */
export interface MatrixSentEvent {
  roomId: string;
  eventId: string;
  type: string;
  txnId: string;
  content: Record<string, unknown>;
}

/**
 * A running fake homeserver (from {@link createFakeMatrixHomeserver}): log the real matrix-js-sdk in with `baseUrl`,
 * `accessToken` and `userId`, post events with `post(roomId, matrixEvent(…))`, await `synced()`, then read what the
 * bot did from `sent()` and `calls`. Stop it with `close`.
 */
export interface FakeMatrixHomeserver {
  /** Pass as matrix-js-sdk's `baseUrl`. */
  readonly baseUrl: string;
  readonly accessToken: string;
  readonly userId: string;
  readonly deviceId: string;
  /** Two rooms that exist from the start: "Ops Team" (bot, Alice, Bob) and Alice's direct chat with the bot. */
  readonly rooms: { readonly ops: string; readonly dm: string };
  /** Every call except `/sync`, in order. */
  readonly calls: MatrixCall[];
  /** Endpoints the fake does not serve that a client asked for (`METHOD path`). */
  readonly unhandled: string[];
  /** How many `/sync` requests were answered. */
  readonly syncCount: number;
  /** The calls of one route (`send`, `typing`, `join`, `whoami`, …), in order. */
  callsOf(route: string): MatrixCall[];
  /** The bot's messages, in order (one per distinct transaction). */
  sent(): MatrixSentEvent[];
  /**
   * The bot's `m.room.message` events in a room as a client shows them: each with its latest `m.replace` edit
   * applied (the edits themselves not listed), redacted ones gone; oldest first.
   */
  shown(roomId: string): MatrixShownMessage[];
  /** Creates a room; returns its id. */
  createRoom(options: FakeMatrixRoomOptions): string;
  /** Posts an event into a room as its `sender` (a fixture from `matrixEvent`); returns the stored event. */
  post(roomId: string, event: MatrixEventInput): MatrixStoredEvent;
  /** Invites the bot into a room (it shows up under `rooms.invite` in the next `/sync`). */
  inviteBot(roomId: string, inviter: string): void;
  /**
   * Makes the next `times` calls of `route` (`send`, `typing`, `join`, …) fail with `error` (default:
   * `M_LIMIT_EXCEEDED`), after letting `after` calls through (default 0).
   */
  failNext(
    route: string,
    times: number,
    error?: FakeMatrixError,
    options?: { after?: number | undefined },
  ): void;
  /**
   * Resolves once a `/sync` has been answered after everything posted so far: the response is on its way to the
   * client, which has not necessarily processed it yet.
   */
  synced(): Promise<void>;
  /** How many `/sync` long polls are held open right now, waiting for something new. */
  waitingSyncs(): number;
  /** Ends open `/sync` long polls and stops the server; call it in `afterAll`. */
  close(): Promise<void>;
}

interface Route {
  name: string;
  method: string;
  pattern: RegExp;
  keys: string[];
}

const route = (name: string, method: string, path: string): Route => {
  const keys: string[] = [];
  const source = path.replace(/\{(\w+)\}/g, (_, key: string) => {
    keys.push(key);
    return "([^/]+)";
  });
  return { name, method, pattern: new RegExp(`^${source}/?$`), keys };
};

const ROUTES: Route[] = [
  route("whoami", "GET", "/account/whoami"),
  route("sync", "GET", "/sync"),
  route("send", "PUT", "/rooms/{roomId}/send/{eventType}/{txnId}"),
  route("typing", "PUT", "/rooms/{roomId}/typing/{userId}"),
  route("redact", "PUT", "/rooms/{roomId}/redact/{eventId}/{txnId}"),
  route("join", "POST", "/join/{roomId}"),
  route("join", "POST", "/rooms/{roomId}/join"),
  route("leave", "POST", "/rooms/{roomId}/leave"),
  route("joined_members", "GET", "/rooms/{roomId}/joined_members"),
  route("members", "GET", "/rooms/{roomId}/members"),
  route("event", "GET", "/rooms/{roomId}/event/{eventId}"),
  route("state", "GET", "/rooms/{roomId}/state/{eventType}/{stateKey}"),
  route("state", "GET", "/rooms/{roomId}/state/{eventType}"),
  route("receipt", "POST", "/rooms/{roomId}/receipt/{receiptType}/{eventId}"),
  route("read_markers", "POST", "/rooms/{roomId}/read_markers"),
  route("create_filter", "POST", "/user/{userId}/filter"),
  route("filter", "GET", "/user/{userId}/filter/{filterId}"),
  route("account_data", "GET", "/user/{userId}/account_data/{eventType}"),
  route("set_account_data", "PUT", "/user/{userId}/account_data/{eventType}"),
  route("profile", "GET", "/profile/{userId}"),
  route("pushrules", "GET", "/pushrules"),
  route("capabilities", "GET", "/capabilities"),
  route("presence", "PUT", "/presence/{userId}/status"),
];

const PUSH_RULES = { global: { override: [], content: [], room: [], sender: [], underride: [] } };
const DEFAULT_LIMIT: FakeMatrixError = {
  status: 429,
  errcode: "M_LIMIT_EXCEEDED",
  error: "Too Many Requests",
  retry_after_ms: 1000,
};

/**
 * A fake Matrix homeserver (client-server API) on 127.0.0.1 for matrix-js-sdk: `/versions`, `/account/whoami`,
 * filters, push rules, long-polled `/sync` with `since`, `/rooms/{id}/send/{type}/{txnId}` (idempotent per
 * transaction id, as on a real server), typing, joins, members and state. It records every call, can fail calls on
 * demand (`M_LIMIT_EXCEEDED` included), and knows two rooms from the start: "Ops Team" and a direct chat.
 */
export async function createFakeMatrixHomeserver(
  options: { accessToken?: string | undefined; serverName?: string | undefined } = {},
): Promise<FakeMatrixHomeserver> {
  const serverName = options.serverName ?? "fake.local";
  const accessToken = options.accessToken ?? "syt_c2Vzc2lvbnMtYm90_FAKEfakeFAKEfake_0a1b2c";
  const userId = `@sessions-bot:${serverName}`;
  const deviceId = "SESSIONSBOT";
  const alice = `@alice:${serverName}`;
  const bob = `@bob:${serverName}`;
  const world = new FakeMatrixWorld(userId, serverName);
  for (const [id, name] of [
    [userId, "Sessions Bot"],
    [alice, "Alice"],
    [bob, "Bob"],
    [`@ci-bot:${serverName}`, "CI Bot"],
  ] as const)
    world.displayNames.set(id, name);
  const rooms = {
    ops: world.createRoom({
      name: "Ops Team",
      members: [alice, userId, bob],
      roomId: `!OpsTeamRoomQz:${serverName}`,
    }),
    dm: world.createRoom({ members: [alice, userId], direct: true, roomId: `!DirectAliceXy:${serverName}` }),
  };

  const calls: MatrixCall[] = [];
  const unhandled: string[] = [];
  const failures = new Map<string, { times: number; after: number; error: FakeMatrixError }>();
  const filters = new Map<string, Record<string, unknown>>();
  const transactions = new Map<string, MatrixSentEvent>();
  const sent: MatrixSentEvent[] = [];
  const redacted = new Set<string>();
  const syncWaiters = new Set<{ pos: number; resolve: () => void }>();
  const openPolls = new Set<() => void>();
  let syncCount = 0;
  let answeredPos = -1;
  let closing = false;

  function reply(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
    if (res.writableEnded || res.destroyed) return;
    res.writeHead(status, { "content-type": "application/json", ...headers }).end(JSON.stringify(body));
  }
  const error = (res: ServerResponse, status: number, errcode: string, message: string) =>
    reply(res, status, { errcode, error: message });

  function timelineLimit(filter: string | undefined): number {
    const parsed = filter === undefined ? undefined : (filters.get(filter) ?? safeJson(filter));
    const limit = (parsed?.room as { timeline?: { limit?: unknown } | undefined } | undefined)?.timeline
      ?.limit;
    return typeof limit === "number" && limit > 0 ? limit : 20;
  }

  async function sync(res: ServerResponse, query: Record<string, string>) {
    const since = query.since === undefined ? undefined : Number(query.since);
    const timeout = Math.min(Number(query.timeout ?? 0) || 0, 30_000);
    if (since !== undefined && world.pos <= since && timeout > 0 && !closing) {
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          stop();
          openPolls.delete(done);
          resolve();
        };
        const timer = setTimeout(done, timeout);
        const stop = world.onChange(done);
        openPolls.add(done);
        res.once("close", done);
      });
    }
    const body = world.sync(since, timelineLimit(query.filter));
    syncCount++;
    reply(res, 200, body);
    const answeredAt = Number(body.next_batch);
    answeredPos = Math.max(answeredPos, answeredAt);
    for (const waiter of [...syncWaiters]) {
      if (answeredAt >= waiter.pos) {
        syncWaiters.delete(waiter);
        waiter.resolve();
      }
    }
  }

  function handle(
    name: string,
    p: Record<string, string>,
    body: Record<string, unknown>,
    res: ServerResponse,
  ) {
    const roomId = p.roomId ?? "";
    switch (name) {
      case "whoami":
        return reply(res, 200, { user_id: userId, device_id: deviceId, is_guest: false });
      case "send": {
        const key = `${roomId}\u0000${p.txnId}`;
        const seen = transactions.get(key);
        if (seen !== undefined) return reply(res, 200, { event_id: seen.eventId });
        if (world.membership(roomId, userId) !== "join")
          return error(res, 403, "M_FORBIDDEN", `User ${userId} not in room ${roomId}`);
        const event = world.append(
          roomId,
          { type: p.eventType as string, sender: userId, content: body },
          p.txnId,
        );
        const record = {
          roomId,
          eventId: event.event_id,
          type: event.type,
          txnId: p.txnId as string,
          content: body,
        };
        transactions.set(key, record);
        sent.push(record);
        return reply(res, 200, { event_id: event.event_id });
      }
      case "redact": {
        const target = sent.find((event) => event.roomId === roomId && event.eventId === p.eventId);
        if (target === undefined) return error(res, 404, "M_NOT_FOUND", "Event not found.");
        redacted.add(target.eventId);
        const redaction = world.append(
          roomId,
          { type: "m.room.redaction", sender: userId, content: { ...body, redacts: target.eventId } },
          p.txnId,
        );
        return reply(res, 200, { event_id: redaction.event_id });
      }
      case "typing":
      case "receipt":
      case "read_markers":
      case "presence":
        return reply(res, 200, {});
      case "join": {
        const membership = world.membership(roomId, userId);
        if (membership === "join") return reply(res, 200, { room_id: roomId });
        if (membership !== "invite")
          return error(res, 403, "M_FORBIDDEN", "You are not invited to this room.");
        world.append(roomId, {
          type: "m.room.member",
          state_key: userId,
          sender: userId,
          content: world.memberContent(userId, "join"),
        });
        return reply(res, 200, { room_id: roomId });
      }
      case "leave":
        if (world.membership(roomId, userId) !== undefined)
          world.append(roomId, {
            type: "m.room.member",
            state_key: userId,
            sender: userId,
            content: { membership: "leave" },
          });
        return reply(res, 200, {});
      case "joined_members":
        return reply(res, 200, {
          joined: Object.fromEntries(
            world
              .members(roomId, "join")
              .map((m) => [m, { display_name: world.displayNames.get(m) ?? null, avatar_url: null }]),
          ),
        });
      case "members":
        return reply(res, 200, {
          chunk: ["join", "invite"].flatMap((m) =>
            world.members(roomId, m).map((u) => world.stateEvent(roomId, "m.room.member", u)),
          ),
        });
      case "event": {
        const event = world.findEvent(roomId, p.eventId as string);
        return event === undefined
          ? error(res, 404, "M_NOT_FOUND", "Event not found.")
          : reply(res, 200, event);
      }
      case "state": {
        const event = world.stateEvent(roomId, p.eventType as string, p.stateKey ?? "");
        return event === undefined
          ? error(res, 404, "M_NOT_FOUND", "Event not found.")
          : reply(res, 200, event.content);
      }
      case "create_filter": {
        const filterId = String(filters.size + 1);
        filters.set(filterId, body);
        return reply(res, 200, { filter_id: filterId });
      }
      case "filter": {
        const filter = filters.get(p.filterId as string);
        return filter === undefined
          ? error(res, 404, "M_NOT_FOUND", "No such filter")
          : reply(res, 200, filter);
      }
      case "account_data": {
        const data = world.accountData.get(p.eventType as string);
        return data === undefined
          ? error(res, 404, "M_NOT_FOUND", "Account data not found")
          : reply(res, 200, data.content);
      }
      case "set_account_data":
        world.setAccountData(p.eventType as string, body);
        return reply(res, 200, {});
      case "profile":
        return reply(res, 200, { displayname: world.displayNames.get(p.userId as string) ?? null });
      case "pushrules":
        return reply(res, 200, PUSH_RULES);
      case "capabilities":
        return reply(res, 200, {
          capabilities: {
            "m.change_password": { enabled: false },
            "m.room_versions": { default: "10", available: { "10": "stable", "11": "stable" } },
          },
        });
    }
  }

  async function onRequest(req: IncomingMessage, res: ServerResponse) {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    const query = Object.fromEntries(url.searchParams);
    if (url.pathname === "/_matrix/client/versions") {
      return reply(res, 200, {
        versions: [
          "r0.6.1",
          "v1.1",
          "v1.2",
          "v1.3",
          "v1.4",
          "v1.5",
          "v1.6",
          "v1.7",
          "v1.8",
          "v1.9",
          "v1.10",
          "v1.11",
        ],
        unstable_features: {},
      });
    }
    const prefixed = /^\/_matrix\/client\/(?:v3|r0|v1|unstable)(\/.*)$/.exec(url.pathname);
    const path = prefixed?.[1] ?? url.pathname;
    const match = ROUTES.map((r) => ({ r, m: r.method === req.method ? r.pattern.exec(path) : null })).find(
      (x) => x.m !== null,
    );
    if (prefixed === null || match === undefined || match.m === null) {
      unhandled.push(`${req.method} ${url.pathname}`);
      return error(res, 404, "M_UNRECOGNIZED", "Unrecognized request");
    }
    const bearer = /^Bearer (.+)$/.exec(req.headers.authorization ?? "")?.[1] ?? query.access_token;
    if (bearer !== accessToken) return error(res, 401, "M_UNKNOWN_TOKEN", "Invalid access token passed.");
    let raw = "";
    for await (const chunk of req) raw += String(chunk);
    const body = raw === "" ? {} : safeJson(raw);
    if (body === undefined) return error(res, 400, "M_NOT_JSON", "Content not JSON.");
    const params = Object.fromEntries(
      match.r.keys.map((k, i) => [k, decodeURIComponent(match.m?.[i + 1] ?? "")]),
    );
    if (match.r.name === "sync") return sync(res, query);
    calls.push({ route: match.r.name, method: req.method ?? "GET", path, params, query, body });
    const failure = failures.get(match.r.name);
    if (failure !== undefined && failure.after > 0) failure.after--;
    else if (failure !== undefined && failure.times > 0) {
      failure.times--;
      const { status, errcode, error: message, retry_after_ms, retryAfterSeconds } = failure.error;
      return reply(
        res,
        status,
        { errcode, error: message ?? errcode, ...(retry_after_ms === undefined ? {} : { retry_after_ms }) },
        retryAfterSeconds === undefined ? {} : { "retry-after": String(retryAfterSeconds) },
      );
    }
    return handle(match.r.name, params, body, res);
  }

  const server: Server = createServer((req, res) => {
    onRequest(req, res).catch((e: unknown) => error(res, 500, "M_UNKNOWN", `fake crashed: ${String(e)}`));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;

  return {
    baseUrl: `http://127.0.0.1:${port}`,
    accessToken,
    userId,
    deviceId,
    rooms,
    calls,
    unhandled,
    get syncCount() {
      return syncCount;
    },
    callsOf: (name) => calls.filter((c) => c.route === name),
    sent: () => [...sent],
    shown: (roomId) => shownMessages(sent, redacted, roomId),
    createRoom: (roomOptions) => world.createRoom(roomOptions),
    post: (roomId, event) => world.append(roomId, event),
    inviteBot(roomId, inviter) {
      world.append(roomId, {
        type: "m.room.member",
        state_key: userId,
        sender: inviter,
        content: world.memberContent(userId, "invite"),
      });
    },
    failNext(name, times, failure = DEFAULT_LIMIT, options = {}) {
      failures.set(name, { times, after: options.after ?? 0, error: failure });
    },
    waitingSyncs: () => openPolls.size,
    synced() {
      if (answeredPos >= world.pos) return Promise.resolve();
      return new Promise<void>((resolve) => syncWaiters.add({ pos: world.pos, resolve }));
    },
    async close() {
      closing = true;
      for (const wake of [...openPolls]) wake();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function safeJson(text: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return value !== null && typeof value === "object" ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}
