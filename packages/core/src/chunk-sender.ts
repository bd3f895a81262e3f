import { SessionsError } from "./errors.js";

/** Sends one piece of a message and returns the platform's id for it. */
export type SendChunk = (chunk: string, index: number) => Promise<string>;

/**
 * Sends the pieces of outbound messages so that a retry of the same idempotency key resumes after the last piece
 * that went out and never posts a piece twice. `open` prepares the sending (e.g. fetches the channel) and returns
 * the function that sends one piece. Failures of either are mapped with `toError` (a `SessionsError` passes
 * through); a permanent one (`invalid_params`) forgets the progress, since the outbox will not retry it.
 */
export function createChunkSender(toError: (error: unknown) => SessionsError) {
  const sent = new Map<string, string[]>();
  return async function sendChunks(
    idempotencyKey: string,
    chunks: readonly string[],
    open: () => SendChunk | Promise<SendChunk>,
  ): Promise<{ messageIds: string[] }> {
    const done = sent.get(idempotencyKey) ?? [];
    try {
      const sendOne = await open();
      for (let i = done.length; i < chunks.length; i++) {
        done.push(await sendOne(chunks[i] as string, i));
        sent.set(idempotencyKey, done);
      }
    } catch (error) {
      const mapped = SessionsError.isInstance(error) ? error : toError(error);
      if (mapped.code === "invalid_params") sent.delete(idempotencyKey);
      throw mapped;
    }
    sent.delete(idempotencyKey);
    return { messageIds: done };
  };
}
