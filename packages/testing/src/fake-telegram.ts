import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** One Bot API call the fake received. */
export interface TelegramCall {
  method: string;
  params: Record<string, unknown>;
  /** The HTTP status the fake answered with (200 when the call succeeded). */
  status?: number | undefined;
}

/** A message of the bot as a chat shows it (see `FakeTelegramApi.messages`). */
export interface FakeTelegramMessage {
  messageId: number;
  text: string;
  threadId?: number | undefined;
  /** How many times `editMessageText` changed it. */
  edits: number;
}

/** Telegram's limit on a message's text (and a draft's), in characters. */
const MAX_TEXT = 4096;

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
  /**
   * Holds the next call of `method` once it has arrived (recorded in `calls`, not yet served) until `release()`:
   * to act at a moment when the caller is known to be waiting for that answer, e.g. to freeze its process with no
   * request of its own still on the way. `arrived` resolves with the call; `close()` releases what is held.
   */
  holdNext(method: string): HeldTelegramCall;
  /** Calls of one method. */
  callsOf(method: string): TelegramCall[];
  /**
   * The bot's messages in a chat as the chat shows them now: sent by `sendMessage`, changed by `editMessageText`,
   * gone after `deleteMessage`; oldest first.
   */
  messages(chatId: number | string): FakeTelegramMessage[];
  /** The latest text of each draft `sendMessageDraft` streamed to a private chat, by `draft_id`. */
  drafts(chatId: number | string): Map<number, string>;
  /** How many `getUpdates` long polls are held open right now, waiting for an update. */
  waitingPolls(): number;
  /** Stops the server (pending long polls end). */
  close(): Promise<void>;
}

/** A call `holdNext` holds: it has arrived and is recorded, and waits for `release` to be served. */
export interface HeldTelegramCall {
  /** Resolves with the call once it has arrived. */
  arrived: Promise<TelegramCall>;
  /** Serves the call (as it would have been served at once); releasing twice does nothing. */
  release(): void;
}

/** A Bot API refusal `handle` answers with (400 and its description). */
class BadRequest {
  constructor(readonly description: string) {}
}

const BOT = {
  id: 7_000_000_001,
  is_bot: true as const,
  first_name: "Sessions Bot",
  username: "sessions_test_bot",
};

/**
 * A fake Telegram Bot API on 127.0.0.1 for grammY (`new Bot(token, { client: { apiRoot } })`): it serves
 * `getMe`, long-polled `getUpdates` fed by `pushUpdate`, `sendMessage`, `editMessageText`, `deleteMessage`,
 * `sendMessageDraft`, `sendChatAction`, `createForumTopic`, `deleteWebhook` and friends; keeps the bot's messages
 * as each chat shows them (`messages`), records every call, and can fail calls on demand (rate limits included).
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
  const holds = new Map<string, { arrive: (call: TelegramCall) => void; released: Promise<void> }>();
  const releases = new Set<() => void>();
  const polls = new Set<() => void>();
  let nextUpdateId = 1;
  let nextMessageId = 1000;
  let nextTopicId = 500;
  const chats = new Map<number, Map<number, FakeTelegramMessage>>();
  const draftsByChat = new Map<number, Map<number, string>>();
  const chatOf = (chatId: number) => {
    let chat = chats.get(chatId);
    if (chat === undefined) {
      chat = new Map();
      chats.set(chatId, chat);
    }
    return chat;
  };
  /** Telegram's answer to a text it does not take: empty, or past 4096 characters. */
  const textRefused = (text: unknown): BadRequest | undefined => {
    if (typeof text !== "string" || text.trim() === "") return new BadRequest("message text is empty");
    if (text.length > MAX_TEXT) return new BadRequest("message is too long");
    return undefined;
  };

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
        const refused = textRefused(params.text);
        if (refused !== undefined) return refused;
        const messageId = nextMessageId++;
        chatOf(chatId).set(messageId, {
          messageId,
          text: String(params.text),
          ...(typeof params.message_thread_id === "number" ? { threadId: params.message_thread_id } : {}),
          edits: 0,
        });
        return {
          message_id: messageId,
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
        if (!forums.has(String(params.chat_id))) return new BadRequest("the chat is not a forum");
        return { message_thread_id: nextTopicId++, name: params.name, icon_color: 7322096 };
      case "closeForumTopic":
      case "editForumTopic":
        return true;
      case "editMessageText": {
        const chatId = Number(params.chat_id);
        const message = chatOf(chatId).get(Number(params.message_id));
        if (message === undefined) return new BadRequest("message to edit not found");
        const refused = textRefused(params.text);
        if (refused !== undefined) return refused;
        if (message.text === params.text) {
          return new BadRequest(
            "message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message",
          );
        }
        message.text = String(params.text);
        message.edits++;
        return {
          message_id: message.messageId,
          date: now,
          edit_date: now,
          chat: { id: chatId, type: chatId < 0 ? "supergroup" : "private" },
          from: BOT,
          text: message.text,
        };
      }
      case "deleteMessage":
        if (!chatOf(Number(params.chat_id)).delete(Number(params.message_id))) {
          return new BadRequest("message to delete not found");
        }
        return true;
      case "sendMessageDraft": {
        const chatId = Number(params.chat_id);
        if (!(chatId > 0)) return new BadRequest("drafts can be sent only to private chats");
        if (!Number.isInteger(params.draft_id) || params.draft_id === 0) {
          return new BadRequest("draft_id must be a non-zero integer");
        }
        const refused = textRefused(params.text);
        if (refused !== undefined) return refused;
        let drafts = draftsByChat.get(chatId);
        if (drafts === undefined) {
          drafts = new Map();
          draftsByChat.set(chatId, drafts);
        }
        drafts.set(params.draft_id as number, String(params.text));
        return true;
      }
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
    const hold = holds.get(method);
    if (hold !== undefined) {
      holds.delete(method);
      hold.arrive(call);
      await hold.released;
    }
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
    if (result instanceof BadRequest) {
      answer(400, { ok: false, error_code: 400, description: `Bad Request: ${result.description}` });
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
    holdNext(method) {
      let arrive: (call: TelegramCall) => void = () => {};
      const arrived = new Promise<TelegramCall>((resolve) => {
        arrive = resolve;
      });
      let release: () => void = () => {};
      const released = new Promise<void>((resolve) => {
        release = () => {
          releases.delete(release);
          resolve();
        };
      });
      releases.add(release);
      holds.set(method, { arrive, released });
      return { arrived, release };
    },
    callsOf: (method) => calls.filter((c) => c.method === method),
    messages: (chatId) => [...(chats.get(Number(chatId))?.values() ?? [])].map((message) => ({ ...message })),
    drafts: (chatId) => new Map(draftsByChat.get(Number(chatId)) ?? []),
    waitingPolls: () => polls.size,
    async close() {
      for (const wake of [...polls]) wake();
      for (const release of [...releases]) release();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
