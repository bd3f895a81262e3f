import type { AgentCard } from "@a2a-js/sdk";
import {
  type Client,
  ClientFactory,
  ClientFactoryOptions,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
  RestTransportFactory,
} from "@a2a-js/sdk/client";
import { findRemoteAgent, type RemoteAgentConfig, type SessionsConfig, SessionsError } from "@sessions/core";
import { agentIdOfKey } from "../runs/key-agent.js";

/** A remote agent's SDK client, made from its card. */
export interface RemoteClient {
  readonly client: Client;
  readonly card: AgentCard;
}

/** The remote agents of `agents.remotes`: which sessions are theirs, and a client for each, made on first use. */
export interface RemoteAgents {
  /** The remote agent whose session `sessionKey` is, if its agent is one. */
  of(sessionKey: string): RemoteAgentConfig | undefined;
  /**
   * The SDK client of `remote`, its card read once (again after a failure to read it). Every request it makes
   * carries the remote's `headers` and `auth` (a `tokenEnv` read at each request).
   */
  client(remote: RemoteAgentConfig): Promise<RemoteClient>;
}

/** Where a remote's card is: its own URL when it names a `.json` file, else under the base URL. */
function cardLocation(url: string): { base: string; path?: string } {
  const parsed = new URL(url);
  if (parsed.pathname.endsWith(".json")) return { base: url, path: "" };
  // The card's path is relative to the base: without a trailing slash its last segment would be dropped.
  if (!parsed.pathname.endsWith("/")) parsed.pathname += "/";
  return { base: parsed.toString() };
}

/**
 * The remote agents of `config`. `env` is where `auth.tokenEnv` is read, when a call is made (a rotated token is
 * picked up without a restart).
 */
export function createRemoteAgents(
  config: SessionsConfig,
  env: Readonly<Record<string, string | undefined>>,
): RemoteAgents {
  const clients = new Map<string, Promise<RemoteClient>>();
  const headers = (remote: RemoteAgentConfig): Record<string, string> => {
    const out: Record<string, string> = { ...remote.headers };
    const auth = remote.auth;
    if (auth !== undefined) {
      const token = auth.token ?? env[auth.tokenEnv as string];
      if (token === undefined || token === "")
        throw new SessionsError(
          "unavailable",
          `remote agent ${remote.id}: the environment variable ${auth.tokenEnv} (agents.remotes[].auth.tokenEnv) is not set`,
          { field: "auth.tokenEnv" },
        );
      out.Authorization = `Bearer ${token}`;
    }
    return out;
  };
  const make = async (remote: RemoteAgentConfig): Promise<RemoteClient> => {
    // A missing token is said as such, before any request.
    headers(remote);
    // Every request the SDK makes for this remote (its card, its calls) carries the remote's headers.
    const fetchImpl: typeof fetch = (input, init) => {
      const merged = new Headers(init?.headers);
      for (const [name, value] of Object.entries(headers(remote)))
        if (!merged.has(name)) merged.set(name, value);
      return fetch(input, { ...init, headers: merged });
    };
    // A v0.3 peer's card and calls are translated by the SDK's compatibility layer.
    const legacyCompat = { enabled: true };
    const resolver = new DefaultAgentCardResolver({ fetchImpl, legacyCompat });
    const factory = new ClientFactory(
      ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
        transports: [
          new JsonRpcTransportFactory({ fetchImpl, legacyCompat }),
          new RestTransportFactory({ fetchImpl, legacyCompat }),
        ],
        cardResolver: resolver,
      }),
    );
    const where = cardLocation(remote.url);
    let card: AgentCard;
    try {
      card = await resolver.resolve(where.base, where.path);
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      throw new SessionsError(
        "unavailable",
        `remote agent ${remote.id}: its card could not be read: ${reason}`,
      );
    }
    return { client: await factory.createFromAgentCard(card), card };
  };
  return {
    of(sessionKey) {
      return findRemoteAgent(config, agentIdOfKey(sessionKey));
    },
    client(remote) {
      let made = clients.get(remote.id);
      if (made === undefined) {
        made = make(remote);
        clients.set(remote.id, made);
        // A failure is not kept: the next call tries again (the remote may be back).
        made.catch(() => clients.delete(remote.id));
      }
      return made;
    },
  };
}
