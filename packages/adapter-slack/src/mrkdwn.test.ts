import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { escapeMrkdwn, unescapeMrkdwn } from "./mrkdwn.js";

describe("mrkdwn escaping", () => {
  it("escapes exactly &, < and >, so model output never mentions anyone or forms a link; unescaping gives it back", () => {
    expect(escapeMrkdwn("a & b <@U1> <!channel> <https://evil.example|click> > c")).toBe(
      "a &amp; b &lt;@U1&gt; &lt;!channel&gt; &lt;https://evil.example|click&gt; &gt; c",
    );
    // Formatting is not escaped: *bold*, _italics_, `code` and ``` blocks render.
    expect(escapeMrkdwn("*bold* _it_ `x` ~s~")).toBe("*bold* _it_ `x` ~s~");
    fc.assert(
      fc.property(fc.string(), (text) => {
        const escaped = escapeMrkdwn(text);
        expect(escaped).not.toMatch(/[<>]/);
        expect(escaped.replace(/&(amp|lt|gt);/g, "")).not.toContain("&");
        expect(unescapeMrkdwn(escaped)).toBe(text);
      }),
    );
  });

  it("decodes what people send, leaving Slack's user mentions, channel links and URLs as Slack wrote them", () => {
    // What Slack puts in `text` when a person writes "@bob see #ops and https://example.com/?a=1&b=2 if x<y".
    const sent =
      "<@U0BOB0001> see <#C0OPS0001|ops> and <https://example.com/?a=1&amp;b=2> if x&lt;y &amp; y&gt;z";
    expect(unescapeMrkdwn(sent)).toBe(
      "<@U0BOB0001> see <#C0OPS0001|ops> and <https://example.com/?a=1&b=2> if x<y & y>z",
    );
    // Decoding happens once: an escaped entity a person typed stays visible as typed.
    expect(unescapeMrkdwn("&amp;lt;")).toBe("&lt;");
  });
});
