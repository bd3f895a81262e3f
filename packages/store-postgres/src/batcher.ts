/**
 * Group commit: calls that arrive while the connections for them are busy go together, as one statement (one
 * transaction) for the batch, instead of one each. A call waits at most for one turn of the event loop when a
 * connection is free, so a lone call costs what it did alone. With no batch under way, the calls waiting go as two
 * batches side by side, so that a wave of calls arriving together keeps two connections busy.
 *
 * A batch that fails as a whole (a deadlock with another batch, one unit's error) is done again one unit at a
 * time, so each caller gets its own unit's outcome.
 */
export function createBatcher<I, O>(options: {
  /** One statement for all of `inputs`, answering in their order. */
  many(inputs: I[]): Promise<O[]>;
  /** One unit alone. */
  one(input: I): Promise<O>;
  /** Batches under way at once (each holds a connection). */
  concurrency: number;
  /** The most units in one batch. */
  maxBatch: number;
  /** A batch failed as a whole (its units are then done one at a time): for the log. */
  failed?(error: unknown, size: number): void;
}) {
  type Waiter = { input: I; resolve(output: O): void; reject(error: unknown): void };
  const queue: Waiter[] = [];
  let running = 0;
  let scheduled = false;

  async function runBatch(batch: Waiter[]): Promise<void> {
    running++;
    try {
      if (batch.length === 1) {
        const [only] = batch as [Waiter];
        await options.one(only.input).then(only.resolve, only.reject);
        return;
      }
      let outputs: O[] | undefined;
      try {
        outputs = await options.many(batch.map((waiter) => waiter.input));
      } catch (error) {
        // Each unit alone: its own outcome, whatever failed the batch.
        options.failed?.(error, batch.length);
      }
      if (outputs !== undefined) {
        for (const [i, waiter] of batch.entries()) waiter.resolve(outputs[i] as O);
        return;
      }
      await Promise.all(batch.map((waiter) => options.one(waiter.input).then(waiter.resolve, waiter.reject)));
    } finally {
      running--;
      flush();
    }
  }

  function flush(): void {
    while (queue.length > 0 && running < options.concurrency) {
      // With no batch under way, what waits goes as two: the database works on one while the other's answers are
      // handled here. A wave of calls that all arrived together (the ends of a backlog's runs, which come back
      // together) would otherwise go, and come back, as one batch each time, every core but one idle meanwhile.
      const size = running === 0 && options.concurrency > 1 ? Math.ceil(queue.length / 2) : queue.length;
      void runBatch(queue.splice(0, Math.min(options.maxBatch, size)));
    }
  }

  return (input: I): Promise<O> =>
    new Promise<O>((resolve, reject) => {
      queue.push({ input, resolve, reject });
      if (scheduled) return;
      scheduled = true;
      // Let the rest of this turn's calls join.
      setImmediate(() => {
        scheduled = false;
        flush();
      });
    });
}
