import { type Logger, SessionsError } from "@sessions/core";
import type { App, webApi } from "@slack/bolt";
import { toSessionsError } from "./errors.js";
import type { SlackChannelType } from "./inbound.js";

type WebClient = webApi.WebClient;
type WebClientOptions = webApi.WebClientOptions;

/** Where deliveries get a workspace's bot token: one token, or a lookup by team id (OAuth installations). */
export type SlackBotToken = string | ((teamId: string) => string | undefined | Promise<string | undefined>);

/** One workspace the adapter can post in: its team id and a Web API client with that workspace's bot token. */
export interface SlackWorkspace {
  teamId: string;
  teamName?: string | undefined;
  botUserId?: string | undefined;
  client: WebClient;
}

interface Identity {
  teamId: string;
  teamName?: string | undefined;
  botUserId?: string | undefined;
}

const CACHE_LIMIT = 5000;

function remember<T>(cache: Map<string, Promise<T>>, key: string, load: () => Promise<T>): Promise<T> {
  const hit = cache.get(key);
  if (hit !== undefined) return hit;
  if (cache.size >= CACHE_LIMIT) cache.clear();
  const loaded = load();
  cache.set(key, loaded);
  return loaded;
}

/**
 * The workspaces (teams) of one Slack app. A delivery names its workspace by `accountId` (the team id); the token
 * used for it is checked with `auth.test` to belong to that very workspace, so a message can never be posted with
 * another workspace's token. Clients reject rate-limited calls instead of waiting, so the outbox owns retries.
 */
export class SlackWorkspaces {
  readonly #app: App;
  readonly #botToken: SlackBotToken | undefined;
  readonly #logger: Logger;
  readonly #clients = new Map<string, WebClient>();
  readonly #identities = new Map<string, Promise<Identity>>();
  readonly #learned = new Map<string, string>();
  readonly #channels = new Map<
    string,
    Promise<{ type?: SlackChannelType | undefined; name?: string | undefined }>
  >();
  readonly #users = new Map<string, Promise<string | undefined>>();

  constructor(app: App, botToken: SlackBotToken | undefined, logger: Logger) {
    this.#app = app;
    this.#botToken = botToken;
    this.#logger = logger;
  }

  /** A bot token bolt authorised an inbound event with (`context.botToken`), for that event's workspace. */
  learn(teamId: string, token: string | undefined): void {
    if (typeof token === "string" && token !== "") this.#learned.set(teamId, token);
  }

  client(token: string): WebClient {
    let client = this.#clients.get(token);
    if (client === undefined) {
      const app = this.#app as App & { webClientOptions?: WebClientOptions | undefined };
      const Client = app.client.constructor as new (token?: string, options?: WebClientOptions) => WebClient;
      client = new Client(token, {
        ...(app.webClientOptions ?? {}),
        slackApiUrl: app.client.slackApiUrl,
        rejectRateLimitedCalls: true,
        retryConfig: { retries: 0 },
      });
      this.#clients.set(token, client);
    }
    return client;
  }

  #identity(token: string): Promise<Identity> {
    const cached = this.#identities.get(token);
    if (cached !== undefined) return cached;
    const loading = this.client(token)
      .auth.test()
      .then((r) => ({
        teamId: String(r.team_id),
        ...(typeof r.team === "string" ? { teamName: r.team } : {}),
        ...(typeof r.user_id === "string" ? { botUserId: r.user_id } : {}),
      }));
    this.#identities.set(token, loading);
    // A failed check is not remembered: the next delivery asks again.
    loading.catch(() => this.#identities.delete(token));
    return loading;
  }

  async #tokenFor(teamId: string | undefined): Promise<string | undefined> {
    if (typeof this.#botToken === "function") {
      if (teamId === undefined) return undefined;
      return (await this.#botToken(teamId)) ?? this.#learned.get(teamId);
    }
    if (teamId !== undefined && this.#learned.has(teamId)) return this.#learned.get(teamId);
    return this.#botToken ?? this.#app.client.token;
  }

  /**
   * The workspace for a delivery's `accountId` (a team id, any case). Without one (`default`), only an adapter
   * with a single bot token knows where to post. Throws `invalid_params` when no token belongs to the workspace.
   */
  async get(accountId: string | undefined): Promise<SlackWorkspace> {
    const teamId =
      accountId === undefined || accountId === "" || accountId === "default"
        ? undefined
        : accountId.toUpperCase();
    const token = await this.#tokenFor(teamId);
    if (token === undefined) {
      throw new SessionsError(
        "invalid_params",
        teamId === undefined
          ? "Slack delivery needs a workspace: accountId must be the team id"
          : `No Slack bot token for workspace ${teamId}`,
        { field: "accountId" },
      );
    }
    let identity: Identity;
    try {
      identity = await this.#identity(token);
    } catch (error) {
      throw toSessionsError(error, "the bot token");
    }
    if (teamId !== undefined && identity.teamId !== teamId) {
      throw new SessionsError(
        "invalid_params",
        `The Slack bot token for workspace ${teamId} belongs to workspace ${identity.teamId}: not posting there`,
        { field: "accountId" },
      );
    }
    return { ...identity, client: this.client(token) };
  }

  /** A conversation's type and name (`conversations.info`, cached; nothing when the scope is missing). */
  conversation(
    ws: SlackWorkspace,
    channel: string,
  ): Promise<{ type?: SlackChannelType | undefined; name?: string | undefined }> {
    if (channel.startsWith("D")) return Promise.resolve({ type: "im" });
    return remember(this.#channels, `${ws.teamId}|${channel}`, async () => {
      try {
        const info = (await ws.client.conversations.info({ channel })).channel;
        if (info === undefined) return {};
        const type: SlackChannelType = info.is_im
          ? "im"
          : info.is_mpim
            ? "mpim"
            : info.is_private
              ? "group"
              : "channel";
        return { type, ...(typeof info.name === "string" ? { name: info.name } : {}) };
      } catch (error) {
        this.#logger.debug("conversations.info failed", { channel, error: String(error) });
        return {};
      }
    });
  }

  /** A person's display name (`users.info`, cached; nothing when the scope is missing). */
  userName(ws: SlackWorkspace, user: string): Promise<string | undefined> {
    return remember(this.#users, `${ws.teamId}|${user}`, async () => {
      try {
        const info = (await ws.client.users.info({ user })).user;
        const name = info?.profile?.display_name || info?.real_name || info?.name;
        return typeof name === "string" && name !== "" ? name : undefined;
      } catch (error) {
        this.#logger.debug("users.info failed", { user, error: String(error) });
        return undefined;
      }
    });
  }
}
