import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { eventually } from "../../test-kit.js";
import { startCheckpointer } from "./checkpointer.js";

const dir = mkdtempSync(join(tmpdir(), "sessions-checkpointer-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function walDatabase(name: string) {
  const file = join(dir, name);
  const db = new Database(file);
  db.pragma("journal_mode = WAL");
  db.pragma("wal_autocheckpoint = 0");
  db.exec("CREATE TABLE t (id INTEGER PRIMARY KEY, data TEXT)");
  const insert = db.prepare("INSERT INTO t (data) VALUES (?)");
  const write = (rows: number) =>
    db.transaction(() => {
      for (let i = 0; i < rows; i++) insert.run("x".repeat(500));
    })();
  return { file, db, write };
}

describe("the background checkpointer", () => {
  it("copies the WAL into the database file from its own thread, and stops", async () => {
    const { file, db, write } = walDatabase("c.db");
    write(2_000);
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

  it("checkpoints after a kick while the writer's event loop never turns", async () => {
    const { file, db, write } = walDatabase("busy.db");
    write(2_000);
    const empty = statSync(file).size;
    // It would sleep a minute between looks of its own: only kicks wake it here, once its first checkpoint is done.
    const checkpointer = startCheckpointer(file, "NORMAL", 60_000);
    expect(checkpointer).toBeDefined();
    await eventually(() => expect(statSync(file).size).toBeGreaterThan(empty + 1_000_000));
    const before = statSync(file).size;
    // A burst as the gateway makes one: commits and kicks chained by promises alone, so no message, timer or
    // I/O callback of this thread runs until it ends. The bound is for a worker that never copies, not a budget
    // (a loaded machine may leave the worker's thread unscheduled for seconds); the writes stop after 5 MB, the
    // kicks go on.
    const boundMs = 120_000;
    let copied = false;
    let bursts = 0;
    const deadline = Date.now() + boundMs;
    while (!copied && Date.now() < deadline) {
      if (bursts++ < 50) write(200);
      checkpointer?.kick();
      await Promise.resolve();
      copied = statSync(file).size > before + 500_000;
    }
    expect(
      copied,
      `the database file to grow past ${before + 500_000} bytes (it has ${statSync(file).size}, WAL ${statSync(`${file}-wal`).size}) after ${Math.min(bursts, 50)} commits of 200 rows and ${bursts} kicks in ${boundMs} ms: the worker never checkpointed`,
    ).toBe(true);
    await checkpointer?.stop();
    db.close();
  });
});
