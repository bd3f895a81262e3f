import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  markSnippet,
  SEARCH_SNIPPET_LENGTH,
  searchableKey,
  searchableText,
  searchSnippet,
  searchTerms,
  textMatches,
} from "./search.js";

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const anyText = fc.oneof(fc.string(), fc.string({ unit: "grapheme" }), fc.string({ unit: "binary" }));

describe("searchTerms", () => {
  it("keeps words only, lowercased, once each; query syntax is never interpreted", () => {
    expect(searchTerms('"Deploy"* -prod OR NEAR(db, 2) deploy ^x')).toEqual([
      { text: "deploy", prefix: true },
      { text: "prod", prefix: true },
      { text: "or", prefix: false },
      { text: "near", prefix: true },
      { text: "db", prefix: false },
      { text: "2", prefix: false },
      { text: "x", prefix: false },
    ]);
    expect(searchTerms('  ***  "" -- ()')).toEqual([]);
    expect(searchTerms(42)).toEqual([]);
    expect(searchTerms("Größe crème МОСКВА 東京")).toEqual([
      { text: "größe", prefix: true },
      { text: "crème", prefix: true },
      { text: "москва", prefix: true },
      { text: "東京", prefix: false },
    ]);
  });

  it("never throws and yields non-empty lowercased words made of letters, digits and marks", () => {
    fc.assert(
      fc.property(anyText, (query) => {
        const terms = searchTerms(query);
        for (const term of terms) {
          expect(term.text).not.toBe("");
          expect(term.text).toBe(term.text.toLowerCase());
          expect(term.text).toMatch(/^[\p{L}\p{N}\p{M}\p{Co}]+$/u);
        }
        expect(new Set(terms.map((t) => t.text)).size).toBe(terms.length);
      }),
    );
  });

  it("is idempotent: the terms of the terms are the terms", () => {
    fc.assert(
      fc.property(anyText, (query) => {
        const terms = searchTerms(query);
        expect(searchTerms(terms.map((t) => t.text).join(" "))).toEqual(terms);
      }),
    );
  });
});

describe("searchableText", () => {
  it("is the string content, or the text parts joined; tool results and empty text are not searched", () => {
    expect(searchableText({ role: "user", content: "hi there" })).toBe("hi there");
    expect(
      searchableText({
        role: "assistant",
        content: [
          { type: "text", text: "one" },
          { type: "tool-call", toolName: "x", input: { text: "hidden" } },
          { type: "text", text: "two" },
          { type: "text", text: 3 },
        ],
      }),
    ).toBe("one\ntwo");
    expect(searchableText({ role: "toolResult", content: "secret output" })).toBeUndefined();
    expect(searchableText({ role: "tool", content: [{ type: "text", text: "x" }] })).toBeUndefined();
    expect(searchableText({ role: "user", content: "" })).toBeUndefined();
    expect(searchableText({ role: "user", content: { text: "x" } })).toBeUndefined();
  });

  it("keys are searched without their agent prefix", () => {
    expect(searchableKey("agent:ops:discord:group:team-room")).toBe("discord:group:team-room");
    expect(searchableKey("global")).toBe("global");
  });
});

describe("searchSnippet", () => {
  const terms = searchTerms("deploy");

  it("shows the text around the first match and highlights every matching word in it", () => {
    const text = `${"filler ".repeat(30)}we should Deploy the deployment today ${"tail ".repeat(40)}`;
    const snippet = searchSnippet(text, terms);
    expect(snippet.text.startsWith("…")).toBe(true);
    expect(snippet.text.endsWith("…")).toBe(true);
    expect(snippet.highlights.map(([a, b]) => snippet.text.slice(a, b))).toEqual(["Deploy", "deployment"]);
    expect(markSnippet(snippet)).toContain("we should «Deploy» the «deployment» today");
  });

  it("gives the beginning of a text without a match, whitespace collapsed", () => {
    expect(searchSnippet("a\n\n  b", terms)).toEqual({ text: "a b", highlights: [] });
  });

  it("never throws, stays short, never splits a character, and highlights only matching words", () => {
    fc.assert(
      fc.property(anyText, anyText, (text, query) => {
        const terms = searchTerms(query);
        const snippet = searchSnippet(text, terms);
        expect(snippet.text.length).toBeLessThanOrEqual(SEARCH_SNIPPET_LENGTH + 2);
        let after = 0;
        for (const [from, to] of snippet.highlights) {
          expect(from).toBeGreaterThanOrEqual(after);
          expect(from).toBeLessThan(to);
          expect(terms.some((t) => textMatches(snippet.text.slice(from, to), [t]))).toBe(true);
          after = to;
        }
      }),
    );
    fc.assert(
      fc.property(fc.string({ unit: "grapheme", maxLength: 400 }), anyText, (text, query) => {
        expect(searchSnippet(text, searchTerms(query)).text).not.toMatch(LONE_SURROGATE);
      }),
    );
  });

  it("highlights a word present in the text when the query is that word", () => {
    fc.assert(
      fc.property(
        fc.stringMatching(/^[a-z]{3,12}$/),
        fc.array(fc.stringMatching(/^[0-9 .,!?]{0,20}$/), { maxLength: 5 }),
        (word, noise) => {
          const snippet = searchSnippet([...noise, word, ...noise].join(" "), searchTerms(word));
          expect(snippet.highlights.map(([a, b]) => snippet.text.slice(a, b))).toContain(word);
        },
      ),
    );
  });
});
