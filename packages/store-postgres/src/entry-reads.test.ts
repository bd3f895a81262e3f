import type { SessionStore, StoredEntry } from "@sessions/gateway";
import { afterAll, describe, expect, inject, it } from "vitest";
import { freshSchema, storeOpener } from "./testing/helpers.js";

/**
 * Entry reads outside a unit are batched (see entry-reads.ts): reads asked for together share a statement. Each
 * caller still gets its own entry, its own copy, and nothing older than what was committed when it asked.
 */
const url = inject("postgresUrl");
const stores = storeOpener(url);
afterAll(() => stores.closeAll());

const entry = (key: string, updatedAt: number): StoredEntry => ({
  key,
  sessionId: `sid-${key}`,
  agentId: "main",
  kind: "other",
  createdAt: 1,
  updatedAt,
});

describe("entry reads outside a unit", () => {
  it("answers each of 300 reads asked together with its own key's entry, missing ones included", async () => {
    const store = await stores.open(freshSchema("reads"));
    const keys = Array.from({ length: 100 }, (_, i) => `agent:main:s${i}`);
    await Promise.all(keys.map((key, i) => store.putEntry(entry(key, i + 10))));
    // Every key three times, and as many keys that have no entry, interleaved.
    const asked = Array.from({ length: 300 }, (_, i) =>
      i % 2 === 0 ? keys[i % 100] : `agent:main:none${i}`,
    );
    const read = await Promise.all(asked.map((key) => store.getEntry(key as string)));
    expect(read.map((found) => found?.updatedAt)).toEqual(
      asked.map((key) =>
        key?.includes("none") ? undefined : Number(key?.slice("agent:main:s".length)) + 10,
      ),
    );
    // Two reads of one key in one batch are two copies: one caller's change is not another's.
    const [first, second] = await Promise.all([
      store.getEntry(keys[0] as string),
      store.getEntry(keys[0] as string),
    ]);
    (first as StoredEntry).label = "changed by its reader";
    expect(second?.label).toBeUndefined();
  });

  it("reads what another gateway committed before the read was asked, while others' reads are under way", async () => {
    const schema = freshSchema("reads_fresh");
    const a: SessionStore = await stores.open(schema);
    const b: SessionStore = await stores.open(schema);
    const key = "agent:main:shared";
    for (let round = 1; round <= 20; round++) {
      // Gateway A keeps its read connections busy; gateway B writes; the read asked after B's commit sees it.
      const busy = Array.from({ length: 50 }, (_, i) => a.getEntry(`agent:main:other${i}`));
      await b.putEntry(entry(key, round));
      const seen = await a.getEntry(key);
      expect(seen?.updatedAt).toBe(round);
      await Promise.all(busy);
    }
  });
});
