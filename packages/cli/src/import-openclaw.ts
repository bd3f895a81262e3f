import { existsSync } from "node:fs";
import { DEFAULT_MAIN_KEY } from "@sessions/core";
import { importOpenClaw, type OpenClawImportReport, type SessionStore } from "@sessions/gateway";
import { type OptionValues, text, usageError } from "./args.js";
import { openStore, readConfigFile } from "./serve.js";
import type { CliIo } from "./sessions.js";
import { IMPORT_OPENCLAW } from "./spec.js";

const OUTCOME_LABEL = {
  imported: "imported",
  would_import: "would import",
  already_imported: "already imported",
  conflict: "conflict",
  duplicate: "duplicate",
} as const;

/** The report as lines: one per session, one per unreadable entry, then the totals. */
function describeReport(report: OpenClawImportReport): string[] {
  const lines = [
    `OpenClaw state ${report.stateDir} (${report.layouts.join(" + ")})${report.dryRun ? ", dry run" : ""}`,
  ];
  for (const s of report.sessions) {
    const counts =
      s.outcome === "imported" || s.outcome === "would_import" ? ` (${s.messages} messages)` : "";
    lines.push(
      `  ${OUTCOME_LABEL[s.outcome]}: ${s.key}${counts}${s.note === undefined ? "" : ` — ${s.note}`}`,
    );
  }
  for (const p of report.problems) lines.push(`  skipped: ${p.path}: ${p.reason}`);
  const t = report.totals;
  lines.push(
    `${report.dryRun ? "would import" : "imported"} ${t.imported} sessions (${t.messages} messages); already imported ${t.alreadyImported}; conflicts ${t.conflicts}; unreadable ${t.unreadable}`,
  );
  return lines;
}

/**
 * `sessions-gateway import-openclaw <stateDir>`: returns the exit code, 0 when every entry was imported or already
 * there, 1 when one was skipped (unreadable, or a conflict).
 */
export async function importOpenClawCommand(
  args: string[],
  options: OptionValues,
  io: CliIo,
): Promise<number> {
  const stateDir = args[0];
  if (stateDir === undefined) throw usageError("missing <stateDir>", IMPORT_OPENCLAW.name, "stateDir");
  const dryRun = options["dry-run"] === true;
  const configPath = text(options.config);
  const { config, server }: ReturnType<typeof readConfigFile> =
    configPath === undefined ? { config: {}, server: {} } : readConfigFile(configPath);
  const session = (config as { session?: { mainKey?: unknown } }).session;
  const mainKey = typeof session?.mainKey === "string" ? session.mainKey : DEFAULT_MAIN_KEY;
  // A dry run against a SQLite file that does not exist yet reports against an empty store and creates nothing.
  const sqlitePath = text(options.db) ?? server.db ?? ".sessions/gateway.db";
  const postgres = text(options.store) ?? (process.env.SESSIONS_GATEWAY_STORE || undefined) ?? server.store;
  let store: SessionStore | undefined;
  if (!dryRun || postgres !== undefined || existsSync(sqlitePath)) {
    store = await openStore(options, server, IMPORT_OPENCLAW.name);
  }
  try {
    const report = await importOpenClaw({ stateDir, store, dryRun, mainKey });
    if (options.json === true) io.out(JSON.stringify(report, null, 2));
    else for (const line of describeReport(report)) io.out(line);
    return report.problems.length > 0 || report.totals.conflicts > 0 ? 1 : 0;
  } finally {
    await store?.close();
  }
}
