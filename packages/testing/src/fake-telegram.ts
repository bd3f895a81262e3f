import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** One Bot API call the fake received. */
export interface TelegramCall {
  method: string;
  params: Record<string, unknown>;
  /** The HTTP status the fake answered with (200 when the call succeeded). */
  status?: number | undefined;
}

/** A Bot API error answer, as `failNext` sends it. */
export interface FakeTelegramError {
  error_code: number;
  description: string;
  parameters?: { retry_after?: number | undefined; migrate_to_chat_id?: number | undefined } | undefined;
}

/** A fake Telegram Bot API on 127.0.0.1, from `createFakeTelegramApi`. */
export interface FakeTelegramApi {
  /** Pass as grammY's `client.apiRoot`. */
  readonly apiRoot: string;
  readonly token: string;
  /** Every call, in order (getUpdates polls excluded). */
  readonly calls: TelegramCall[];
  readonly bot: { id: number; is_bot: true; first_name: string; username: string };
  /** Queues an update for `getUpdates` (its `update_id` is assigned when missing). */
  pushUpdate(update: Record<string, unknown>): void;
  /**
   * Makes the next `times` calls of `method` fail with `error` (default: 429, retry after 1 s), after letting
   * `after` calls through (default 0). `getUpdates` too: e.g. 409 Conflict, as when another poller takes over.
   */
  failNext(
    method: string,
    times: number,
    error?: FakeTelegramError,
    options?: { after?: number | undefined },
  ): void;
  /** Calls of one method. */
  callsOf(method: string): TelegramCall[];
  /** How many `getUpdates` long polls are held open right now, waiting for an update. */
  waitingPolls(): number;
  /** Stops the server (pending long polls end). */
  close(): Promise<void>;
}

const NOT_A_FORUM = Symbol("not a forum");

const BOT = {
  id: 7_000_000_001,
  is_bot: true as const,
  first_name: "Sessions Bot",
  username: "sessions_test_bot",
};

/**
 * A fake Telegram Bot API on 127.0.0.1 for grammY (`new Bot(token, { client: { apiRoot } })`): it serves
 * `getMe`, long-polled `getUpdates` fed by `pushUpdate`, `sendMessage`, `sendChatAction`, `createForumTopic`,
 * `deleteWebhook` and friends, records every call, and can fail calls on demand (rate limits included).
 */
export async function createFakeTelegramApi(
  options: { token?: string | undefined; forumChatIds?: readonly (number | string)[] | undefined } = {},
): Promise<FakeTelegramApi> {
  // Only forum supergroups can have topics (the recorded forum is -100900800700).
  const forums = new Set((options.forumChatIds ?? [-100900800700]).map(String));
  const token = options.token ?? "123456:TEST-TOKEN";
  const calls: TelegramCall[] = [];
  const updates: Record<string, unknown>[] = [];
  const failures = new Map<string, { times: number; after: number; error: FakeTelegramError }>();
  const polls = new Set<() => void>();
  let nextUpdateId = 1;
  let nextMessageId = 1000;
  let nextTopicId = 500;

  /** The error this call of `method` must fail with (see `failNext`), or undefined to serve it. */
  function failureFor(method: string): FakeTelegramError | undefined {
    const failure = failures.get(method);
    if (failure === undefined) return undefined;
    if (failure.after > 0) {
      failure.after--;
      return undefined;
    }
    if (failure.times <= 0) return undefined;
    failure.times--;
    return failure.error;
  }

  function reply(res: ServerResponse, status: number, body: unknown) {
    res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
  }

  function handle(method: string, params: Record<string, unknown>): unknown {
    const now = Math.floor(Date.now() / 1000);
    switch (method) {
      case "getMe":
        return BOT;
      case "deleteWebhook":
      case "setMyCommands":
      case "sendChatAction":
      case "close":
        return true;
      case "sendMessage": {
        const chatId = Number(params.chat_id);
        return {
          message_id: nextMessageId++,
          date: now,
          chat: { id: chatId, type: chatId < 0 ? "supergroup" : "private" },
          from: BOT,
          text: params.text,
          ...(params.message_thread_id === undefined
            ? {}
            : { message_thread_id: params.message_thread_id, is_topic_message: true }),
        };
      }
      case "createForumTopic":
        if (!forums.has(String(params.chat_id))) return NOT_A_FORUM;
        return { message_thread_id: nextTopicId++, name: params.name, icon_color: 7322096 };
      case "closeForumTopic":
      case "editForumTopic":
        return true;
      default:
        return undefined;
    }
  }

  async function onRequest(req: IncomingMessage, res: ServerResponse) {
    const match = /^\/bot([^/]+)\/(\w+)$/.exec(req.url ?? "");
    if (match === null || match[1] !== token) {
      reply(res, 404, { ok: false, error_code: 404, description: "Not Found" });
      return;
    }
    const method = match[2] as string;
    let body = "";
    for await (const chunk of req) body += String(chunk);
    let params: Record<string, unknown> = {};
    try {
      params = body === "" ? {} : (JSON.parse(body) as Record<string, unknown>);
    } catch {
      reply(res, 400, { ok: false, error_code: 400, description: "Bad Request: invalid JSON" });
      return;
    }
    if (method === "getUpdates") {
      // Polls can fail too: 409 Conflict (another poller on the token), 401 Unauthorized (a revoked token), …
      const error = failureFor(method);
      if (error !== undefined) {
        reply(res, error.error_code, { ok: false, ...error });
        return;
      }
      const offset = typeof params.offset === "number" ? params.offset : 0;
      while (updates.length > 0 && ((updates[0]?.update_id as number) ?? 0) < offset) updates.shift();
      if (updates.length === 0) {
        const timeout = Math.min(typeof params.timeout === "number" ? params.timeout : 0, 30) * 1000;
        await new Promise<void>((resolve) => {
          const done = () => {
            clearTimeout(timer);
            polls.delete(done);
            resolve();
          };
          const timer = setTimeout(done, timeout);
          polls.add(done);
        });
      }
      reply(res, 200, { ok: true, result: updates.filter((u) => (u.update_id as number) >= offset) });
      return;
    }
    const call: TelegramCall = { method, params };
    calls.push(call);
    const answer = (status: number, body: unknown) => {
      call.status = status;
      reply(res, status, body);
    };
    const failure = failureFor(method);
    if (failure !== undefined) {
      answer(failure.error_code, { ok: false, ...failure });
      return;
    }
    const result = handle(method, params);
    if (result === NOT_A_FORUM) {
      answer(400, { ok: false, error_code: 400, description: "Bad Request: the chat is not a forum" });
      return;
    }
    if (result === undefined) {
      answer(404, {
        ok: false,
        error_code: 404,
        description: `Not Found: method ${method} is not faked`,
      });
      return;
    }
    answer(200, { ok: true, result });
  }

  const server: Server = createServer((req, res) => {
    onRequest(req, res).catch(() =>
      reply(res, 500, { ok: false, error_code: 500, description: "fake crashed" }),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;

  return {
    apiRoot: `http://127.0.0.1:${port}`,
    token,
    calls,
    bot: BOT,
    pushUpdate(update) {
      updates.push({ ...update, update_id: update.update_id ?? nextUpdateId++ });
      for (const wake of [...polls]) wake();
    },
    failNext(
      method,
      times,
      error = {
        error_code: 429,
        description: "Too Many Requests: retry after 1",
        parameters: { retry_after: 1 },
      },
      options = {},
    ) {
      failures.set(method, { times, after: options.after ?? 0, error });
    },
    callsOf: (method) => calls.filter((c) => c.method === method),
    waitingPolls: () => polls.size,
    async close() {
      for (const wake of [...polls]) wake();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
