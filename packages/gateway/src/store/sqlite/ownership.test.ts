import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { SessionsError } from "@sessions/core";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { createSqliteStore } from "../sqlite.js";
import { OWNER_LEASE } from "./ownership.js";

const here = dirname(fileURLToPath(import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "sessions-owner-"));
const children: ChildProcess[] = [];
afterAll(() => {
  for (const child of children) if (child.exitCode === null) child.kill("SIGKILL");
  rmSync(dir, { recursive: true, force: true });
});

/** Starts a process that opens `path` and holds it; resolves once the store is open. */
function holdInChild(path: string): Promise<ChildProcess> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", join(here, "owner-child.fixture.ts"), path], {
      cwd: here,
      stdio: ["ignore", "pipe", "pipe"],
    });
    children.push(child);
    let stderr = "";
    child.stderr?.on("data", (chunk) => {
      stderr += String(chunk);
    });
    child.stdout?.on("data", (chunk) => {
      if (String(chunk).includes('"ready":true')) resolve(child);
    });
    child.on("exit", (code) => reject(new Error(`owner child exited (${code}): ${stderr}`)));
  });
}

function openError(path: string): SessionsError {
  try {
    createSqliteStore({ path });
  } catch (error) {
    if (SessionsError.isInstance(error)) return error;
    throw error;
  }
  throw new Error("expected the open to be refused");
}

const leaseRow = (path: string) => {
  const db = new Database(path, { readonly: true });
  try {
    return db.prepare("SELECT owner, expires_at, data FROM leases WHERE name = ?").get(OWNER_LEASE) as
      | { owner: string; expires_at: number; data: string }
      | undefined;
  } finally {
    db.close();
  }
};

describe("one owner per SQLite file", () => {
  it("refuses a second process with the holder's pid, host and since; takes over at once after SIGKILL", async () => {
    const path = join(dir, "shared.db");
    const child = await holdInChild(path);
    const refused = openError(path);
    expect(refused.code).toBe("conflict");
    expect(refused.message).not.toContain("\n");
    expect(refused.message).toMatch(
      new RegExp(
        `^SQLite store ${path.replaceAll(/[.*+?^${}()|[\]\\]/g, "\\$&")} is in use by pid ${child.pid} on host ${hostname()} since \\d{4}-\\d{2}-\\d{2}T[\\d:.]+Z \\(one gateway per SQLite file; stop it, or use a networked store for several gateways\\)$`,
      ),
    );
    expect(refused.details).toMatchObject({ pid: child.pid, host: hostname() });

    const exited = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGKILL");
    await exited;
    // The dead holder's lease has not expired, before the open nor once it returned: the takeover comes from the
    // pid check, not from time.
    const deadExpiresAt = leaseRow(path)?.expires_at;
    expect(deadExpiresAt).toBeGreaterThan(Date.now());
    const store = createSqliteStore({ path });
    expect(deadExpiresAt, "the dead holder's lease expired during the open").toBeGreaterThan(Date.now());
    expect(await store.getEntry("agent:main:main")).toMatchObject({ sessionId: "child" });
    expect(JSON.parse(leaseRow(path)?.data ?? "{}")).toEqual({ pid: process.pid, host: hostname() });
    await store.close();
    expect(leaseRow(path)).toBeUndefined();
  });

  it("refuses a second open in the same process until the first is closed", async () => {
    const path = join(dir, "same-process.db");
    const first = createSqliteStore({ path });
    const refused = openError(path);
    expect(refused).toMatchObject({ code: "conflict", field: "path" });
    expect(refused.message).toContain(`in use by pid ${process.pid} on host ${hostname()}`);
    await first.putEntry({
      key: "k",
      sessionId: "s",
      agentId: "main",
      kind: "main",
      createdAt: 1,
      updatedAt: 1,
    });
    await first.close();
    const second = createSqliteStore({ path });
    expect(await second.getEntry("k")).toBeDefined();
    await second.close();
  });

  it("waits for a holder on another host until its lease expires", async () => {
    const path = join(dir, "other-host.db");
    await createSqliteStore({ path }).close();
    const db = new Database(path);
    const take = db.prepare(
      "INSERT OR REPLACE INTO leases (name, owner, acquired_at, expires_at, data) VALUES (?, 'far', ?, ?, ?)",
    );
    const data = JSON.stringify({ pid: 4242, host: "far-away-box" });
    take.run(OWNER_LEASE, Date.UTC(2026, 10, 23, 18, 20), Date.now() + 60_000, data);
    const refused = openError(path);
    expect(refused.message).toContain(
      `is in use by pid 4242 on host far-away-box since 2026-11-23T18:20:00.000Z (one gateway per SQLite file;`,
    );
    take.run(OWNER_LEASE, Date.UTC(2026, 10, 23, 18, 20), Date.now() - 1, data);
    db.close();
    const store = createSqliteStore({ path });
    await store.close();
  });

  it("lets any number of private in-memory databases coexist", async () => {
    const a = createSqliteStore({ path: ":memory:" });
    const b = createSqliteStore({ path: ":memory:" });
    await Promise.all([a.close(), b.close()]);
  });
});
