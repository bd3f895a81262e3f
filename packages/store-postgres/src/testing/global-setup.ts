import type { TestProject } from "vitest/node";
import { type LocalPostgres, startLocalPostgres } from "./local-postgres.js";

declare module "vitest" {
  export interface ProvidedContext {
    /** A real Postgres for this test run (embedded, or `SESSIONS_TEST_DATABASE_URL` / `DATABASE_URL`). */
    postgresUrl: string;
  }
}

let server: LocalPostgres | undefined;
// A database of this run's own: on a configured server, tests never touch other data and leave nothing behind.
const database = `sessions_test_${process.pid}`;

/** One real Postgres for the whole run; each test file works in schemas (or databases) of its own. */
export async function setup(project: TestProject): Promise<void> {
  const lines: string[] = [];
  try {
    server = await startLocalPostgres({ log: (line) => lines.push(line) });
  } catch (error) {
    process.stderr.write(lines.join(""));
    throw error;
  }
  project.provide("postgresUrl", await server.createDatabase(database));
}

export async function teardown(): Promise<void> {
  await server?.dropDatabase(database).catch(() => undefined);
  await server?.stop();
}
