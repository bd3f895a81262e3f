import { LIMITS, type MethodParams, type MethodPayload } from "@sessions/core";

type Params = MethodParams<"sessions.subscribe">;
type Payload = MethodPayload<"sessions.subscribe">;

const bare = (p: Params) => p.all === undefined && p.keys === undefined && p.runIds === undefined;

/**
 * What this client subscribed to, so a new connection asks for the same: `all` and session keys (stored form
 * when the gateway says it). Run subscriptions are not kept: a stream ends with its connection.
 */
export class Subscriptions {
  all = false;
  readonly keys = new Set<string>();

  get active(): boolean {
    return this.all || this.keys.size > 0;
  }

  subscribed(params: Params, payload: Payload | undefined): void {
    if (bare(params) || params.all === true) this.all = true;
    for (const key of payload?.keys ?? params.keys ?? []) this.keys.add(key);
  }

  /** Before the request (a reconnect meanwhile must not restore it) and again with the keys the gateway named. */
  unsubscribed(params: Params, payload?: Payload): void {
    if (bare(params)) this.keys.clear();
    if (bare(params) || params.all === true) this.all = false;
    for (const key of [...(params.keys ?? []), ...(payload?.keys ?? [])]) this.keys.delete(key);
  }

  /** The requests that restore these subscriptions on a new connection (bare for `all`, as any gateway knows it). */
  restore(): Params[] {
    const requests: Params[] = this.all ? [{}] : [];
    const keys = [...this.keys];
    for (let i = 0; i < keys.length; i += LIMITS.subscriptions) {
      requests.push({ keys: keys.slice(i, i + LIMITS.subscriptions) });
    }
    return requests;
  }
}
