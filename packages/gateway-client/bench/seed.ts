// Seed data for the wire bench: the gateway bench's own mix (entries, main sessions, transcript messages), and
// better-sqlite3 loaded from the gateway's dependencies for writing a long transcript in one transaction.
import { createRequire } from "node:module";
import type { BareDatabase } from "../../gateway/bench/seed.js";
import { localRequire } from "./harness.js";

export * from "../../gateway/bench/seed.js";

type BareDatabaseConstructor = new (path: string) => BareDatabase & { close(): void };

/** better-sqlite3 is a dependency of @sessions/gateway, not of this package: load it from the gateway's folder. */
export function loadBetterSqlite(): BareDatabaseConstructor {
  const gatewayEntry = localRequire.resolve("@sessions/gateway");
  return createRequire(gatewayEntry)("better-sqlite3") as BareDatabaseConstructor;
}
