import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { eventually } from "../../test-kit.js";
import { startCheckpointer } from "./checkpointer.js";

const dir = mkdtempSync(join(tmpdir(), "sessions-checkpointer-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("the background checkpointer", () => {
  it("copies the WAL into the database file from its own thread, and stops", async () => {
    const file = join(dir, "c.db");
    const db = new Database(file);
    db.pragma("journal_mode = WAL");
    db.pragma("wal_autocheckpoint = 0");
    db.exec("CREATE TABLE t (id INTEGER PRIMARY KEY, data TEXT)");
    const insert = db.prepare("INSERT INTO t (data) VALUES (?)");
    db.transaction(() => {
      for (let i = 0; i < 2_000; i++) insert.run("x".repeat(500));
    })();
    const before = statSync(file).size;
    expect(statSync(`${file}-wal`).size).toBeGreaterThan(1_000_000);

    const checkpointer = startCheckpointer(file, "NORMAL");
    expect(checkpointer).toBeDefined();
    await eventually(() => expect(statSync(file).size).toBeGreaterThan(before + 1_000_000));
    // Everything the WAL held is in the file now: a checkpoint of ours finds nothing left to copy.
    const [state] = db.pragma("wal_checkpoint(PASSIVE)") as { log: number; checkpointed: number }[];
    expect(state?.checkpointed).toBe(state?.log);
    await checkpointer?.stop();
    await checkpointer?.stop();
    expect((db.prepare("SELECT COUNT(*) AS n FROM t").get() as { n: number }).n).toBe(2_000);
    db.close();
  });
});
