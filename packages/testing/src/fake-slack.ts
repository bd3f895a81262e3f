import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import {
  createSocketModeHub,
  postSlackEvent,
  type SlackEnvelope,
  type SocketModeHub,
} from "./fake-slack-events.js";
import {
  defaultSlackTeams,
  type FakeSlackChannel,
  type FakeSlackTeam,
  SLACK_APP,
  slackTs,
} from "./slack-fixtures.js";

/** One Web API call the fake received. */
export interface SlackCall {
  /** `chat.postMessage`, `auth.test`, … */
  method: string;
  params: Record<string, unknown>;
  /** The token it was made with (`Authorization: Bearer` or the `token` param). */
  token?: string | undefined;
  /** The workspace that token belongs to, when it is a bot token. */
  teamId?: string | undefined;
}

/** How `failNext` fails a call: HTTP 429 with `Retry-After`, or a Slack error (`{ ok: false, error }`). */
export type SlackFailure =
  | { status: 429; retryAfterSeconds: number }
  | { error: string; needed?: string | undefined };

/** A message the bot posted (`chat.postMessage`), as the fake stored it: changed by `chat.update`, gone after `chat.delete`. */
export interface SlackPostedMessage {
  teamId: string;
  channel: string;
  ts: string;
  /** As sent: mrkdwn with `&`, `<`, `>` escaped by the sender. */
  text: string;
  threadTs?: string | undefined;
  user: string;
  botId: string;
  /** How many times `chat.update` changed it (the text above is the latest). */
  edits?: number | undefined;
}

/** Options of {@link createFakeSlack}. */
export interface FakeSlackOptions {
  /** The workspaces the app is installed in (default: the recorded Acme and Globex). */
  teams?: FakeSlackTeam[] | undefined;
  /**
   * How long `sendEvent` waits for an app to connect and then for the envelope's ack before it fails (default
   * 60,000 ms: a bound for an ack that never comes, far above the time a slow machine takes to give one).
   */
  ackTimeoutMs?: number | undefined;
}

/**
 * A running fake Slack (from {@link createFakeSlack}): point bolt at `apiUrl`, drive it with `sendEvent` (Socket Mode)
 * or `postEvent` (HTTP mode), and read what the bot did from `calls` and `posted`. Stop it with `close`.
 */
export interface FakeSlack {
  /** Pass as bolt's `clientOptions.slackApiUrl` (ends with `/api/`). */
  readonly apiUrl: string;
  readonly appId: string;
  /** The app-level token (`xapp-…`) for Socket Mode. */
  readonly appToken: string;
  /** The signing secret for the HTTP Events API. */
  readonly signingSecret: string;
  /** The workspaces, live state; the first is the default. */
  readonly teams: readonly FakeSlackTeam[];
  /** The workspace with this team id (live state); throws a plain `Error` for an unknown id (a bug in the test). */
  team(id: string): FakeSlackTeam;
  /** Every Web API call, in order. */
  readonly calls: SlackCall[];
  /** The calls of one Web API method (`chat.postMessage`, …), in order. */
  callsOf(method: string): SlackCall[];
  /** What the bot posted, in order (optionally in one channel), as the channel shows it now: edits applied, deleted gone. */
  posted(channel?: string): SlackPostedMessage[];
  /** Makes the next `times` calls of `method` fail (after letting `after` calls through, default 0). */
  failNext(
    method: string,
    times: number,
    failure: SlackFailure,
    options?: { after?: number | undefined },
  ): void;
  /** Sends an Events API body over Socket Mode; resolves with the envelope once the app acknowledged it. */
  sendEvent(body: Record<string, unknown>): Promise<SlackEnvelope>;
  /** Socket Mode: connections, envelopes, disconnects. */
  readonly socket: SocketModeHub;
  /** POSTs a signed Events API body to an app's request URL (HTTP mode). */
  postEvent(
    url: string,
    body: Record<string, unknown>,
    options?: {
      signingSecret?: string | undefined;
      timestamp?: number | undefined;
      retryNum?: number | undefined;
    },
  ): Promise<{ status: number; body: string }>;
  /** Closes Socket Mode connections and stops the server; call it in `afterAll`. */
  close(): Promise<void>;
}

type Reply = {
  status?: number | undefined;
  headers?: Record<string, string> | undefined;
  body: Record<string, unknown>;
};

const fail = (error: string, extra: Record<string, unknown> = {}): Reply => ({
  body: { ok: false, error, ...extra },
});

function channelObject(channel: FakeSlackChannel, team: FakeSlackTeam): Record<string, unknown> {
  const base = {
    id: channel.id,
    created: 1700000000,
    is_archived: channel.archived === true,
    context_team_id: team.id,
    shared_team_ids: [team.id],
  };
  if (channel.kind === "im") return { ...base, is_im: true, user: channel.user, is_user_deleted: false };
  return {
    ...base,
    name: channel.name,
    is_channel: channel.kind !== "mpim",
    is_group: channel.kind === "mpim",
    is_mpim: channel.kind === "mpim",
    is_im: false,
    is_private: channel.kind !== "public",
    is_member: channel.member !== false,
    is_general: channel.name === "general",
  };
}

/**
 * A fake Slack on 127.0.0.1 that the real `@slack/bolt` runs against unmodified (`clientOptions.slackApiUrl`):
 * the Web API methods bolt and the sessions adapter call (`auth.test`, `chat.postMessage`, `conversations.info`,
 * `users.info`, `apps.connections.open`), several workspaces with their own bot tokens (a token only reaches its own
 * workspace's channels), Slack's errors (`not_in_channel`, `channel_not_found`, `is_archived`, `invalid_auth`, …),
 * 429s with `Retry-After` on demand, Socket Mode (a WebSocket link with `hello`, envelopes and acks) and signed
 * Events API requests for HTTP mode.
 */
export async function createFakeSlack(options: FakeSlackOptions = {}): Promise<FakeSlack> {
  const teams = structuredClone(options.teams ?? defaultSlackTeams());
  const calls: SlackCall[] = [];
  const posted: SlackPostedMessage[] = [];
  const failures = new Map<string, { times: number; after: number; failure: SlackFailure }>();
  let origin = "";

  const teamOfToken = (token: string | undefined) => teams.find((t) => t.botToken === token);

  function findChannel(team: FakeSlackTeam, id: string): FakeSlackChannel | undefined {
    const channel = team.channels.find((c) => c.id === id);
    if (channel !== undefined || !/^[UW]/.test(id)) return channel;
    // Posting to a user id opens (or reuses) the DM with them.
    if (!team.users.some((u) => u.id === id && u.isBot !== true)) return undefined;
    const im = team.channels.find((c) => c.kind === "im" && c.user === id);
    if (im !== undefined) return im;
    const created: FakeSlackChannel = { id: `D0${id.slice(2, 9)}`, kind: "im", user: id };
    team.channels.push(created);
    return created;
  }

  function postMessage(team: FakeSlackTeam, params: Record<string, unknown>): Reply {
    const id = typeof params.channel === "string" ? params.channel : "";
    const channel = findChannel(team, id);
    if (channel === undefined) return fail("channel_not_found");
    if (channel.archived === true) return fail("is_archived");
    if (channel.member === false) return fail("not_in_channel");
    const text = typeof params.text === "string" ? params.text : "";
    if (text.trim() === "" && params.blocks === undefined) return fail("no_text");
    if (text.length > 40_000) return fail("msg_too_long");
    const threadTs =
      typeof params.thread_ts === "string" && params.thread_ts !== "" ? params.thread_ts : undefined;
    const message: SlackPostedMessage = {
      teamId: team.id,
      channel: channel.id,
      ts: slackTs(),
      text,
      user: team.botUserId,
      botId: team.botId,
      ...(threadTs === undefined ? {} : { threadTs }),
    };
    posted.push(message);
    return {
      body: {
        ok: true,
        channel: channel.id,
        ts: message.ts,
        message: {
          type: "message",
          text,
          user: team.botUserId,
          bot_id: team.botId,
          app_id: SLACK_APP.appId,
          team: team.id,
          ts: message.ts,
          ...(threadTs === undefined ? {} : { thread_ts: threadTs }),
        },
      },
    };
  }

  /** `chat.update` and `chat.delete`: the bot's own message `ts` in `channel`, changed or removed. */
  function changeMessage(team: FakeSlackTeam, params: Record<string, unknown>, remove: boolean): Reply {
    const id = typeof params.channel === "string" ? params.channel : "";
    if (findChannel(team, id) === undefined) return fail("channel_not_found");
    const at = posted.findIndex((m) => m.teamId === team.id && m.channel === id && m.ts === params.ts);
    const message = posted[at];
    if (message === undefined) return fail("message_not_found");
    if (remove) {
      posted.splice(at, 1);
      return { body: { ok: true, channel: id, ts: message.ts } };
    }
    const text = typeof params.text === "string" ? params.text : "";
    if (text.trim() === "" && params.blocks === undefined) return fail("no_text");
    if (text.length > 40_000) return fail("msg_too_long");
    message.text = text;
    message.edits = (message.edits ?? 0) + 1;
    return {
      body: {
        ok: true,
        channel: id,
        ts: message.ts,
        text,
        message: { type: "message", text, user: team.botUserId, bot_id: team.botId, app_id: SLACK_APP.appId },
      },
    };
  }

  function handle(method: string, params: Record<string, unknown>, token: string | undefined): Reply {
    if (method === "apps.connections.open") {
      if (token === undefined) return fail("not_authed");
      if (token !== SLACK_APP.appToken)
        return fail(token.startsWith("xapp-") ? "invalid_auth" : "not_allowed_token_type");
      return { body: { ok: true, url: hub.issueUrl() } };
    }
    if (token === undefined) return fail("not_authed");
    const team = teamOfToken(token);
    if (team === undefined)
      return fail(token === SLACK_APP.appToken ? "not_allowed_token_type" : "invalid_auth");
    switch (method) {
      case "auth.test":
        return {
          body: {
            ok: true,
            url: `https://${team.domain}.slack.com/`,
            team: team.name,
            user: "sessions",
            team_id: team.id,
            user_id: team.botUserId,
            bot_id: team.botId,
            is_enterprise_install: false,
          },
        };
      case "chat.postMessage":
        return postMessage(team, params);
      case "chat.update":
        return changeMessage(team, params, false);
      case "chat.delete":
        return changeMessage(team, params, true);
      case "conversations.info": {
        const channel = team.channels.find((c) => c.id === params.channel);
        return channel === undefined
          ? fail("channel_not_found")
          : { body: { ok: true, channel: channelObject(channel, team) } };
      }
      case "users.info": {
        const user = team.users.find((u) => u.id === params.user);
        if (user === undefined) return fail("user_not_found");
        const profile = { real_name: user.realName, display_name: user.name, team: team.id };
        return {
          body: {
            ok: true,
            user: {
              id: user.id,
              team_id: team.id,
              name: user.name,
              real_name: user.realName,
              is_bot: user.isBot === true,
              profile,
            },
          },
        };
      }
      default:
        return fail("unknown_method", { req_method: method });
    }
  }

  function send(res: ServerResponse, reply: Reply) {
    res
      .writeHead(reply.status ?? 200, { "content-type": "application/json; charset=utf-8", ...reply.headers })
      .end(JSON.stringify(reply.body));
  }

  async function onRequest(req: IncomingMessage, res: ServerResponse) {
    const match = /^\/api\/([\w.]+)(?:\?.*)?$/.exec(req.url ?? "");
    if (match === null || req.method !== "POST") {
      send(res, { status: 404, body: { ok: false, error: "unknown_method" } });
      return;
    }
    const method = match[1] as string;
    let raw = "";
    for await (const chunk of req) raw += String(chunk);
    let params: Record<string, unknown>;
    try {
      params = String(req.headers["content-type"]).includes("application/json")
        ? ((raw === "" ? {} : JSON.parse(raw)) as Record<string, unknown>)
        : Object.fromEntries(new URLSearchParams(raw));
    } catch {
      send(res, fail("invalid_json"));
      return;
    }
    const bearer = /^Bearer (.+)$/.exec(String(req.headers.authorization ?? ""))?.[1];
    const token = bearer ?? (typeof params.token === "string" ? params.token : undefined);
    const { token: _token, ...rest } = params;
    const teamId = teamOfToken(token)?.id;
    calls.push({
      method,
      params: rest,
      ...(token === undefined ? {} : { token }),
      ...(teamId === undefined ? {} : { teamId }),
    });
    const failure = failures.get(method);
    if (failure !== undefined && failure.after > 0) failure.after--;
    else if (failure !== undefined && failure.times > 0) {
      failure.times--;
      if ("status" in failure.failure) {
        send(res, {
          status: 429,
          headers: { "retry-after": String(failure.failure.retryAfterSeconds) },
          body: { ok: false, error: "ratelimited" },
        });
      } else {
        const { error, needed } = failure.failure;
        send(res, fail(error, needed === undefined ? {} : { needed, provided: "chat:write" }));
      }
      return;
    }
    send(res, handle(method, params, token));
  }

  const server: Server = createServer((req, res) => {
    onRequest(req, res).catch(() => send(res, { status: 500, body: { ok: false, error: "fatal_error" } }));
  });
  const hub = createSocketModeHub(server, () => origin, {
    appId: SLACK_APP.appId,
    ackTimeoutMs: options.ackTimeoutMs ?? 60_000,
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    apiUrl: `${origin}/api/`,
    appId: SLACK_APP.appId,
    appToken: SLACK_APP.appToken,
    signingSecret: SLACK_APP.signingSecret,
    teams,
    team(id) {
      const team = teams.find((t) => t.id === id);
      if (team === undefined) throw new Error(`fake Slack: no workspace ${id}`);
      return team;
    },
    calls,
    callsOf: (method) => calls.filter((c) => c.method === method),
    posted: (channel) => posted.filter((m) => channel === undefined || m.channel === channel),
    failNext(method, times, failure, failOptions = {}) {
      failures.set(method, { times, after: failOptions.after ?? 0, failure });
    },
    sendEvent: (body) => hub.send(body),
    socket: hub,
    postEvent: (url, body, postOptions = {}) =>
      postSlackEvent(url, body, {
        ...postOptions,
        signingSecret: postOptions.signingSecret ?? SLACK_APP.signingSecret,
      }),
    async close() {
      await hub.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
