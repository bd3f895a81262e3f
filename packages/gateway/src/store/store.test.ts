import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SessionsError } from "@sessions/core";
import { afterAll, describe, expect, it } from "vitest";
import { createMemoryStore } from "./memory.js";
import { createSqliteStore } from "./sqlite.js";
import { describeStoreContract } from "./store.contract.js";

const dir = mkdtempSync(join(tmpdir(), "sessions-store-"));
let n = 0;
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describeStoreContract("memory", () => createMemoryStore());
describeStoreContract("sqlite file", () => createSqliteStore({ path: join(dir, `contract-${++n}.db`) }));

describe("createSqliteStore", () => {
  it("persists across reopen of the same file", async () => {
    const path = join(dir, "reopen.db");
    const first = createSqliteStore({ path });
    await first.appendMessage("s", { role: "user", content: "kept", ts: 1 });
    await first.close();
    const second = createSqliteStore({ path });
    expect((await second.readMessages("s", { limit: 1 }))[0]).toMatchObject({ content: "kept", seq: 1 });
    await second.close();
  });

  it("rejects an empty path with a typed error", () => {
    expect(() => createSqliteStore({ path: "" })).toThrowError(
      expect.objectContaining({ code: "invalid_config", field: "path" }),
    );
  });

  it("reports a closed store as unavailable", async () => {
    const store = createSqliteStore({ path: ":memory:" });
    await store.close();
    await expect(store.getEntry("x")).rejects.toSatisfy(
      (e: unknown) => SessionsError.isInstance(e) && e.code === "unavailable",
    );
  });
});
