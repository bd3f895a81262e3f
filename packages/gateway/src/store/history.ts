import type { SessionStore, StoredMessage } from "./types.js";

/**
 * Internal to the gateway, not part of the `SessionStore` contract: a store that keeps recent transcripts in
 * memory lends a run's history window without copying it, and the copies are made only if the runner reads the
 * history (a scripted agent or a tool-only turn often never does).
 */
export const LEND_MESSAGES: unique symbol = Symbol.for("@sessions/gateway.lendMessages");

/** Returns the messages `readMessages` would, as fresh copies, each time it is called. */
export type LentMessages = () => StoredMessage[];

export interface LendsMessages {
  [LEND_MESSAGES](
    sessionKey: string,
    options: { limit: number; beforeSeq?: number | undefined },
  ): Promise<LentMessages>;
}

/** A run's history window, read now and copied on first use (any store; lent by those that can). */
export function readHistory(
  store: SessionStore,
  sessionKey: string,
  options: { limit: number; beforeSeq?: number | undefined },
): Promise<LentMessages> {
  const lend = (store as Partial<LendsMessages>)[LEND_MESSAGES];
  if (typeof lend === "function") return lend.call(store, sessionKey, options);
  return store.readMessages(sessionKey, options).then((messages) => {
    // The messages read are the store's copies: the first reader gets them, any later one its own copies.
    let first = true;
    return () => {
      if (first) {
        first = false;
        return messages;
      }
      return structuredClone(messages);
    };
  });
}
