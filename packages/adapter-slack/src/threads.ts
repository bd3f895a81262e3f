import type { InboundGateway } from "@sessions/core";

/** A set that forgets its oldest members past `max` (threads the bot is engaged in, messages already seen). */
export class BoundedSet {
  readonly #items = new Set<string>();
  constructor(readonly max: number) {}
  has(key: string): boolean {
    return this.#items.has(key);
  }
  add(key: string): void {
    this.#items.delete(key);
    this.#items.add(key);
    if (this.#items.size > this.max) {
      const oldest = this.#items.values().next().value;
      if (oldest !== undefined) this.#items.delete(oldest);
    }
  }
  /** Members starting with `prefix`. */
  withPrefix(prefix: string): string[] {
    return [...this.#items].filter((k) => k.startsWith(prefix));
  }
  delete(key: string): void {
    this.#items.delete(key);
  }
}

interface Pending {
  ts: string;
}

const PER_CONVERSATION = 50;

/**
 * The top-level messages of each conversation whose runs have not ended yet, oldest first. A session's runs go
 * one at a time in arrival order, so the oldest one is the run in progress: when it spawns a sub-agent with
 * `thread: true`, the thread opens under that message.
 */
export class MessagesInProgress {
  readonly #byConversation = new Map<string, Pending[]>();

  /** Records a message before it is handed to the gateway (its run may spawn before `receive` returns). */
  begin(teamId: string, channel: string, ts: string): Pending {
    const key = `${teamId}|${channel}`;
    const list = this.#byConversation.get(key) ?? [];
    const entry = { ts };
    list.push(entry);
    if (list.length > PER_CONVERSATION) list.shift();
    this.#byConversation.set(key, list);
    return entry;
  }

  /** Forgets the message once its run has ended (or right away when it started none). */
  follow(
    teamId: string,
    channel: string,
    entry: Pending,
    gateway: Pick<InboundGateway, "agentWait">,
    runId: string | undefined,
  ): void {
    const done = () => this.#end(`${teamId}|${channel}`, entry);
    if (runId === undefined) {
      done();
      return;
    }
    void (async () => {
      for (;;) {
        const waited = await gateway.agentWait({ runId, timeoutMs: 60_000 }).catch(() => undefined);
        if (waited === undefined || waited.status !== "timeout" || waited.endedAt !== undefined) break;
      }
      done();
    })();
  }

  /** The `ts` of the conversation's message whose run is in progress, if the adapter saw it. */
  current(teamId: string, channel: string): string | undefined {
    return this.#byConversation.get(`${teamId}|${channel}`)?.[0]?.ts;
  }

  #end(key: string, entry: Pending): void {
    const list = this.#byConversation.get(key);
    if (list === undefined) return;
    const at = list.indexOf(entry);
    if (at >= 0) list.splice(at, 1);
    if (list.length === 0) this.#byConversation.delete(key);
  }
}
