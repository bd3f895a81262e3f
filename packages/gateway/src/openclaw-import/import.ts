import { existsSync, statSync } from "node:fs";
import { DEFAULT_MAIN_KEY, SessionsError } from "@sessions/core";
import type { SessionStore } from "../store/types.js";
import { importedKey, type MappedSession, mapSession } from "./map.js";
import { findJsonStores, readJsonStore } from "./read-json-layout.js";
import { findAgentDatabases, readAgentDatabase } from "./read-sqlite-layout.js";
import {
  describeError,
  type OpenClawImportProblem,
  type OpenClawLayout,
  type OpenClawSourceSession,
} from "./source.js";

export type { OpenClawImportProblem, OpenClawLayout } from "./source.js";

/** Options of {@link importOpenClaw}. */
export interface OpenClawImportOptions {
  /** OpenClaw's state directory (`~/.openclaw`, or `$OPENCLAW_STATE_DIR`): the one holding `agents/`. */
  stateDir: string;
  /** Where the sessions go. Optional for a dry run, which then reports against an empty store. */
  store?: SessionStore | undefined;
  /** Report what would be imported; write nothing. */
  dryRun?: boolean | undefined;
  /** The gateway's `session.mainKey` (default `main`): bare `main` keys map to `agent:<id>:<mainKey>`. */
  mainKey?: string | undefined;
}

/**
 * What happened to one OpenClaw session: `imported` (or `would_import` in a dry run); `already_imported` (the store
 * has this key with the same sessionId: nothing written); `conflict` (the store has this key for another session:
 * not overwritten); `duplicate` (another OpenClaw entry maps to the same key and is newer: that one is used).
 */
export type OpenClawSessionOutcome =
  | "imported"
  | "would_import"
  | "already_imported"
  | "conflict"
  | "duplicate";

/** One session of an import report. */
export interface OpenClawImportedSession {
  /** The key in our store. */
  key: string;
  /** The key as OpenClaw stored it. */
  sourceKey: string;
  sessionId: string;
  layout: OpenClawLayout;
  /** Where it was read (file, and row or entry). */
  source: string;
  outcome: OpenClawSessionOutcome;
  /** Transcript messages imported (or that would be). */
  messages: number;
  /** Routes recorded from its delivery context and last route. */
  routes: number;
  /** Transcript messages of kinds our transcripts do not hold (OpenClaw's `custom` display entries). */
  skippedMessages: number;
  /** Other OpenClaw keys of the same session, merged into this one (early OpenClaw's legacy `main`). */
  merged?: string[] | undefined;
  /** Why it was not imported, or what is missing (a transcript file that was not found). */
  note?: string | undefined;
}

/** What {@link importOpenClaw} did: every session it found, what it could not read, and the totals. */
export interface OpenClawImportReport {
  stateDir: string;
  dryRun: boolean;
  /** The layouts found: `sqlite` (OpenClaw 2026.9) and/or `json` (sessions.json + JSONL, early 2026). */
  layouts: OpenClawLayout[];
  sessions: OpenClawImportedSession[];
  /** Entries that could not be read, or written: reported, skipped, nothing of them written. */
  problems: OpenClawImportProblem[];
  totals: {
    /** Sessions written (a dry run: that would be). */
    imported: number;
    alreadyImported: number;
    conflicts: number;
    /** Entries skipped because they could not be read or written (see `problems`). */
    unreadable: number;
    /** Messages written (a dry run: that would be). */
    messages: number;
  };
}

/** Newest entry first for a key two OpenClaw entries share (early versions kept `main` beside `agent:main:main`). */
const updatedAtOf = (session: OpenClawSourceSession) =>
  typeof session.entry.updatedAt === "number" ? session.entry.updatedAt : 0;

/**
 * Imports an OpenClaw state directory into a session store: sessions with their keys, labels, overrides (model,
 * thinking, verbose, send policy), routes and spawned-by links, and transcripts in order. Reads OpenClaw 2026.9's
 * per-agent SQLite databases and early 2026's `sessions.json` + JSONL transcripts, never writing to them.
 *
 * Each session is written as one store transaction: all of it or nothing. A second import of the same directory
 * writes nothing (sessions already there with the same sessionId are `already_imported`); a key the store has for
 * another session is a `conflict` and left alone. An entry that cannot be read is reported in `problems` and
 * skipped.
 *
 * @throws SessionsError `invalid_params` (field `stateDir`) when the directory does not exist or holds no OpenClaw
 * sessions, (field `store`) when there is no store and it is not a dry run.
 *
 * @example
 * ```ts
 * import { createSqliteStore, importOpenClaw } from "@sessions/gateway";
 *
 * const store = createSqliteStore({ path: ".sessions/gateway.db" });
 * const report = await importOpenClaw({ stateDir: `${process.env.HOME}/.openclaw`, store });
 * console.log(report.totals, report.problems);
 * await store.close();
 * ```
 */
export async function importOpenClaw(options: OpenClawImportOptions): Promise<OpenClawImportReport> {
  const { stateDir, store } = options;
  const dryRun = options.dryRun === true;
  const mainKey = options.mainKey ?? DEFAULT_MAIN_KEY;
  if (!existsSync(stateDir) || !statSync(stateDir).isDirectory()) {
    throw new SessionsError("invalid_params", `OpenClaw state directory ${stateDir} does not exist`, {
      field: "stateDir",
    });
  }
  if (store === undefined && !dryRun) {
    throw new SessionsError("invalid_params", "importOpenClaw needs a store (or dryRun)", { field: "store" });
  }
  const databases = findAgentDatabases(stateDir);
  const jsonStores = findJsonStores(stateDir);
  if (databases.length === 0 && jsonStores.length === 0) {
    throw new SessionsError(
      "invalid_params",
      `${stateDir} holds no OpenClaw sessions (no agents/<id>/agent/openclaw-agent.sqlite or agents/<id>/sessions/sessions.json)`,
      { field: "stateDir" },
    );
  }
  const layouts: OpenClawLayout[] = [];
  if (databases.length > 0) layouts.push("sqlite");
  if (jsonStores.length > 0) layouts.push("json");
  const found = [
    ...databases.map((d) => readAgentDatabase(d.agentId, d.file)),
    ...jsonStores.map((s) => readJsonStore(s.agentId, s.file)),
  ];
  const problems = found.flatMap((f) => f.problems);
  const report: OpenClawImportReport = {
    stateDir,
    dryRun,
    layouts,
    sessions: [],
    problems,
    totals: { imported: 0, alreadyImported: 0, conflicts: 0, unreadable: 0, messages: 0 },
  };

  // Entries that map to the same key: the newest is imported, the others reported as duplicates.
  const byKey = new Map<string, OpenClawSourceSession[]>();
  for (const session of found.flatMap((f) => f.sessions)) {
    let key: string;
    try {
      key = importedKey(session, mainKey);
    } catch (error) {
      problems.push({ path: session.source, key: session.key, reason: describeError(error) });
      continue;
    }
    const list = byKey.get(key) ?? [];
    list.push(session);
    byKey.set(key, list);
  }

  for (const [key, candidates] of byKey) {
    const { chosen, merged, others } = pickSession(candidates);
    // What could not be imported is reported for every entry it stood for, the merged ones too.
    const unreadable = (reason: string) => {
      for (const entry of [chosen, ...merged]) problems.push({ path: entry.source, key: entry.key, reason });
    };
    const duplicates = () => {
      for (const other of others) {
        report.sessions.push({
          key,
          sourceKey: other.key,
          sessionId: String(other.entry.sessionId),
          layout: other.layout,
          source: other.source,
          outcome: "duplicate",
          messages: 0,
          routes: 0,
          skippedMessages: 0,
          note: `${chosen.key} maps to the same key and is newer: that one is used`,
        });
      }
    };
    let mapped: MappedSession;
    try {
      mapped = mapSession(chosen, { mainKey });
    } catch (error) {
      unreadable(describeError(error));
      duplicates();
      continue;
    }
    const row: OpenClawImportedSession = {
      key,
      sourceKey: chosen.key,
      sessionId: mapped.entry.sessionId,
      layout: chosen.layout,
      source: chosen.source,
      outcome: dryRun ? "would_import" : "imported",
      messages: mapped.messages.length,
      routes: mapped.routes.length,
      skippedMessages: mapped.skippedMessages,
      ...(chosen.missingTranscript === undefined
        ? {}
        : {
            note: `transcript ${chosen.missingTranscript} not found: the session is imported without messages`,
          }),
    };
    if (merged.length > 0) row.merged = merged.map((m) => m.key);
    try {
      row.outcome = await writeSession(store, mapped, dryRun);
    } catch (error) {
      unreadable(`cannot be written: ${describeError(error)}`);
      duplicates();
      continue;
    }
    if (row.outcome === "conflict") {
      row.note = `the store already has ${key} for another session: left as it is`;
    }
    report.sessions.push(row);
    duplicates();
  }

  for (const session of report.sessions) {
    if (session.outcome === "imported" || session.outcome === "would_import") {
      report.totals.imported += 1;
      report.totals.messages += session.messages;
    } else if (session.outcome === "already_imported") report.totals.alreadyImported += 1;
    else if (session.outcome === "conflict") report.totals.conflicts += 1;
  }
  report.totals.unreadable = problems.length;
  return report;
}

/**
 * One session for a key several OpenClaw entries map to. Early OpenClaw kept a legacy `main` beside
 * `agent:main:main` for the same session, each with some of its fields (as OpenClaw's own list merged them):
 * entries of one sessionId merge, newer fields over older, with the transcript of whichever has one. Of different
 * sessions, the newest is used and the others are reported as duplicates.
 */
function pickSession(candidates: OpenClawSourceSession[]): {
  chosen: OpenClawSourceSession;
  merged: OpenClawSourceSession[];
  others: OpenClawSourceSession[];
} {
  const newestFirst = [...candidates].sort((a, b) => updatedAtOf(b) - updatedAtOf(a));
  const newest = newestFirst[0] as OpenClawSourceSession;
  const same = newestFirst.filter((c) => c.entry.sessionId === newest.entry.sessionId);
  const others = newestFirst.filter((c) => c.entry.sessionId !== newest.entry.sessionId);
  const withTranscript = same.find((c) => c.missingTranscript === undefined) ?? newest;
  const entry = Object.assign({}, ...[...same].reverse().map((c) => c.entry)) as Record<string, unknown>;
  const { missingTranscript: _missing, ...rest } = withTranscript;
  const chosen: OpenClawSourceSession = {
    ...rest,
    key: newest.key,
    entry,
    ...(withTranscript.missingTranscript === undefined
      ? {}
      : { missingTranscript: withTranscript.missingTranscript }),
  };
  // The canonical key's name stays the source key when one of them is already scoped.
  const scoped = same.find((c) => c.key.startsWith("agent:"));
  if (scoped !== undefined) chosen.key = scoped.key;
  return { chosen, merged: same.filter((c) => c.key !== chosen.key), others };
}

/** Writes one session as one transaction, unless the store has its key already. */
async function writeSession(
  store: SessionStore | undefined,
  mapped: MappedSession,
  dryRun: boolean,
): Promise<OpenClawSessionOutcome> {
  const existingOutcome = (
    existing: { sessionId: string } | undefined,
  ): OpenClawSessionOutcome | undefined =>
    existing === undefined
      ? undefined
      : existing.sessionId === mapped.entry.sessionId
        ? "already_imported"
        : "conflict";
  if (store === undefined) return "would_import";
  if (dryRun) return existingOutcome(await store.getEntry(mapped.entry.key)) ?? "would_import";
  return store.transaction(async (tx) => {
    const outcome = existingOutcome(await tx.getEntry(mapped.entry.key));
    if (outcome !== undefined) return outcome;
    await tx.putEntry(mapped.entry);
    for (const message of mapped.messages) await tx.appendMessage(mapped.entry.key, message);
    for (const route of mapped.routes) await tx.putRoute(route);
    return "imported";
  });
}
