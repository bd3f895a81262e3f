import { appendFileSync, cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import Database from "better-sqlite3";
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import { createGateway } from "../create-gateway.js";
import { createScriptedRunner } from "../runner/scripted.js";
import { createMemoryStore } from "../store/memory.js";
import { createSqliteStore } from "../store/sqlite.js";
import { type SessionStore, STORE_WRITES, type StoreOps } from "../store/types.js";
import { importOpenClaw } from "./import.js";

/**
 * The import of state directories written by the real OpenClaw (2026.9.6: SQLite; 2026.1.30: sessions.json + JSONL),
 * recorded by apps/interop-openclaw/record-openclaw.mjs with what OpenClaw answered for them.
 */
const fixtures = join(
  dirname(createRequire(import.meta.url).resolve("@sessions/testing/package.json")),
  "fixtures/openclaw",
);
type Row = Record<string, unknown>;
interface Answers {
  results: Record<string, { ok: boolean; payload?: Row }>;
  history: Record<string, { ok: boolean; payload: { messages: Row[] } }>;
}
const answersOf = (version: string) =>
  JSON.parse(readFileSync(join(fixtures, version, "answers.json"), "utf8")) as Answers;

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn();
});
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "openclaw-import-"));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}
function sqliteStore(): SessionStore {
  const store = createSqliteStore({ path: join(tempDir(), "gateway.db") });
  cleanups.push(() => store.close());
  return store;
}
/** A copy of a fixture's state directory, to corrupt. */
function stateCopy(version: string): string {
  const dir = join(tempDir(), "state");
  cpSync(join(fixtures, version, "state"), dir, { recursive: true });
  return dir;
}

/** Everything the import writes, in a comparable form. */
async function dump(store: SessionStore) {
  const entries = await store.listEntries({ limit: 1000, includeArchived: true });
  return Promise.all(
    entries.map(async (entry) => ({
      entry,
      messages: await store.readMessages(entry.key, { limit: 1000 }),
      routes: await store.listRoutes(entry.key),
    })),
  );
}

/** The store, counting every write made through it or its transactions. */
function countingWrites(store: SessionStore): { store: SessionStore; writes: string[] } {
  const writes: string[] = [];
  const wrap = <T extends object>(target: T): T =>
    new Proxy(target, {
      get(t, prop, receiver) {
        const value = Reflect.get(t, prop, receiver);
        if (typeof value !== "function") return value;
        if (prop === "transaction") {
          return (work: (tx: StoreOps) => Promise<unknown>) =>
            (t as SessionStore).transaction((tx) => work(wrap(tx)));
        }
        return (...args: unknown[]) => {
          if ((STORE_WRITES as readonly string[]).includes(String(prop))) writes.push(String(prop));
          return (value as (...a: unknown[]) => unknown).apply(t, args);
        };
      },
    });
  return { store: wrap(store), writes };
}

/** Fields both sessions.list rows carry, compared as they are (the rest: see docs/migrating-from-openclaw.md). */
const SHARED_ROW_FIELDS = [
  "kind",
  "sessionId",
  "updatedAt",
  "label",
  "chatType",
  "sendPolicy",
  "thinkingLevel",
  "spawnedBy",
  "systemSent",
  "abortedLastRun",
  "inputTokens",
  "outputTokens",
  "totalTokens",
  "contextTokens",
  "lastChannel",
  "lastTo",
  "deliveryContext",
] as const;

/** A history message as both answers carry it: who, what, when, and tool identity. */
const comparable = (m: Row) => ({
  role: m.role,
  content: m.content,
  timestamp: m.timestamp,
  ...(m.toolCallId === undefined ? {} : { toolCallId: m.toolCallId, toolName: m.toolName }),
});

describe.each([
  { version: "2026.9.6", layout: "sqlite", sessions: 4, messages: 19 },
  { version: "2026.1.30", layout: "json", sessions: 4, messages: 20 },
])("importOpenClaw: OpenClaw $version ($layout)", ({ version, layout, sessions, messages }) => {
  const stateDir = join(fixtures, version, "state");
  const answers = answersOf(version);

  it("imports every session and answers sessions.list and chat.history as OpenClaw did", async () => {
    const store = sqliteStore();
    const report = await importOpenClaw({ stateDir, store });
    expect(report.layouts).toEqual([layout]);
    expect(report.problems).toEqual([]);
    expect(report.totals).toEqual({
      imported: sessions,
      alreadyImported: 0,
      conflicts: 0,
      unreadable: 0,
      messages,
    });

    const gateway = createGateway({ store, runner: createScriptedRunner({ agents: {} }) });
    cleanups.push(() => gateway.close({ drainMs: 0 }));
    const list = (await gateway.call("sessions.list", {})) as { sessions: Row[] };
    const theirs = answers.results.list?.payload?.sessions as Row[];
    expect(list.sessions.map((r) => r.key)).toEqual(theirs.map((r) => r.key));
    for (const ours of list.sessions) {
      const row = theirs.find((r) => r.key === ours.key) as Row;
      for (const field of SHARED_ROW_FIELDS) {
        if (row[field] !== undefined) expect(ours[field], `${ours.key} ${field}`).toEqual(row[field]);
      }
      // The model a person chose: OpenClaw lists it split (provider, model), ours keeps `provider/model`.
      if (row.modelOverrideSource === "user") expect(ours.model).toBe(`${row.modelProvider}/${row.model}`);
    }

    for (const [key, recorded] of Object.entries(answers.history)) {
      const history = (await gateway.call("chat.history", { sessionKey: key })) as { messages: Row[] };
      // OpenClaw's `custom` entries are display views (a nested tool call): not a transcript message of ours.
      const expected = recorded.payload.messages.filter((m) => m.role !== "custom").map(comparable);
      // Early OpenClaw filed the main transcript under its legacy `main` entry and answered agent:main:main empty.
      if (expected.length === 0 && key === "agent:main:main") {
        expect(history.messages.length).toBeGreaterThan(0);
        continue;
      }
      expect(history.messages.map(comparable), key).toEqual(expected);
      expect(history.messages.map((m) => m.seq)).toEqual(expected.map((_, i) => i + 1));
    }
  });

  it("links spawned sessions to their parent and keeps the overrides set with sessions.patch", async () => {
    const store = sqliteStore();
    await importOpenClaw({ stateDir, store });
    const entries = await store.listEntries({ limit: 100 });
    const child = entries.find((e) => e.key.includes(":subagent:"));
    expect(child).toMatchObject({ spawnedBy: "agent:main:main", label: "researcher", kind: "other" });
    expect(await store.getEntry("agent:main:main")).toMatchObject({
      label: "home",
      model: "fake/fake-2",
      thinkingLevel: "high",
      kind: "main",
    });
    expect(await store.getEntry("agent:main:discord:group:987654321")).toMatchObject({
      sendPolicy: "deny",
      kind: "group",
      channel: "discord",
    });
  });

  it("changes nothing when the same directory is imported again", async () => {
    const base = sqliteStore();
    await importOpenClaw({ stateDir, store: base });
    const before = await dump(base);
    const { store, writes } = countingWrites(base);
    const again = await importOpenClaw({ stateDir, store });
    expect(again.totals).toMatchObject({ imported: 0, alreadyImported: sessions, messages: 0 });
    expect(again.sessions.map((s) => s.outcome)).toEqual(again.sessions.map(() => "already_imported"));
    expect(writes).toEqual([]);
    expect(await dump(base)).toEqual(before);
  });

  it("writes nothing on a dry run, and reports what it would import", async () => {
    const base = sqliteStore();
    const { store, writes } = countingWrites(base);
    const report = await importOpenClaw({ stateDir, store, dryRun: true });
    expect(report.totals).toMatchObject({ imported: sessions, messages });
    expect(report.sessions.every((s) => s.outcome === "would_import")).toBe(true);
    expect(writes).toEqual([]);
    expect(await base.countEntries()).toBe(0);
    // Without a store, a dry run reports against an empty one.
    expect((await importOpenClaw({ stateDir, dryRun: true })).totals).toEqual(report.totals);
  });
});

describe("importOpenClaw: entries it cannot read", () => {
  const sessionsDir = (state: string) => join(state, "agents/main/sessions");

  it("skips a session whose transcript has a truncated line, naming the file and line", async () => {
    const state = stateCopy("2026.1.30");
    const store = JSON.parse(readFileSync(join(sessionsDir(state), "sessions.json"), "utf8")) as Record<
      string,
      { sessionId: string }
    >;
    const ops = store["agent:main:ops"] as { sessionId: string };
    const file = join(sessionsDir(state), `${ops.sessionId}.jsonl`);
    const lines = readFileSync(file, "utf8").trimEnd().split("\n");
    appendFileSync(file, '{"type":"message","id":"x","message":{"role":"user","con');
    const target = sqliteStore();
    const report = await importOpenClaw({ stateDir: state, store: target });
    expect(report.problems).toEqual([
      {
        path: `${file}:${lines.length + 1}`,
        key: "agent:main:ops",
        reason: expect.stringContaining("not valid JSON"),
      },
    ]);
    expect(report.totals).toMatchObject({ imported: 3, unreadable: 1 });
    expect(await target.getEntry("agent:main:ops")).toBeUndefined();
    expect(await target.countMessages("agent:main:ops")).toBe(0);
    expect(await target.getEntry("agent:main:main")).toBeDefined();
  });

  it("reports a sessions.json that is not JSON and imports nothing of it", async () => {
    const state = stateCopy("2026.1.30");
    const file = join(sessionsDir(state), "sessions.json");
    writeFileSync(file, readFileSync(file, "utf8").slice(0, 200));
    const report = await importOpenClaw({ stateDir: state, store: sqliteStore() });
    expect(report.problems).toEqual([
      { path: file, reason: expect.stringContaining("cannot read the session store") },
    ]);
    expect(report.totals).toMatchObject({ imported: 0, unreadable: 1 });
  });

  it("skips unreadable rows of an agent database (bad entry JSON, bad event JSON) and imports the rest", async () => {
    const state = stateCopy("2026.9.6");
    const file = join(state, "agents/main/agent/openclaw-agent.sqlite");
    const db = new Database(file);
    db.prepare("update session_nodes set entry_json = '{\"sessionId\": ' where session_key = ?").run(
      "agent:main:ops",
    );
    const child = db
      .prepare("select current_session_id id from session_nodes where session_key like '%subagent%'")
      .get() as {
      id: string;
    };
    db.prepare(
      'update transcript_events set event_json = \'{"type":"message"\' where session_id = ? and seq = (select max(seq) from transcript_events where session_id = ? and event_json is not null)',
    ).run(child.id, child.id);
    db.close();
    const target = sqliteStore();
    const report = await importOpenClaw({ stateDir: state, store: target });
    expect(
      report.problems.map((p) => [p.key?.replace(/[0-9a-f-]{36}$/, "<id>"), p.reason.split(" (")[0]]),
    ).toEqual([
      ["agent:main:ops", "entry_json is not valid JSON"],
      ["agent:main:subagent:<id>", expect.stringMatching(/^event \d+ is not valid JSON$/)],
    ]);
    expect(report.problems[0]?.path).toBe(`${file} → session_nodes "agent:main:ops"`);
    expect(report.totals).toMatchObject({ imported: 2, unreadable: 2 });
    expect((await target.listEntries({ limit: 10 })).map((e) => e.key).sort()).toEqual([
      "agent:main:discord:group:987654321",
      "agent:main:main",
    ]);
  });

  it("never half-writes a session: a write that fails undoes the whole session", async () => {
    const base = sqliteStore();
    let appended = 0;
    const failing: SessionStore = new Proxy(base, {
      get(t, prop, receiver) {
        if (prop !== "transaction") return Reflect.get(t, prop, receiver);
        return (work: (tx: StoreOps) => Promise<unknown>) =>
          t.transaction((tx) =>
            work(
              new Proxy(tx, {
                get(ops, name, r) {
                  if (name !== "appendMessage") return Reflect.get(ops, name, r);
                  return (key: string, message: Parameters<StoreOps["appendMessage"]>[1]) => {
                    appended += 1;
                    if (key === "agent:main:main" && appended > 3) throw new Error("disk full");
                    return ops.appendMessage(key, message);
                  };
                },
              }),
            ),
          );
      },
    });
    const report = await importOpenClaw({ stateDir: join(fixtures, "2026.9.6", "state"), store: failing });
    expect(report.problems).toEqual([
      expect.objectContaining({ key: "agent:main:main", reason: "cannot be written: disk full" }),
    ]);
    expect(await base.getEntry("agent:main:main")).toBeUndefined();
    expect(await base.countMessages("agent:main:main")).toBe(0);
    expect(report.totals.imported).toBe(3);
  });

  it("leaves a session of the store alone when OpenClaw has another session under its key", async () => {
    const store = sqliteStore();
    await store.putEntry({
      key: "agent:main:ops",
      sessionId: "ours",
      agentId: "main",
      createdAt: 1,
      updatedAt: 1,
      kind: "other",
    });
    const report = await importOpenClaw({ stateDir: join(fixtures, "2026.9.6", "state"), store });
    expect(report.sessions.find((s) => s.key === "agent:main:ops")).toMatchObject({ outcome: "conflict" });
    expect(report.totals).toMatchObject({ imported: 3, conflicts: 1 });
    expect(await store.getEntry("agent:main:ops")).toMatchObject({ sessionId: "ours" });
  });

  it("refuses a directory without OpenClaw sessions, naming stateDir", async () => {
    await expect(importOpenClaw({ stateDir: tempDir(), dryRun: true })).rejects.toMatchObject({
      code: "invalid_params",
      field: "stateDir",
    });
    await expect(
      importOpenClaw({ stateDir: join(tempDir(), "missing"), dryRun: true }),
    ).rejects.toMatchObject({
      field: "stateDir",
    });
  });

  it("never throws on arbitrary sessions.json and transcript content: each entry is imported or reported", async () => {
    const value = fc.jsonValue({ maxDepth: 3 });
    const entry = fc.record(
      {
        sessionId: fc.oneof(fc.uuid(), value),
        updatedAt: fc.oneof(fc.integer({ min: 1, max: 2e12 }), value),
        label: value,
        chatType: fc.oneof(fc.constantFrom("direct", "group", "room", "channel"), value),
        spawnedBy: fc.oneof(fc.constantFrom("main", "agent:main:main", ""), value),
        deliveryContext: value,
        sendPolicy: value,
      },
      { requiredKeys: [] },
    );
    const line = fc.oneof(
      fc.string(),
      fc
        .record({
          type: fc.constantFrom("message", "custom", "session"),
          timestamp: fc.oneof(
            // Valid dates only: fast-check also makes invalid ones, whose toISOString throws in the generator.
            fc.date({ noInvalidDate: true }).map((d) => d.toISOString()),
            value,
          ),
          message: fc.record(
            {
              role: fc.oneof(fc.constantFrom("user", "assistant", "toolResult", "custom"), value),
              content: value,
              timestamp: value,
            },
            { requiredKeys: [] },
          ),
        })
        .map((e) => JSON.stringify(e)),
    );
    const keyArb = fc.oneof(
      fc.constantFrom("main", "agent:main:main", "agent:main:discord:group:1"),
      fc.string(),
    );
    await fc.assert(
      fc.asyncProperty(
        fc.dictionary(keyArb, entry, { maxKeys: 4 }),
        fc.array(line, { maxLength: 6 }),
        async (sessions, lines) => {
          const state = tempDir();
          const dir = join(state, "agents/main/sessions");
          cpSync(join(fixtures, "2026.1.30", "state", "agents/main/sessions"), dir, { recursive: true });
          writeFileSync(join(dir, "sessions.json"), JSON.stringify(sessions));
          for (const s of Object.values(sessions)) {
            if (typeof s.sessionId === "string" && /^[\w-]+$/.test(s.sessionId)) {
              writeFileSync(join(dir, `${s.sessionId}.jsonl`), lines.join("\n"));
            }
          }
          const store = createMemoryStore();
          const report = await importOpenClaw({ stateDir: state, store });
          const accounted = new Set([
            ...report.sessions.flatMap((s) => [s.sourceKey, ...(s.merged ?? [])]),
            ...report.problems.map((p) => p.key),
          ]);
          for (const key of Object.keys(sessions)) expect(accounted.has(key), key).toBe(true);
          for (const session of report.sessions.filter((s) => s.outcome === "imported")) {
            expect(await store.countMessages(session.key)).toBe(session.messages);
          }
          await store.close();
        },
      ),
      { numRuns: 40 },
    );
  });
});
