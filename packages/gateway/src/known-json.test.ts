import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { JsonTexts, payloadJson } from "./known-json.js";

/** Payloads as methods return them: records whose fields may be lists of records, plus what JSON leaves out. */
const payload = fc.oneof(
  fc.dictionary(
    fc.string(),
    fc.oneof(
      fc.jsonValue(),
      fc.array(fc.jsonValue()),
      fc.constant(undefined),
      fc.constant(() => 1),
    ),
  ),
  fc.jsonValue(),
  fc.constant(undefined),
);

/** The payload with each list field given as the texts of its elements. */
const asTexts = (p: Record<string, unknown>) =>
  Object.fromEntries(
    Object.entries(p).map(([k, v]) => [
      k,
      Array.isArray(v) ? new JsonTexts(v.map((x) => JSON.stringify(x) ?? "null")) : v,
    ]),
  );

describe("payloadJson", () => {
  it("is JSON.stringify of any payload", () => {
    fc.assert(
      fc.property(payload, (p) => {
        expect(payloadJson(p)).toBe(JSON.stringify(p));
      }),
    );
  });

  it("gives lists of texts as the lists they are the texts of, and so does JSON.stringify", () => {
    fc.assert(
      fc.property(payload, (p) => {
        if (p === null || typeof p !== "object" || Array.isArray(p)) return;
        const texts = asTexts(p);
        expect(payloadJson(texts)).toBe(JSON.stringify(p));
        expect(JSON.stringify(texts)).toBe(JSON.stringify(p));
      }),
    );
  });

  it("sends the texts as they are", () => {
    const messages = new JsonTexts(['{"a":"as sent"}', "2"]);
    expect(payloadJson({ messages, n: 2 })).toBe('{"messages":[{"a":"as sent"},2],"n":2}');
    expect(payloadJson({ none: new JsonTexts([]) })).toBe('{"none":[]}');
  });

  it("leaves values with their own JSON form (toJSON, class instances) to JSON.stringify", () => {
    const at = new Date(0);
    expect(payloadJson({ at, list: [at] })).toBe(JSON.stringify({ at, list: [at] }));
    expect(payloadJson(at)).toBe(JSON.stringify(at));
    expect(payloadJson(new Map([["a", 1]]))).toBe("{}");
  });
});
