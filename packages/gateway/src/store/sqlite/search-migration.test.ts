import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { entry } from "../contract-records.js";
import { createSqliteStore } from "../sqlite.js";
import { MIGRATIONS } from "./schema.js";

const dir = mkdtempSync(join(tmpdir(), "sessions-search-migration-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A file as a gateway at schema version 3 left it: rows written in that version's format, no search index. */
function version3File(path: string): void {
  const db = new Database(path);
  db.pragma("journal_mode = WAL");
  for (const migration of MIGRATIONS.filter((m) => m.version <= 3)) migration.up(db);
  db.prepare("INSERT INTO meta (key, value) VALUES ('schema_version', '3')").run();
  const putEntry =
    db.prepare(`INSERT INTO entries (key, session_id, agent_id, kind, updated_at, label, archived, data)
    VALUES (?, ?, ?, ?, ?, ?, 0, ?)`);
  const append = db.prepare("INSERT INTO messages (session_key, seq, data) VALUES (?, ?, ?)");
  const sessions = [
    entry("agent:main:discord:group:g1", 30, { kind: "group", label: "Launch team" }),
    entry("agent:main:old", 20),
  ];
  for (const e of sessions)
    putEntry.run(e.key, e.sessionId, e.agentId, e.kind, e.updatedAt, e.label ?? null, JSON.stringify(e));
  const messages: [string, object][] = [
    ["agent:main:discord:group:g1", { role: "user", content: "when is the rocket launch?", ts: 1 }],
    ["agent:main:discord:group:g1", { role: "toolResult", content: "rocket telemetry", ts: 2 }],
    [
      "agent:main:discord:group:g1",
      { role: "assistant", content: [{ type: "text", text: "The rocket flies at noon" }], ts: 3 },
    ],
    ["agent:main:old", { role: "user", content: "an old question about rockets", ts: 4 }],
    // A transcript whose entry is gone (deleted with `transcript: false`).
    ["agent:main:gone", { role: "user", content: "rocket", ts: 5 }],
  ];
  const seqs = new Map<string, number>();
  for (const [key, message] of messages) {
    const seq = (seqs.get(key) ?? 0) + 1;
    seqs.set(key, seq);
    append.run(key, seq, JSON.stringify({ ...message, seq }));
  }
  db.close();
}

describe("SQLite search index migration (schema version 4)", () => {
  it("indexes the transcripts and sessions a version 3 file already holds, then every new write", async () => {
    const path = join(dir, "v3.db");
    version3File(path);
    const store = createSqliteStore({ path });
    const page = await store.searchSessions({ text: "rocket", limit: 10, messagesPerSession: 5 });
    expect(page.hits.map((h) => [h.entry.key, h.matchedMessages, h.messages.map((m) => m.seq)])).toEqual([
      ["agent:main:discord:group:g1", 2, [3, 1]],
      ["agent:main:old", 1, [1]],
    ]);
    expect((await store.searchSessions({ text: "launch team", limit: 10 })).hits[0]).toMatchObject({
      entry: { key: "agent:main:discord:group:g1" },
      score: expect.any(Number),
    });
    expect((await store.searchSessions({ text: "telemetry", limit: 10 })).hits).toEqual([]);

    await store.appendMessage("agent:main:old", { role: "user", content: "a new rocket", ts: 6 });
    expect(
      (await store.searchSessions({ text: "new rocket", limit: 10 })).hits.map((h) => h.messages[0]?.seq),
    ).toEqual([2]);
    await store.deleteEntry("agent:main:discord:group:g1");
    expect((await store.searchSessions({ text: "rocket", limit: 10 })).hits.map((h) => h.entry.key)).toEqual([
      "agent:main:old",
    ]);
    await store.close();

    // Opened again: nothing to migrate, the same answers.
    const again = createSqliteStore({ path });
    expect((await again.searchSessions({ text: "rocket", limit: 10 })).hits).toHaveLength(1);
    await again.putEntry(entry("agent:main:gone", 30));
    expect((await again.searchSessions({ text: "rocket", limit: 10 })).hits).toHaveLength(2);
    await again.close();
  });
});
