import { silentLogger } from "@sessions/core";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createReassembler, encodePayloads, MAX_NOTIFY_BYTES, sliceJson } from "./broadcast.js";

const json = fc.oneof(
  fc.json(),
  fc.string({ unit: "binary", maxLength: 20_000 }).map((s) => JSON.stringify({ text: s })),
);

describe("broadcast payloads", () => {
  it("carry any messages under the NOTIFY limit and put them back together in order", () => {
    fc.assert(
      fc.property(fc.array(json, { maxLength: 12 }), fc.nat(1_000_000), (messages, first) => {
        const payloads = encodePayloads("sender", first, messages);
        for (const payload of payloads)
          expect(Buffer.byteLength(payload)).toBeLessThanOrEqual(MAX_NOTIFY_BYTES);
        const heard: string[] = [];
        const receive = createReassembler("receiver", (m) => heard.push(m), silentLogger);
        for (const payload of payloads) receive(payload);
        expect(heard).toEqual(messages);
        // The sender's own payloads are not heard again.
        const own: string[] = [];
        const self = createReassembler("sender", (m) => own.push(m), silentLogger);
        for (const payload of payloads) self(payload);
        expect(own).toEqual([]);
      }),
      { numRuns: 60 },
    );
  });

  it("never splits a surrogate pair when slicing", () => {
    const text = "🎉".repeat(5000);
    for (const slice of sliceJson(text, 1000)) {
      expect(slice.length % 2).toBe(0);
      expect(Buffer.byteLength(JSON.stringify(slice))).toBeLessThanOrEqual(1000);
    }
  });

  it("drops a message whose parts went missing, and ignores malformed payloads", () => {
    const big = JSON.stringify({ text: "x".repeat(20_000) });
    const payloads = encodePayloads("s", 0, [big, '"after"']);
    const heard: string[] = [];
    const receive = createReassembler("r", (m) => heard.push(m), silentLogger);
    receive("{not json");
    receive("null");
    for (const payload of payloads.filter((_, i) => i !== 1)) receive(payload);
    expect(heard).toEqual(['"after"']);
  });
});
