import { LIMITS, parseMethodParams, SessionsError } from "@sessions/core";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  continueSessionsWalk,
  decodeHistoryCursor,
  encodeHistoryCursor,
  encodeSessionsCursor,
  sessionFilters,
} from "./cursors.js";

/** Whatever the outcome, a bad cursor is `invalid_params` naming `cursor`, never another error. */
function outcome(decode: () => unknown): "ok" | "refused" {
  try {
    decode();
    return "ok";
  } catch (error) {
    expect(
      SessionsError.isInstance(error) && error.code === "invalid_params" && error.field === "cursor",
    ).toBe(true);
    return "refused";
  }
}

/** Any string, worst cases included: control characters (escaped six-fold in JSON) and astral characters. */
const text = (max: number) =>
  fc.oneof(
    fc.string({ maxLength: max, unit: "binary" }),
    fc.string({ maxLength: max, unit: fc.constantFrom("\u0001", '"', "\\", "\u{1F600}", "a") }),
  );

/** `sessions.list` params as a caller may send them, up to every limit. */
const listParams = fc.record(
  {
    agentId: fc.stringMatching(/^[a-z][a-z0-9_-]{0,255}$/),
    kinds: fc.array(fc.constantFrom("main", "group", "cron", "hook", "node", "other"), {
      maxLength: LIMITS.kinds,
    }),
    label: text(LIMITS.label),
    spawnedBy: text(LIMITS.key),
    search: text(LIMITS.search),
    activeMinutes: fc.integer({ min: 1, max: 10_000_000 }),
    includeGlobal: fc.boolean(),
    includeUnknown: fc.boolean(),
    includeArchived: fc.boolean(),
  },
  { requiredKeys: [] },
);

describe("chat.history cursors", () => {
  it("round-trip the transcript's sessionId and seq", () => {
    fc.assert(
      fc.property(
        text(LIMITS.id).filter(Boolean),
        fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }),
        (id, seq) => {
          const cursor = encodeHistoryCursor({ sessionId: id, beforeSeq: seq });
          expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/);
          expect(decodeHistoryCursor(cursor)).toEqual({ sessionId: id, beforeSeq: seq });
        },
      ),
    );
  });

  it("refuse anything else as invalid_params naming cursor, never with another error", () => {
    fc.assert(fc.property(fc.string({ maxLength: 300 }), (s) => void outcome(() => decodeHistoryCursor(s))));
    const real = encodeHistoryCursor({ sessionId: "3f6c", beforeSeq: 41 });
    // Every one-character change of a real cursor either still decodes to a well-formed cursor or is refused.
    fc.assert(
      fc.property(fc.nat({ max: real.length - 1 }), fc.string({ minLength: 1, maxLength: 1 }), (at, c) => {
        void outcome(() => decodeHistoryCursor(real.slice(0, at) + c + real.slice(at + 1)));
      }),
    );
    const refused = (cursor: string) => expect(outcome(() => decodeHistoryCursor(cursor))).toBe("refused");
    refused(encodeSessionsCursor("agent:main:a", {}));
    refused(Buffer.from('{"v":2,"m":"chat.history","s":"x","b":3}').toString("base64url"));
    refused(Buffer.from('{"v":1,"m":"chat.history","s":"x","b":0}').toString("base64url"));
    refused(Buffer.from('{"v":1,"m":"chat.history","s":"x","b":1.5}').toString("base64url"));
    refused(Buffer.from('{"v":1,"m":"chat.history","s":"x","b":3,"extra":1}').toString("base64url"));
    refused(`${real}=`);
    refused("deltaCursor:abc");
  });
});

describe("sessions.list cursors", () => {
  it("fit the cursor limit and continue the walk for any filters, resent or not", () => {
    fc.assert(
      fc.property(
        listParams,
        text(LIMITS.key + 300),
        fc.integer({ min: 0, max: 2 ** 48 }),
        (raw, lastKey, now) => {
          const p = parseMethodParams("sessions.list", raw);
          const filters = sessionFilters(p, now);
          const cursor = encodeSessionsCursor(lastKey, filters);
          expect(cursor.length).toBeLessThanOrEqual(LIMITS.cursor);
          // The cursor alone, and the cursor with the first page's filters again, continue the same walk.
          for (const again of [{ cursor }, { ...raw, cursor }]) {
            const q = parseMethodParams("sessions.list", again);
            expect(continueSessionsWalk({ ...q, cursor })).toEqual({ afterKey: lastKey, filters });
          }
        },
      ),
      {
        numRuns: 200,
        // The longest cursor: every filter at its limit, in characters JSON escapes six-fold.
        examples: [
          [
            {
              agentId: `a${"b".repeat(LIMITS.id - 1)}`,
              kinds: Array(LIMITS.kinds).fill("other"),
              label: "\u0001".repeat(LIMITS.label),
              spawnedBy: "\u0001".repeat(LIMITS.key),
              search: "\u0001".repeat(LIMITS.search),
              activeMinutes: 10_000_000,
              includeGlobal: true,
              includeUnknown: true,
              includeArchived: true,
            },
            "\u0001".repeat(LIMITS.key + 300),
            2 ** 48,
          ],
        ],
      },
    );
  });

  it("refuse filters that differ from the walk's, naming cursor", () => {
    const p = parseMethodParams("sessions.list", {
      agentId: "Ops",
      kinds: ["group", "main", "group"],
      includeGlobal: true,
      activeMinutes: 60,
    });
    const cursor = encodeSessionsCursor("agent:ops:x", sessionFilters(p, 1_000_000));
    const walk = (params: object) =>
      continueSessionsWalk({ ...parseMethodParams("sessions.list", { ...params, cursor }), cursor });
    // The same filters in another spelling are the same walk.
    expect(
      walk({ agentId: "ops", kinds: ["main", "group"], includeGlobal: true, sortBy: "key" }).afterKey,
    ).toBe("agent:ops:x");
    expect(walk({ includeUnknown: false, includeArchived: false }).filters.since).toBe(1_000_000 - 3_600_000);
    for (const [params, filter] of [
      [{ agentId: "main" }, "agentId"],
      [{ kinds: ["group"] }, "kinds"],
      [{ includeGlobal: false }, "includeGlobal"],
      [{ includeArchived: true }, "includeArchived"],
      [{ activeMinutes: 61 }, "activeMinutes"],
      [{ label: "x" }, "label"],
      [{ search: "" }, "search"],
    ] as const) {
      expect(() => walk(params)).toThrowError(
        expect.objectContaining({ code: "invalid_params", field: "cursor", details: { filter } }),
      );
    }
    expect(() => walk({ sortBy: "updatedAt" })).toThrowError(
      expect.objectContaining({ code: "invalid_params", field: "cursor" }),
    );
    for (const other of [
      encodeHistoryCursor({ sessionId: "s", beforeSeq: 2 }),
      "x",
      `${cursor.slice(0, -4)}`,
    ]) {
      expect(() =>
        continueSessionsWalk({ ...parseMethodParams("sessions.list", { cursor: other }), cursor: other }),
      ).toThrowError(expect.objectContaining({ code: "invalid_params", field: "cursor" }));
    }
  });
});
