import { silentLogger } from "@sessions/core";
import fc from "fast-check";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { payloadPrefix } from "./broadcast.js";
import { createPresence, HELLO_MS, helloPayload, PEER_TTL_MS, type Presence } from "./presence.js";

// The decision alone, on fake timers: what Postgres answers is scripted (pg_stat_activity's pids, the hellos heard).
describe("presence: whether another gateway shares the schema", () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  function open(options: { own?: number[]; schemaBackends?: () => Promise<number[]> } = {}) {
    const world = { pids: [] as number[], hellosSent: 0 };
    const presence: Presence = createPresence({
      origin: "me",
      now: () => Date.now(),
      sayHello: async (payload) => {
        world.hellosSent++;
        // Postgres hands a NOTIFY back to the LISTEN connection that sent it too.
        queueMicrotask(() => presence.heard(payload));
      },
      schemaBackends: options.schemaBackends ?? (async () => world.pids),
      ownPids: () => new Set(options.own ?? [1, 2]),
      logger: silentLogger,
    });
    return { presence, world };
  }

  it("announces until it has looked and found no other gateway for PEER_TTL_MS after opening", async () => {
    const { presence, world } = open();
    await presence.start();
    expect(world.hellosSent).toBe(1);
    expect(presence.alone()).toBe(false);
    await vi.advanceTimersByTimeAsync(PEER_TTL_MS - 1);
    expect(presence.alone()).toBe(false);
    await vi.advanceTimersByTimeAsync(HELLO_MS);
    expect(presence.alone()).toBe(true);
    expect(world.hellosSent).toBeGreaterThan(1);
    presence.stop();
  });

  it("counts a gateway heard saying hello at once, for PEER_TTL_MS", async () => {
    const { presence } = open();
    await presence.start();
    await vi.advanceTimersByTimeAsync(PEER_TTL_MS + HELLO_MS);
    expect(presence.alone()).toBe(true);
    expect(presence.heard(helloPayload("other"))).toBe(true);
    expect(presence.alone()).toBe(false);
    await vi.advanceTimersByTimeAsync(PEER_TTL_MS - 1);
    expect(presence.alone()).toBe(false);
    await vi.advanceTimersByTimeAsync(HELLO_MS + 1);
    expect(presence.alone()).toBe(true);
    presence.stop();
  });

  it("counts another backend on its schema (a gateway without hellos), not its own connections", async () => {
    const { presence, world } = open({ own: [1, 2] });
    world.pids = [1, 2];
    await presence.start();
    await vi.advanceTimersByTimeAsync(PEER_TTL_MS + HELLO_MS);
    expect(presence.alone()).toBe(true);
    world.pids = [1, 2, 3];
    await vi.advanceTimersByTimeAsync(HELLO_MS);
    expect(presence.alone()).toBe(false);
    world.pids = [2];
    await vi.advanceTimersByTimeAsync(PEER_TTL_MS + HELLO_MS);
    expect(presence.alone()).toBe(true);
    presence.stop();
  });

  it("lets a hello heard while a look is under way outweigh the look's empty answer", async () => {
    let answer: ((pids: number[]) => void) | undefined;
    const { presence } = open({
      schemaBackends: () =>
        new Promise((resolve) => {
          answer = resolve;
        }),
    });
    await presence.start();
    for (let i = 0; i < 4; i++) {
      await vi.advanceTimersByTimeAsync(HELLO_MS);
      answer?.([]);
    }
    expect(presence.alone()).toBe(true);
    await vi.advanceTimersByTimeAsync(HELLO_MS);
    presence.heard(helloPayload("joining"));
    answer?.([]);
    await vi.advanceTimersByTimeAsync(0);
    expect(presence.alone()).toBe(false);
    presence.stop();
  });

  it("stays announcing while it cannot look", async () => {
    const { presence } = open({ schemaBackends: () => Promise.reject(new Error("permission denied")) });
    await presence.start();
    await vi.advanceTimersByTimeAsync(10 * PEER_TTL_MS);
    expect(presence.alone()).toBe(false);
    presence.stop();
  });

  it("takes only hellos: its own echo and other payloads are no sign of another gateway", async () => {
    const { presence } = open();
    await presence.start();
    await vi.advanceTimersByTimeAsync(PEER_TTL_MS + HELLO_MS);
    expect(presence.heard(helloPayload("me"))).toBe(true);
    expect(presence.heard(`${payloadPrefix("other")}"b":[{"n":1,"j":"{}"}]}`)).toBe(false);
    expect(presence.alone()).toBe(true);
    presence.stop();
  });

  it("is never alone within PEER_TTL_MS of a sign of another gateway, whatever happens in between", async () => {
    type Step = { wait: number; hello: boolean; others: boolean };
    const step = fc.record({
      wait: fc.integer({ min: 0, max: 3 * HELLO_MS }),
      hello: fc.boolean(),
      others: fc.boolean(),
    });
    await fc.assert(
      fc.asyncProperty(fc.array(step, { maxLength: 25 }), async (steps: Step[]) => {
        vi.setSystemTime(0);
        const { presence, world } = open();
        await presence.start();
        let lastSign = 0;
        for (const { wait, hello, others } of steps) {
          world.pids = others ? [1, 99] : [1];
          await vi.advanceTimersByTimeAsync(wait);
          // A wait of a whole tick had a look in its last HELLO_MS, and that look saw the other connection.
          if (others && wait >= HELLO_MS) lastSign = Date.now() - HELLO_MS;
          if (hello) {
            presence.heard(helloPayload("peer"));
            lastSign = Date.now();
          }
          // `lastSign` is no later than the last sign the store had: within the TTL of it, never alone.
          if (Date.now() - lastSign < PEER_TTL_MS) expect(presence.alone()).toBe(false);
        }
        presence.stop();
        vi.clearAllTimers();
      }),
      { numRuns: 60 },
    );
  });
});
