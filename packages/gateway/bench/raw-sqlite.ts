// The floor under the runs bench: the SQL statements a scripted run makes, run on bare better-sqlite3 with the
// store's schema, pragmas and background checkpointer, grouped as the store groups them, with no gateway around.
import { randomUUID } from "node:crypto";
import { join } from "node:path";
import Database from "better-sqlite3";
import {
  createSqliteStore,
  type Gateway,
  type RunRecord,
  type StoredEntry,
  type StoredMessage,
} from "../src/index.js";
import { startCheckpointer } from "../src/store/sqlite/checkpointer.js";
import { prepareStatements } from "../src/store/sqlite/statements.js";
import { type Rate, rate, start } from "./rate.js";

/** Records as the gateway wrote them in the bench, to write rows of the same size. */
export interface RunTemplates {
  entry: StoredEntry;
  run: RunRecord;
  input: StoredMessage;
  reply: StoredMessage;
}

/** The records a finished run left (its entry, run, input and reply), as templates for the floor's rows. */
export async function recordedTemplates(gateway: Gateway, runId: string): Promise<RunTemplates> {
  await gateway.agentWait({ runId, timeoutMs: 60_000 });
  const run = await gateway.store.getRun(runId);
  const entry = run && (await gateway.store.getEntry(run.sessionKey));
  const [input, reply] = run ? await gateway.store.readMessages(run.sessionKey, { limit: 2 }) : [];
  if (!run || !entry || !input || !reply) throw new Error("bench: the template run was not recorded");
  return { entry, run, input, reply };
}

/**
 * `runs` runs over `sessions` sessions. Each group of `perTransaction` runs is two transactions (one run per session
 * by default, as a busy store's group commit makes them): the starts (idempotency key lookup, session touch, input
 * message, run insert), then the ends (reply message, session touch, fenced run end). SQLite time alone: what is
 * left of 100 µs per run (10,000 runs/s) is all the gateway may spend.
 */
export async function rawSqliteRuns(
  dir: string,
  templates: RunTemplates,
  runs: number,
  sessions: number,
  /** Runs per transaction: one per session by default (a busy store's group commit); 1 for two per run. */
  perTransaction = sessions,
): Promise<Rate> {
  const file = join(dir, "raw.db");
  // The store creates the schema, then lets go of the file.
  await createSqliteStore({ path: file }).close();
  const db = new Database(file);
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = NORMAL");
  db.pragma(`journal_size_limit = ${64 * 1024 * 1024}`);
  db.pragma("wal_autocheckpoint = 4096");
  const s = prepareStatements(db);
  const checkpointer = startCheckpointer(file, "NORMAL");
  const keys = Array.from({ length: sessions }, (_, i) => `agent:main:raw-${i}`);
  // The last sequence number of each session's transcript (the store keeps these in memory too).
  const seqs = new Int32Array(sessions);
  const nextSeq = (i: number) => {
    seqs[i] = (seqs[i] ?? 0) + 1;
    return seqs[i] as number;
  };
  for (const key of keys) {
    const entry = { ...templates.entry, key, sessionId: randomUUID() };
    s.putEntry.run({
      key,
      sessionId: entry.sessionId,
      agentId: entry.agentId,
      kind: entry.kind,
      updatedAt: entry.updatedAt,
      spawnedBy: null,
      label: null,
      displayName: null,
      archived: 0,
      data: JSON.stringify(entry),
    });
  }
  const touch = (key: string) => {
    const entry = { ...templates.entry, key, updatedAt: Date.now() };
    s.touchEntry.run(entry.updatedAt, JSON.stringify(entry), key);
  };
  const runRow = (run: RunRecord) => ({
    runId: run.runId,
    status: run.status,
    idempotencyKey: run.idempotencyKey ?? null,
    followUpPending: 0,
    owner: run.owner ?? null,
    rootRunId: run.rootRunId ?? null,
    data: JSON.stringify(run),
  });
  const started = start();
  for (let done = 0; done < runs; done += perTransaction) {
    // The sessions of this group's runs, by index, taking turns.
    const group = Array.from(
      { length: Math.min(perTransaction, runs - done) },
      (_, j) => (done + j) % sessions,
    );
    const opened: { run: RunRecord; i: number }[] = [];
    s.begin.run();
    group.forEach((i) => {
      const key = keys[i] as string;
      const run: RunRecord = {
        ...templates.run,
        runId: randomUUID(),
        sessionKey: key,
        idempotencyKey: randomUUID(),
        status: "running",
      };
      s.runByKey.get(run.idempotencyKey);
      touch(key);
      const seq = nextSeq(i);
      s.insertMessage.run(key, seq, JSON.stringify({ ...templates.input, seq }));
      s.putRun.run(runRow({ ...run, inputSeq: seq }));
      opened.push({ run, i });
    });
    s.commit.run();
    checkpointer?.kick();
    s.begin.run();
    opened.forEach(({ run, i }) => {
      const seq = nextSeq(i);
      s.insertMessage.run(run.sessionKey, seq, JSON.stringify({ ...templates.reply, seq, runId: run.runId }));
      touch(run.sessionKey);
      s.endRun.run({ ...runRow({ ...run, status: "ok" }), expectedOwner: run.owner ?? null });
    });
    s.commit.run();
    checkpointer?.kick();
  }
  const measured = rate(runs, started);
  await checkpointer?.stop();
  db.close();
  return measured;
}
