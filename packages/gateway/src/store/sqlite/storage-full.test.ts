import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SessionsError } from "@sessions/core";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { toWireError } from "../../server/wire-errors.js";
import { createSqliteStore } from "../sqlite.js";
import { toWriteError } from "./write-errors.js";

const dir = mkdtempSync(join(tmpdir(), "sessions-full-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const key = "agent:main:main";
const big = (i: number) => ({ role: "user" as const, content: `${i} ${"x".repeat(8_000)}`, ts: i });

async function rejection(promise: Promise<unknown>): Promise<SessionsError> {
  try {
    await promise;
  } catch (error) {
    if (SessionsError.isInstance(error)) return error;
    throw error;
  }
  throw new Error("expected a rejection");
}

describe("a full SQLite store", () => {
  it("refuses writes with storage_full, keeps reads working, and maps to a retryable wire error", async () => {
    const path = join(dir, "full.db");
    const store = createSqliteStore({ path, maxPageCount: 120 });
    await store.putEntry({ key, sessionId: "s", agentId: "main", kind: "main", createdAt: 1, updatedAt: 1 });
    let appended = 0;
    let full: SessionsError | undefined;
    for (let i = 1; i <= 1_000 && full === undefined; i++) {
      try {
        await store.appendMessage(key, big(i));
        appended = i;
      } catch (error) {
        if (!SessionsError.isInstance(error)) throw error;
        full = error;
      }
    }
    expect(appended).toBeGreaterThan(10);
    expect(full).toMatchObject({ code: "storage_full", retryAfterMs: 60_000 });
    expect(full?.message).toContain(`the SQLite store at ${path} is full`);
    expect(full?.cause).toMatchObject({ code: "SQLITE_FULL" });

    // Reads keep working, and the refused write left nothing behind.
    expect(await store.getEntry(key)).toMatchObject({ sessionId: "s" });
    expect(await store.countMessages(key)).toBe(appended);
    const last = await store.readMessages(key, { limit: 2 });
    expect(last.map((m) => m.seq)).toEqual([appended - 1, appended]);

    // A transaction that hits the cap rolls back as a whole, with the same typed error.
    const inTx = await rejection(
      store.transaction(async (tx) => {
        await tx.putRun({
          runId: "r",
          sessionKey: key,
          agentId: "main",
          kind: "chat",
          status: "queued",
          createdAt: 1,
        });
        await tx.appendMessage(key, big(0));
        await tx.appendMessage(key, big(0));
      }),
    );
    expect(inTx.code).toBe("storage_full");
    expect(await store.getRun("r")).toBeUndefined();
    expect(await store.countMessages(key)).toBe(appended);

    expect(toWireError(full)).toEqual({
      code: "UNAVAILABLE",
      message: full?.message,
      details: { sqlite: "SQLITE_FULL", code: "STORAGE_FULL" },
      retryable: true,
      retryAfterMs: 60_000,
    });
    await store.close();

    // The cap belongs to the connection: without it the same file takes writes again.
    const uncapped = createSqliteStore({ path });
    expect((await uncapped.appendMessage(key, big(0))).seq).toBe(appended + 1);
    await uncapped.close();
  });

  it("maps storage_full to the wire with a default retry of a minute", () => {
    expect(toWireError(new SessionsError("storage_full", "disk full"))).toEqual({
      code: "UNAVAILABLE",
      message: "disk full",
      details: { code: "STORAGE_FULL" },
      retryable: true,
      retryAfterMs: 60_000,
    });
  });

  it("turns other SQLite write failures into unavailable (or conflict for a broken constraint)", () => {
    const io = new Database.SqliteError("disk I/O error", "SQLITE_IOERR_WRITE");
    expect(toWriteError(io, "/x/sessions.db")).toMatchObject({ code: "unavailable", cause: io });
    const unique = new Database.SqliteError("UNIQUE constraint failed", "SQLITE_CONSTRAINT_UNIQUE");
    expect(toWriteError(unique, "/x/sessions.db")).toMatchObject({ code: "conflict", cause: unique });
    const bug = new TypeError("not a SQLite error");
    expect(toWriteError(bug, "/x/sessions.db")).toBe(bug);
  });
});
