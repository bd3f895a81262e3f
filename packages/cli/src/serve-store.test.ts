import { execFile } from "node:child_process";
import { createServer } from "node:net";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";

const run = promisify(execFile);
const here = dirname(fileURLToPath(import.meta.url));
const cli = join(here, "cli.ts");

async function failing(args: string[], env: Record<string, string> = {}) {
  try {
    await run(process.execPath, ["--import", "tsx", cli, ...args], {
      cwd: here,
      env: { ...process.env, SESSIONS_GATEWAY_STORE: "", ...env },
      timeout: 120_000,
    });
  } catch (error) {
    const { code, stderr } = error as { code: number; stderr: string };
    return { code, stderr: stderr.trim() };
  }
  throw new Error("expected the command to fail");
}

/** A port with nothing listening on it. */
function closedPort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer();
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

// Serving on a real Postgres is exercised by @sessions/store-postgres (its cluster test and `pnpm cluster`).
describe("serve --store", () => {
  it("refuses a store URL that is not Postgres, and --db together with --store, as usage errors", async () => {
    const mysql = await failing(["serve", "--port", "0", "--store", "mysql://x/y"]);
    expect(mysql.code).toBe(2);
    expect(mysql.stderr).toMatch(/^sessions-gateway: --store must be a postgres:\/\/ URL/);
    const both = await failing(["serve", "--port", "0", "--db", "/tmp/x.db", "--store", "postgres://h/db"]);
    expect(both.code).toBe(2);
    expect(both.stderr).toMatch(/--db and --store name two different stores/);
    const env = await failing(["serve", "--port", "0"], { SESSIONS_GATEWAY_STORE: "sqlite:x.db" });
    expect(env.stderr).toMatch(/^sessions-gateway: SESSIONS_GATEWAY_STORE must be a postgres:\/\/ URL/);
  });

  it("fails in one line, without the password, when the Postgres server cannot be reached", async () => {
    const port = await closedPort();
    const result = await failing(["serve", "--port", "0"], {
      SESSIONS_GATEWAY_STORE: `postgres://gw:hunter2-secret@127.0.0.1:${port}/sessions`,
    });
    expect(result.code).toBe(1);
    expect(result.stderr.split("\n")).toHaveLength(1);
    expect(result.stderr).toMatch(
      new RegExp(`^sessions-gateway: Postgres at 127\\.0\\.0\\.1:${port}/sessions`),
    );
    expect(result.stderr).not.toContain("hunter2-secret");
  });
});
