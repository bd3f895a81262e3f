import { eventually } from "./eventually.js";

/** What {@link writeWords} needs of a scripted agent's turn (the gateway's `ScriptedTurn` has it). */
export interface WritingTurn {
  /** Streams a text delta. */
  say(text: string): void;
  /** Waits on the gateway's clock. */
  sleep(ms: number): Promise<void>;
}

/**
 * Writes a reply of `count` words (`word0 word1 …`) as a model streams one: ten words at a time, `msBetween` ms
 * apart (default 15); resolves with the whole reply, for a scripted agent to return. For tests of replies that
 * stream into a chat (`channels.<id>.streaming`).
 */
export async function writeWords(turn: WritingTurn, count: number, msBetween = 15): Promise<string> {
  const words = Array.from({ length: count }, (_, i) => `word${i} `);
  for (let i = 0; i < words.length; i += 10) {
    turn.say(words.slice(i, i + 10).join(""));
    await turn.sleep(msBetween);
  }
  return words.join("").trim();
}

/** The `sessions` methods {@link deliveredReply} calls. */
export interface RepliesSessions {
  /** `sessions.list`: the sessions, as `{ sessions: [{ key }] }`. */
  list(): Promise<{ sessions: { key: string }[] }>;
}

/** The `deliveries` methods {@link deliveredReply} calls. */
export interface RepliesDeliveries {
  /** `deliveries.list`: a session's outbox records. */
  list(params: {
    sessionKey: string;
  }): Promise<{ deliveries: { text: string; status: string; kind: string }[] }>;
}

/** What {@link deliveredReply} reads of a gateway. */
export interface RepliesGateway {
  /** The gateway's `sessions` methods. */
  readonly sessions: RepliesSessions;
  /** The gateway's `deliveries` methods. */
  readonly deliveries: RepliesDeliveries;
}

/** Waits until the reply of the gateway's first session is delivered (the outbox recorded it); its text. */
export async function deliveredReply(gateway: RepliesGateway): Promise<string> {
  let reply = "";
  await eventually(async () => {
    const [row] = (await gateway.sessions.list()).sessions;
    if (row === undefined) return false;
    const found = (await gateway.deliveries.list({ sessionKey: row.key })).deliveries.find(
      (d) => d.kind === "reply",
    );
    reply = found?.text ?? "";
    return found?.status === "delivered";
  }, "the reply delivered");
  return reply;
}
