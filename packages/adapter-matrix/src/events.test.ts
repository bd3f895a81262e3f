import { SessionsError } from "@sessions/core";
import fc from "fast-check";
import { MatrixError } from "matrix-js-sdk";
import { describe, expect, it } from "vitest";
import { toSessionsError } from "./errors.js";
import { matrixRoomId, matrixThreadRoot, messageText, relationOf, stripReplyFallback } from "./events.js";

const line = fc.string({ maxLength: 40 }).map((s) => s.replace(/\n/g, " "));
const opaque = fc.stringMatching(/^[A-Za-z0-9_\-.:=+]{1,40}$/);

describe("Matrix event parsing", () => {
  it("strips exactly the quoted reply fallback and keeps what the person wrote", () => {
    fc.assert(
      fc.property(
        fc.array(line, { minLength: 1, maxLength: 5 }),
        fc.string({ maxLength: 200 }),
        (quoted, said) => {
          const fallback = quoted.map((l) => `> ${l}`).join("\n");
          expect(stripReplyFallback(`${fallback}\n\n${said}`)).toBe(said);
        },
      ),
    );
    fc.assert(
      fc.property(fc.string({ maxLength: 200 }), (body) => {
        fc.pre(!body.startsWith(">"));
        expect(stripReplyFallback(body)).toBe(body);
      }),
    );
    // A quote the person typed themselves, with no blank line after it, is not a fallback.
    expect(stripReplyFallback("> quoted\nmy answer")).toBe("> quoted\nmy answer");
  });

  it("reads text from m.text, m.emote and captions only, and never throws on odd content", () => {
    expect(messageText({ msgtype: "m.text", body: "hi" })).toEqual({ text: "hi" });
    expect(messageText({ msgtype: "m.emote", body: "waves" })).toEqual({ text: "waves" });
    expect(messageText({ msgtype: "m.notice", body: "bot says" })).toEqual({ ignored: "notice" });
    expect(messageText({ msgtype: "m.image", body: "a.png" })).toEqual({ ignored: "no text" });
    expect(messageText({ msgtype: "m.image", body: "look", filename: "a.png" })).toEqual({ text: "look" });
    expect(messageText({ msgtype: "m.location", body: "geo" })).toEqual({ ignored: "unsupported msgtype" });
    expect(messageText({ msgtype: "m.text", body: "   " })).toEqual({ ignored: "no text" });
    fc.assert(
      fc.property(fc.object(), fc.jsonValue(), (content, relates) => {
        messageText({ ...content, "m.relates_to": relates });
        relationOf({ ...content, "m.relates_to": relates });
      }),
    );
  });

  it("reads thread, edit and reply relations", () => {
    expect(relationOf({ "m.relates_to": { rel_type: "m.thread", event_id: "$Root" } })).toEqual({
      relType: "m.thread",
      eventId: "$Root",
    });
    expect(relationOf({ "m.relates_to": { "m.in_reply_to": { event_id: "$Ev" } } })).toEqual({
      inReplyTo: "$Ev",
    });
    expect(relationOf({ "m.relates_to": "nonsense" })).toEqual({});
  });

  it("accepts room ids with or without a peer-kind prefix and refuses the rest with a typed error", () => {
    fc.assert(
      fc.property(opaque, fc.constantFrom("", "group:", "channel:", "room:"), (id, prefix) => {
        expect(matrixRoomId(`${prefix}!${id}`)).toBe(`!${id}`);
      }),
    );
    fc.assert(
      fc.property(fc.string({ maxLength: 60 }), (to) => {
        fc.pre(!/^(group:|channel:|room:)?![^\s/]+$/.test(to.trim()));
        const error = (() => {
          try {
            matrixRoomId(to);
          } catch (e) {
            return e;
          }
        })();
        expect(SessionsError.isInstance(error)).toBe(true);
        expect(error).toMatchObject({ code: "invalid_params", field: "to" });
      }),
    );
    expect(matrixThreadRoot(" $AbC ")).toBe("$AbC");
    expect(() => matrixThreadRoot("77")).toThrow(/root event ids/);
  });
});

describe("Matrix errors for the outbox", () => {
  it("maps rate limits to rate_limited with the server's delay, header first", () => {
    const body = new MatrixError(
      { errcode: "M_LIMIT_EXCEEDED", error: "slow down", retry_after_ms: 2500 },
      429,
    );
    expect(toSessionsError(body)).toMatchObject({ code: "rate_limited", retryAfterMs: 2500 });
    const header = new MatrixError(
      { errcode: "M_LIMIT_EXCEEDED", retry_after_ms: 2500 },
      429,
      undefined,
      undefined,
      new Headers({ "retry-after": "9" }),
    );
    expect(toSessionsError(header)).toMatchObject({ code: "rate_limited", retryAfterMs: 9000 });
    const fraction = new MatrixError({ errcode: "M_LIMIT_EXCEEDED", retry_after_ms: 1.5 }, 429);
    expect(toSessionsError(fraction)).toMatchObject({ code: "rate_limited", retryAfterMs: 2 });
    const negative = new MatrixError({ errcode: "M_LIMIT_EXCEEDED", retry_after_ms: -5 }, 429);
    expect(toSessionsError(negative)).toMatchObject({ code: "rate_limited", retryAfterMs: 1000 });
    expect(toSessionsError(new MatrixError({}, 429))).toMatchObject({
      code: "rate_limited",
      retryAfterMs: 1000,
    });
  });

  it("maps every other 4xx to invalid_params and the rest to unavailable", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 400, max: 499 }),
        fc.constantFrom("M_FORBIDDEN", "M_NOT_FOUND", "M_TOO_LARGE"),
        (status, errcode) => {
          fc.pre(status !== 429);
          expect(toSessionsError(new MatrixError({ errcode }, status)).code).toBe("invalid_params");
        },
      ),
    );
    expect(toSessionsError(new MatrixError({ errcode: "M_UNKNOWN" }, 502)).code).toBe("unavailable");
    expect(toSessionsError(new TypeError("fetch failed")).code).toBe("unavailable");
    expect(toSessionsError(undefined).code).toBe("unavailable");
  });
});
