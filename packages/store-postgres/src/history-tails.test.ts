import pg from "pg";
import { afterAll, describe, expect, inject, it, vi } from "vitest";
import { eventually, freshSchema, storeOpener } from "./testing/helpers.js";

const url = inject("postgresUrl");
const stores = storeOpener(url);
afterAll(() => stores.closeAll());

/** How many statements `work` sends to Postgres, and what it answers. */
async function counted<T>(work: () => Promise<T>): Promise<{ statements: number; result: T }> {
  const spy = vi.spyOn(pg.Client.prototype, "query");
  try {
    const result = await work();
    return { statements: spy.mock.calls.length, result };
  } finally {
    spy.mockRestore();
  }
}

describe("a run's history window on Postgres", () => {
  it("comes from what this gateway wrote, and from the database once another gateway wrote into it", async () => {
    const schema = freshSchema("history_tails");
    const a = await stores.open(schema);
    const b = await stores.open(schema);
    const say = (content: string) => ({ role: "user" as const, content, ts: 1 });
    await a.appendMessage("s", say("a1"));
    await a.appendMessage("s", say("a2"));
    const window = (limit: number, beforeSeq: number) => a.readMessages("s", { limit, beforeSeq });
    const known = await counted(() => window(50, 3));
    expect(known).toEqual({
      statements: 0,
      result: [
        expect.objectContaining({ seq: 1, content: "a1" }),
        expect.objectContaining({ seq: 2, content: "a2" }),
      ],
    });
    // Lent to a run (parsed when its runner reads it): fresh copies each time, no round trip.
    const lendMessages = Symbol.for("@sessions/gateway.lendMessages");
    const lend = (
      a as unknown as Record<symbol, (key: string, o: object) => Promise<() => { content: unknown }[]>>
    )[lendMessages];
    const lent = await counted(() =>
      (lend as NonNullable<typeof lend>).call(a, "s", { limit: 50, beforeSeq: 3 }),
    );
    expect(lent.statements).toBe(0);
    const copy = lent.result();
    (copy[0] as { content: unknown }).content = "changed";
    expect(lent.result().map((m) => m.content)).toEqual(["a1", "a2"]);
    // b appends seq 3, a seq 4: a's window up to 4 spans a message it never saw, so it reads it.
    await b.appendMessage("s", say("b3"));
    await a.appendMessage("s", say("a4"));
    const mixed = await counted(() => window(50, 5));
    expect(mixed.statements).toBeGreaterThan(0);
    expect(mixed.result.map((m) => [m.seq, m.content])).toEqual([
      [1, "a1"],
      [2, "a2"],
      [3, "b3"],
      [4, "a4"],
    ]);
    // What it read, it knows now; a reply appended after it follows on.
    await a.appendMessage("s", say("a5"));
    expect(await counted(() => window(3, 6))).toMatchObject({ statements: 0 });
    expect((await window(3, 6)).map((m) => m.content)).toEqual(["b3", "a4", "a5"]);
    // Deleted by b: once a hears of it (the change feed), its known tail is gone, and the new transcript is read.
    let heard = false;
    const unwatch = a.watch((change) => {
      if (change.type === "entry" && change.op === "delete" && change.key === "s") heard = true;
    });
    await b.deleteEntry("s");
    await eventually(() => heard, "a hears of the deletion");
    unwatch();
    await b.appendMessage("s", say("new1"));
    expect((await window(50, 2)).map((m) => [m.seq, m.content])).toEqual([[1, "new1"]]);
  });
});
