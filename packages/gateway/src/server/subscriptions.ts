import {
  type ParsedMethodParams,
  parseMethodParams,
  type ReplayedEvent,
  type SessionsConfig,
  type WireError,
} from "@sessions/core";
import { operatorKey } from "../sessions/entries.js";
import type { Connection } from "./connection.js";
import type { EventRouter } from "./event-routing.js";
import type { RunReplay } from "./run-replay.js";
import { toWireError, wireError } from "./wire-errors.js";

/** Session keys one connection may subscribe to at most (each call names up to LIMITS.subscriptions). */
export const MAX_KEYS_PER_CONNECTION = 1024;

export interface SubscriptionPayload {
  ok: true;
  /** Whether the connection now has any subscription (`all` or keys). */
  subscribed: boolean;
  all: boolean;
  /** The keys this call named, in their stored form (`main` → `agent:main:main`). */
  keys: string[];
  /** The runs this call named that are under way on this gateway (others have ended or are unknown). */
  runIds: string[];
  /** With `replay: true`: the named runs' events so far, oldest first (an ended run's too, while kept). */
  events?: ReplayedEvent[];
}

type Outcome = { ok: true; payload: SubscriptionPayload } | { ok: false; error: WireError };

/**
 * `sessions.subscribe` / `sessions.unsubscribe` on one connection. Bare (`{}`) subscribes to everything, as
 * before targeted events, and unsubscribes from every session and `all`; `all`, `keys` and `runIds` add or remove
 * just those. Run subscriptions end by themselves with the run. `replay` hands back the named runs' events so far:
 * they are read in the same turn as the run is followed, so the live events that come after continue them.
 */
export function changeSubscription(
  deps: { config: SessionsConfig; router: EventRouter<Connection>; replay: RunReplay },
  conn: Connection,
  method: "sessions.subscribe" | "sessions.unsubscribe",
  params: unknown,
): Outcome {
  const { router } = deps;
  let keys: string[];
  let p: ParsedMethodParams<"sessions.subscribe">;
  try {
    p = parseMethodParams(method, params);
    keys = [...new Set((p.keys ?? []).map((key, i) => operatorKey(deps, key, `keys[${i}]`)))];
  } catch (error) {
    return { ok: false, error: toWireError(error) };
  }
  const bare = p.all === undefined && p.keys === undefined && p.runIds === undefined;
  const runIds: string[] = [];
  let events: ReplayedEvent[] | undefined;
  if (method === "sessions.subscribe") {
    const added = keys.filter((key) => !conn.interest.keys.has(key)).length;
    if (conn.interest.keys.size + added > MAX_KEYS_PER_CONNECTION) {
      const message = `${method}: a connection may subscribe to at most ${MAX_KEYS_PER_CONNECTION} session keys`;
      return {
        ok: false,
        error: wireError("INVALID_REQUEST", "TOO_MANY_SUBSCRIPTIONS", message, {
          details: { code: "TOO_MANY_SUBSCRIPTIONS", field: "keys", max: MAX_KEYS_PER_CONNECTION },
        }),
      };
    }
    if (bare || p.all === true) router.subscribeAll(conn);
    for (const key of keys) router.subscribeKey(conn, key);
    for (const runId of p.runIds ?? []) if (router.followRun(conn, runId)) runIds.push(runId);
    if (p.replay === true) events = (p.runIds ?? []).flatMap((runId) => deps.replay.events(runId));
  } else {
    if (bare || p.all === true) router.unsubscribeAll(conn);
    for (const key of bare ? [...conn.interest.keys] : keys) router.unsubscribeKey(conn, key);
    for (const runId of p.runIds ?? []) router.unfollowRun(conn, runId);
  }
  const { interest } = conn;
  return {
    ok: true,
    payload: {
      ok: true,
      subscribed: interest.all || interest.keys.size > 0,
      all: interest.all,
      keys,
      runIds,
      ...(events === undefined ? {} : { events }),
    },
  };
}
