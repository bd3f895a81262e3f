import { createHash, timingSafeEqual } from "node:crypto";
import type { IncomingMessage } from "node:http";
import {
  defaultAgentId,
  type SessionsConfig,
  SessionsError,
  toStoreKey,
  type WireError,
} from "@sessions/core";
import { wireError } from "./wire-errors.js";

/** One accepted token of `ListenOptions.auth.tokens`: an operator token, or one bound to a requester session. */
export interface GatewayToken {
  token: string;
  /** When set, this token may only call `sessions.tools.call` and `runs.tree` as this requester session. */
  requesterKey?: string | undefined;
  /** With `requesterKey`: the tools always run sandboxed, whatever the request says. */
  sandboxed?: boolean | undefined;
  /**
   * The operator scopes this token may hold (default all: `operator.read`, `operator.write`, `operator.admin`). A
   * connection gets the scopes it asks for within these: `["operator.read"]` makes a read-only token.
   */
  scopes?: readonly OperatorScope[] | undefined;
  label?: string | undefined;
}

/** The operator scopes a connection can hold (admin implies write, write implies read). */
export type OperatorScope = "operator.read" | "operator.write" | "operator.admin";
const OPERATOR_SCOPES: readonly OperatorScope[] = ["operator.read", "operator.write", "operator.admin"];

/** `ListenOptions.auth`: one shared token, several tokens (some bound to a requester), or none (loopback only). */
export type ListenAuth =
  | { token?: string | undefined; tokens?: readonly GatewayToken[] | undefined }
  | "none";

/** Who a connection is, as far as methods and events care. */
export interface Caller {
  scopes: string[];
  /** Set for a token bound to one requester session: only `sessions.tools.call` as it, and no events. */
  boundRequester?: string | undefined;
  boundSandboxed?: boolean | undefined;
}

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|::1|localhost)$/;

/** The scope each method needs (operator.admin implies write, write implies read). */
const METHOD_SCOPE: Readonly<Record<string, "operator.read" | "operator.write" | "operator.admin">> = {
  "sessions.list": "operator.read",
  "sessions.resolve": "operator.read",
  "sessions.search": "operator.read",
  "chat.history": "operator.read",
  "agent.wait": "operator.read",
  "agents.list": "operator.read",
  "deliveries.get": "operator.read",
  "deliveries.list": "operator.read",
  "runs.list": "operator.read",
  "runs.tree": "operator.read",
  "bindings.list": "operator.read",
  "sessions.subscribe": "operator.read",
  "sessions.unsubscribe": "operator.read",
  "chat.send": "operator.write",
  "chat.abort": "operator.write",
  "deliveries.retry": "operator.write",
  agent: "operator.write",
  "sessions.patch": "operator.write",
  "sessions.tools.call": "operator.write",
  "sessions.delete": "operator.admin",
};

/** What a token bound to a requester session may call, naming that session as `requesterKey`. */
export const BOUND_METHODS: ReadonlySet<string> = new Set(["sessions.tools.call", "runs.tree"]);

/** Whether `scopes` grant `needed` (admin implies write, write implies read). */
export function hasScope(scopes: readonly string[], needed: string): boolean {
  if (scopes.includes("operator.admin")) return true;
  if (needed === "operator.read")
    return scopes.includes("operator.read") || scopes.includes("operator.write");
  return scopes.includes(needed);
}

function digest(value: string): Buffer {
  return createHash("sha256").update(value, "utf8").digest();
}

/** Checks `connect`'s token: the matching token, `"open"` without auth, undefined for a mismatch. */
export type Authenticate = (token: string | undefined) => GatewayToken | "open" | undefined;

/**
 * Validates the auth options for `host` and returns the token check. No auth is allowed only on loopback.
 * @throws SessionsError `invalid_config` naming `auth` or `auth.token`.
 */
export function createAuthenticator(host: string, given: ListenAuth | undefined): Authenticate {
  const auth = given ?? (LOOPBACK.test(host) ? "none" : undefined);
  if (auth === undefined) {
    throw new SessionsError("invalid_config", `listen: auth is required on non-loopback host ${host}`, {
      field: "auth",
    });
  }
  if (auth === "none") return () => "open";
  const tokens: GatewayToken[] = [...(auth.token ? [{ token: auth.token }] : []), ...(auth.tokens ?? [])];
  if (tokens.length === 0) {
    throw new SessionsError("invalid_config", "listen: auth needs a token (or tokens)", {
      field: "auth.token",
    });
  }
  (auth.tokens ?? []).forEach((t, i) => {
    const bad = t.scopes?.find((scope) => !OPERATOR_SCOPES.includes(scope));
    if (bad !== undefined || (t.scopes !== undefined && t.scopes.length === 0)) {
      throw new SessionsError(
        "invalid_config",
        `listen: auth.tokens[${i}].scopes must be some of ${OPERATOR_SCOPES.join(", ")}`,
        { field: `auth.tokens[${i}].scopes` },
      );
    }
  });
  const digests = tokens.map((t) => ({ ...t, digest: digest(t.token) }));
  return (token) => {
    const wanted = digest(token ?? "");
    let match: GatewayToken | undefined;
    // Compare against every token, constant-time each, with no early exit.
    for (const candidate of digests) {
      if (timingSafeEqual(candidate.digest, wanted) && token !== undefined && match === undefined)
        match = candidate;
    }
    return match;
  };
}

/** The store key of a requester as the wire names it, or undefined when it is not a key at all. */
function requesterOf(config: SessionsConfig, params: unknown): string | undefined {
  const requester = (params as { requesterKey?: unknown } | undefined)?.requesterKey;
  if (typeof requester !== "string") return undefined;
  try {
    return toStoreKey({ agentId: defaultAgentId(config), key: requester });
  } catch {
    return undefined;
  }
}

/** Whether `caller` may call `method` with `params`: undefined if so, else the error to answer with. */
export function checkAccess(
  config: SessionsConfig,
  caller: Caller,
  method: string,
  params: unknown,
): WireError | undefined {
  if (caller.boundRequester !== undefined) {
    if (BOUND_METHODS.has(method) && requesterOf(config, params) === caller.boundRequester) return;
    return wireError(
      "FORBIDDEN",
      "MISSING_SCOPE",
      `this token may only call sessions.tools.call and runs.tree as ${caller.boundRequester}`,
      { details: { code: "MISSING_SCOPE", missingScope: "operator.write" } },
    );
  }
  const needed = METHOD_SCOPE[method];
  if (needed === undefined || hasScope(caller.scopes, needed)) return;
  return wireError("FORBIDDEN", "MISSING_SCOPE", `${method} needs scope ${needed}`, {
    details: { code: "MISSING_SCOPE", missingScope: needed },
  });
}

/** Binds a connection to its token: a bound token gets no operator scopes. */
export function bindCaller(
  config: SessionsConfig,
  caller: Caller,
  who: GatewayToken | "open",
  scopes: string[] | undefined,
): void {
  caller.scopes = scopes ?? ["operator.read", "operator.write", "operator.admin"];
  if (who !== "open" && who.scopes !== undefined) {
    const granted: readonly string[] = who.scopes;
    caller.scopes = caller.scopes.filter((scope) => granted.includes(scope));
  }
  if (who === "open" || who.requesterKey === undefined) return;
  caller.boundRequester = toStoreKey({ agentId: defaultAgentId(config), key: who.requesterKey });
  caller.boundSandboxed = who.sandboxed === true;
  caller.scopes = ["sessions.tools"];
}

/**
 * Who a plain HTTP request's `Authorization: Bearer <token>` is: the operator scopes it holds and a name for it (the
 * token's label); undefined when it holds none (no such token, or one bound to a requester session).
 */
export function bearerCaller(authenticate: Authenticate) {
  return (req: IncomingMessage): { scopes: readonly string[]; name: string } | undefined => {
    const given = /^Bearer\s+(.+)$/i.exec(req.headers.authorization ?? "")?.[1]?.trim();
    const who = authenticate(given);
    if (who === "open") return { scopes: OPERATOR_SCOPES, name: "anonymous" };
    if (who === undefined || who.requesterKey !== undefined) return undefined;
    return { scopes: who.scopes ?? OPERATOR_SCOPES, name: who.label ?? "token" };
  };
}
