import { afterEach, describe, expect, it, vi } from "vitest";
import { createManualClock, systemClock } from "./clock.js";

describe("systemClock", () => {
  afterEach(() => vi.useRealTimers());

  it("waits the full time for delays beyond Node's 2^31-1 ms timer limit", () => {
    vi.useFakeTimers();
    const fired: string[] = [];
    systemClock.setTimeout(() => fired.push("long"), 30 * 24 * 3600_000);
    systemClock.setTimeout(() => fired.push("short"), 10);
    vi.advanceTimersByTime(1000);
    expect(fired).toEqual(["short"]);
    vi.advanceTimersByTime(25 * 24 * 3600_000);
    expect(fired).toEqual(["short"]);
    vi.advanceTimersByTime(5 * 24 * 3600_000);
    expect(fired).toEqual(["short", "long"]);
  });

  it("cancels a chunked timer", () => {
    vi.useFakeTimers();
    let fired = false;
    const handle = systemClock.setTimeout(
      () => {
        fired = true;
      },
      40 * 24 * 3600_000,
    );
    vi.advanceTimersByTime(30 * 24 * 3600_000);
    systemClock.clearTimeout(handle);
    vi.advanceTimersByTime(20 * 24 * 3600_000);
    expect(fired).toBe(false);
  });
});

describe("createManualClock", () => {
  it("fires due timers in order as time moves", async () => {
    const clock = createManualClock(0);
    const fired: number[] = [];
    clock.setTimeout(() => fired.push(2), 200);
    clock.setTimeout(() => fired.push(1), 100);
    const cancelled = clock.setTimeout(() => fired.push(3), 150);
    clock.clearTimeout(cancelled);
    await clock.advance(150);
    expect(fired).toEqual([1]);
    await clock.advance(100);
    expect(fired).toEqual([1, 2]);
    expect(clock.now()).toBe(250);
    expect(clock.pending()).toBe(0);
  });
});
