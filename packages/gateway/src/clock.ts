/** Time as the gateway sees it. Inject a manual clock in tests to move time without waiting. */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /**
   * Milliseconds on a clock that never jumps (it need not start at the epoch): what local deadlines are measured on,
   * since the wall clock may be stepped. Absent: `now()` stands in.
   */
  monotonic?(): number;
  /** Calls `fn` after `ms`; returns a handle for `clearTimeout`. */
  setTimeout(fn: () => void, ms: number): unknown;
  /** Cancels a timer from `setTimeout`. */
  clearTimeout(handle: unknown): void;
}

/** Node fires timers longer than 2^31-1 ms at once; longer waits are re-armed in chunks. */
const MAX_TIMER_MS = 2_147_483_647;

interface ChunkedTimer {
  timer: ReturnType<typeof setTimeout> | undefined;
}

/** The real clock (timers longer than Node's maximum are re-armed). */
export const systemClock: Clock = {
  now: () => Date.now(),
  monotonic: () => performance.now(),
  setTimeout: (fn, ms) => {
    const handle: ChunkedTimer = { timer: undefined };
    const due = Date.now() + Math.max(0, ms);
    const arm = () => {
      const left = due - Date.now();
      handle.timer = setTimeout(left > MAX_TIMER_MS ? arm : fn, Math.min(Math.max(0, left), MAX_TIMER_MS));
      handle.timer.unref?.();
    };
    arm();
    return handle;
  },
  clearTimeout: (handle) => {
    const timer = (handle as ChunkedTimer | undefined)?.timer;
    if (timer !== undefined) clearTimeout(timer);
  },
};

export interface ManualClock extends Clock {
  /** Moves time forward, firing due timers in order and letting the work they start settle. */
  advance(ms: number): Promise<void>;
  /** Timers not yet fired. */
  pending(): number;
}

/** A clock that only moves when told to. */
export function createManualClock(start = 1_700_000_000_000): ManualClock {
  let now = start;
  let nextId = 1;
  const timers = new Map<number, { at: number; fn: () => void }>();
  const settle = async () => {
    for (let i = 0; i < 20; i++) await new Promise<void>((r) => setImmediate(r));
  };
  return {
    now: () => now,
    monotonic: () => now,
    setTimeout(fn, ms) {
      const id = nextId++;
      timers.set(id, { at: now + Math.max(0, ms), fn });
      return id;
    },
    clearTimeout(handle) {
      timers.delete(handle as number);
    },
    pending: () => timers.size,
    async advance(ms) {
      const target = now + ms;
      await settle();
      for (;;) {
        let nextIdAt: [number, number] | undefined;
        for (const [id, t] of timers)
          if (t.at <= target && (!nextIdAt || t.at < nextIdAt[1])) nextIdAt = [id, t.at];
        if (nextIdAt === undefined) break;
        const [id, at] = nextIdAt;
        const timer = timers.get(id);
        timers.delete(id);
        now = Math.max(now, at);
        timer?.fn();
        await settle();
      }
      now = target;
      await settle();
    },
  };
}

/** The clock's monotonic time, or its wall time when it has none. */
export const monotonicNow = (clock: Clock): number => clock.monotonic?.() ?? clock.now();

/** One timer for "the earliest of these deadlines": scheduling a later time than the armed one is a no-op. */
export interface DeadlineTimer {
  schedule(at: number): void;
  stop(): void;
}

export function createDeadlineTimer(clock: Clock, fire: () => void): DeadlineTimer {
  let handle: unknown;
  let armedAt = Number.POSITIVE_INFINITY;
  let stopped = false;
  return {
    schedule(at) {
      if (stopped || !Number.isFinite(at) || at >= armedAt) return;
      if (handle !== undefined) clock.clearTimeout(handle);
      armedAt = at;
      handle = clock.setTimeout(
        () => {
          handle = undefined;
          armedAt = Number.POSITIVE_INFINITY;
          fire();
        },
        Math.max(0, at - clock.now()),
      );
    },
    stop() {
      stopped = true;
      if (handle !== undefined) clock.clearTimeout(handle);
    },
  };
}
