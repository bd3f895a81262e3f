import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { formatTraceparent, parseTraceparent, traceparentParam } from "./trace-context.js";

const hex = (length: number) =>
  fc.string({ unit: fc.constantFrom(..."0123456789abcdef"), minLength: length, maxLength: length });

describe("W3C traceparent", () => {
  it("reads back what it writes, for every valid context", () => {
    fc.assert(
      fc.property(hex(32), hex(16), fc.integer({ min: 0, max: 255 }), (traceId, spanId, flags) => {
        fc.pre(!/^0+$/.test(traceId) && !/^0+$/.test(spanId));
        const value = formatTraceparent({ traceId, spanId, flags });
        expect(value).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/);
        expect(parseTraceparent(value)).toEqual({ traceId, spanId, flags });
        expect(parseTraceparent(value.toUpperCase())).toEqual({ traceId, spanId, flags });
      }),
    );
  });

  it("ignores what the spec says to ignore, and never throws", () => {
    const valid = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    expect(parseTraceparent(valid)).toEqual({
      traceId: "4bf92f3577b34da6a3ce929d0e0e4736",
      spanId: "00f067aa0ba902b7",
      flags: 1,
    });
    for (const bad of [
      "",
      "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
      "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
      "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
      `${valid}-extra`,
      "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
      "00_4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7_01",
    ])
      expect(parseTraceparent(bad)).toBeUndefined();
    // A later version may add fields after the flags.
    expect(parseTraceparent(`01-${valid.slice(3)}-later`)?.spanId).toBe("00f067aa0ba902b7");
    fc.assert(fc.property(fc.string(), (text) => void parseTraceparent(text)));
  });

  it("is a param that names what it wants", () => {
    expect(
      traceparentParam.safeParse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01").success,
    ).toBe(true);
    const refused = traceparentParam.safeParse("not-a-trace");
    expect(refused.success).toBe(false);
    expect(refused.error?.issues[0]?.message).toContain("W3C traceparent");
  });
});
