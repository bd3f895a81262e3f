import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { timeOrderedId } from "./time-ordered-id.js";

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe("timeOrderedId", () => {
  it("is a version 7 UUID that sorts by its time, whatever the time", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 2 ** 48 - 10_001 }),
        fc.integer({ min: 1, max: 10_000 }),
        (t, dt) => {
          const a = timeOrderedId(t);
          const b = timeOrderedId(t + dt);
          expect(a).toMatch(UUID_V7);
          expect(b).toMatch(UUID_V7);
          expect(a < b).toBe(true);
          expect(Number.parseInt(a.replace("-", "").slice(0, 12), 16)).toBe(t);
        },
      ),
    );
  });

  it("differs between ids of the same millisecond", () => {
    const ids = new Set(Array.from({ length: 1000 }, () => timeOrderedId(1_700_000_000_000)));
    expect(ids.size).toBe(1000);
  });
});
