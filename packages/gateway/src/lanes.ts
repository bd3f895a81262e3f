const RESOLVED = Promise.resolve();

/** Adds `by` to `key`'s count in `counts`, dropping the key at zero. */
function count(counts: Map<string, number>, key: string, by: 1 | -1): void {
  const next = (counts.get(key) ?? 0) + by;
  if (next <= 0) counts.delete(key);
  else counts.set(key, next);
}

/** Runs tasks one at a time per key (a session's lane); tasks for other keys run concurrently. */
export class Lanes {
  private readonly tails = new Map<string, Promise<void>>();
  /** Per key, the tasks running or waiting that are runs (`run`'s `isRun`). */
  private readonly runs = new Map<string, number>();
  /** Per key, runs being recorded that will queue here once recorded (`expect`). */
  private readonly expected = new Map<string, number>();

  /** `isRun`: the task is a run of the session (in a cluster it takes the session's lane first thing). */
  run<T>(key: string, task: () => Promise<T>, isRun = false): Promise<T> {
    const previous = this.tails.get(key) ?? RESOLVED;
    if (isRun) count(this.runs, key, 1);
    const result = previous.then(task, task);
    // The lane is free again once this task has settled, unless another one queued behind it meanwhile.
    const settled = () => {
      if (isRun) count(this.runs, key, -1);
      if (this.tails.get(key) === tail) this.tails.delete(key);
    };
    const tail: Promise<void> = result.then(settled, settled);
    this.tails.set(key, tail);
    return result;
  }

  /** True when nothing runs or waits on `key`: a task added now starts at once. */
  isIdle(key: string): boolean {
    return !this.tails.has(key);
  }

  /**
   * A run of `key` is being recorded and will queue here: it counts in `runsOf` until the returned function is
   * called (once it is queued, or was not created after all).
   */
  expect(key: string): () => void {
    count(this.expected, key, 1);
    let done = false;
    return () => {
      if (done) return;
      done = true;
      count(this.expected, key, -1);
    };
  }

  /** How many runs of `key` are running or waiting here (the one running included), or being recorded to. */
  runsOf(key: string): number {
    return (this.runs.get(key) ?? 0) + (this.expected.get(key) ?? 0);
  }

  get size(): number {
    return this.tails.size;
  }
}

/** A counting semaphore: at most `limit` holders at once, waiters served in order. */
export class Semaphore {
  private active = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(private readonly limit: number) {}

  async acquire(): Promise<() => void> {
    if (this.active < this.limit) {
      this.active++;
    } else {
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.waiting.shift();
      if (next) next();
      else this.active--;
    };
  }
}
