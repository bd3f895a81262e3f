// Holds a SQLite store open for the ownership test until it is killed.
// Run: node --import tsx owner-child.fixture.ts <db-path>
import { createSqliteStore } from "../sqlite.js";

const store = createSqliteStore({ path: process.argv[2] as string });
await store.putEntry({
  key: "agent:main:main",
  sessionId: "child",
  agentId: "main",
  kind: "main",
  createdAt: 1,
  updatedAt: 1,
});
process.stdout.write(`${JSON.stringify({ ready: true, pid: process.pid })}\n`);
// The store's heartbeat is unref'd by design; this keeps the process alive until the test kills it.
setInterval(() => {}, 60_000);
