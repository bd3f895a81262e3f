import { searchableText } from "@sessions/core";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { freshSchema, sql, storeOpener } from "./testing/helpers.js";

/**
 * Migration 8 rewrote `message_search_text` and `json_with` in PL/pgSQL: what they give must stay what the searched
 * text of @sessions/core and an object spread give, for any message and any fields.
 */
const url = inject("postgresUrl");
const stores = storeOpener(url);
const schema = freshSchema("cached_plans");
beforeAll(async () => {
  await stores.open(schema);
});
afterAll(() => stores.closeAll());

const text = fc.string({ maxLength: 12, unit: "grapheme" });
const part = fc.oneof(
  fc.record({ type: fc.constant("text"), text }),
  fc.record({ type: fc.constantFrom("image", "toolCall"), text }),
  fc.record({ type: fc.constant("text"), text: fc.integer() }),
  fc.constant(null),
  text,
);
const message = fc.record({
  role: fc.constantFrom("user", "assistant", "toolResult", "tool", "system"),
  content: fc.oneof(text, fc.array(part, { maxLength: 4 }), fc.constant(null), fc.record({ text })),
});
const jsonValue = fc.oneof(
  fc.integer(),
  text,
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.integer(), { maxLength: 2 }),
);

describe("migration 8's functions", () => {
  it("message_search_text gives a message's searched text, as @sessions/core reads it", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(message, { minLength: 1, maxLength: 20 }), async (messages) => {
        const docs = messages.map((m) => JSON.stringify(m));
        const rows = await sql<{ t: string | null }>(
          url,
          `SELECT "${schema}".message_search_text(d) AS t FROM unnest($1::text[]) WITH ORDINALITY AS u(d, i) ORDER BY i`,
          [docs],
        );
        // Postgres gives "" where core gives nothing (an empty text): the same searched words.
        expect(rows.map((row) => row.t ?? "")).toEqual(messages.map((m) => searchableText(m) ?? ""));
      }),
      { numRuns: 40 },
    );
  });

  it("message_search_text reads text with an escaped NUL or lone surrogate, which Postgres's JSON refuses", async () => {
    const doc = JSON.stringify({ role: "user", content: "a\u0000b \ud800c" });
    const [row] = await sql<{ t: string }>(url, `SELECT "${schema}".message_search_text($1) AS t`, [doc]);
    expect(row?.t).toBe("a b  c");
  });

  it("json_with gives the document with the fields set, as a spread does", async () => {
    const object = fc.dictionary(fc.constantFrom("a", "b", "c", "updatedAt", "x y"), jsonValue, {
      maxKeys: 5,
    });
    await fc.assert(
      fc.asyncProperty(object, object, async (doc, fields) => {
        const [row] = await sql<{ t: string }>(url, `SELECT "${schema}".json_with($1, $2::jsonb) AS t`, [
          JSON.stringify(doc),
          JSON.stringify(fields),
        ]);
        expect(JSON.parse(row?.t ?? "null") ?? {}).toEqual({ ...doc, ...fields });
      }),
      { numRuns: 60 },
    );
  });
});
