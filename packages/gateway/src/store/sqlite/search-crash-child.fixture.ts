// A store process for the search index's crash test: it appends messages to ten sessions as fast as it can (its
// indexer thread taking them up meanwhile) and prints the count committed every 100; the test kills it with SIGKILL.
// Run: node --import tsx search-crash-child.fixture.ts <db-path>
import { entry } from "../contract-records.js";
import { createSqliteStore } from "../sqlite.js";

const store = createSqliteStore({ path: process.argv[2] as string });
for (let s = 0; s < 10; s++) await store.putEntry(entry(`agent:main:s${s}`, s + 1));
for (let i = 1; ; i++) {
  await store.appendMessage(`agent:main:s${i % 10}`, { role: "user", content: `alpha message ${i}`, ts: i });
  if (i % 100 === 0) process.stdout.write(`${JSON.stringify({ committed: i })}\n`);
}
