import type { StoreChange } from "@sessions/gateway";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { batchChanges, MAX_PAYLOAD_BYTES } from "./change-feed.js";

const change: fc.Arbitrary<StoreChange> = fc.oneof(
  fc.record({
    type: fc.constant("entry" as const),
    key: fc.string({ maxLength: 600, unit: "binary" }),
    op: fc.constantFrom("put" as const, "delete" as const),
  }),
  fc.record({
    type: fc.constant("run" as const),
    runId: fc.uuid(),
    sessionKey: fc.string({ maxLength: 600 }),
    status: fc.constantFrom("queued" as const, "running" as const, "ok" as const, "error" as const),
  }),
  fc.record({
    type: fc.constant("delivery" as const),
    id: fc.uuid(),
    sessionKey: fc.string({ maxLength: 600, unit: "grapheme" }),
    status: fc.constantFrom("queued" as const, "delivered" as const),
  }),
);

describe("batchChanges", () => {
  it("keeps every change, in order, in payloads Postgres accepts", () => {
    fc.assert(
      fc.property(fc.uuid(), fc.array(change, { maxLength: 200 }), (origin, changes) => {
        const batches = batchChanges(origin, changes);
        expect(batches.flat()).toEqual(changes);
        for (const c of batches) {
          expect(c.length).toBeGreaterThan(0);
          expect(Buffer.byteLength(JSON.stringify({ o: origin, c }))).toBeLessThanOrEqual(MAX_PAYLOAD_BYTES);
        }
      }),
    );
  });
});
