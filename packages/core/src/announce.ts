/** How a sub-agent's run ended, as the runtime saw it (`ok` is shown as `success`). */
export type RunOutcomeStatus = "ok" | "error" | "timeout" | "unknown";

/** The numbers of the announce's `Stats:` line; each is left out when unknown. */
export interface SubagentAnnounceStats {
  runtimeMs?: number | undefined;
  inputTokens?: number | undefined;
  outputTokens?: number | undefined;
  totalTokens?: number | undefined;
  costUsd?: number | undefined;
  sessionKey?: string | undefined;
  sessionId?: string | undefined;
  transcriptPath?: string | undefined;
}

/** Input of `formatSubagentAnnounce`. */
export interface FormatSubagentAnnounceInput {
  /** The runtime outcome; `Status:` comes from here, never from model text. */
  outcome: { status: RunOutcomeStatus; error?: string | undefined };
  /** The child's announce reply (or its final reply). */
  reply?: string | null | undefined;
  /** Used as `Result` when the reply is empty: the latest tool result of the child. */
  fallbackResult?: string | null | undefined;
  stats?: SubagentAnnounceStats | undefined;
}

const STATUS_WORD: Readonly<Record<RunOutcomeStatus, string>> = {
  ok: "success",
  error: "error",
  timeout: "timeout",
  unknown: "unknown",
};

function isCount(n: unknown): n is number {
  return typeof n === "number" && Number.isFinite(n) && n >= 0;
}

/**
 * `Xs`, `XmYs`, `XhYm`; `n/a` for zero (a run whose duration was never measured) and for anything that is not a
 * positive finite number.
 */
export function formatDuration(ms: unknown): string {
  if (!isCount(ms) || ms === 0) return "n/a";
  const totalSeconds = Math.round(ms / 1000);
  if (totalSeconds < 60) return `${totalSeconds}s`;
  const totalMinutes = Math.floor(totalSeconds / 60);
  if (totalMinutes < 60) return `${totalMinutes}m${totalSeconds % 60}s`;
  return `${Math.floor(totalMinutes / 60)}h${totalMinutes % 60}m`;
}

function scaled(n: number, unit: number, suffix: string): string {
  const value = Math.round((n / unit) * 10) / 10;
  return `${Number.isInteger(value) ? value.toFixed(0) : value.toFixed(1)}${suffix}`;
}

/** `950`, `1.2k`, `3.4m`; `n/a` for non-counts. */
export function formatTokenCount(n: unknown): string {
  if (!isCount(n)) return "n/a";
  const whole = Math.round(n);
  if (whole < 1000) return String(whole);
  if (Math.round(whole / 100) < 10_000) return scaled(whole, 1000, "k");
  return scaled(whole, 1_000_000, "m");
}

/** `$1.23` from one dollar up; below it up to four decimals (`$0.0123`, `$0.50`). `n/a` for non-amounts. */
export function formatUsd(amount: unknown): string {
  if (!isCount(amount)) return "n/a";
  if (amount >= 1 || amount === 0) return `$${amount.toFixed(2)}`;
  let text = amount.toFixed(4);
  while (text.endsWith("0") && text.length > 4) text = text.slice(0, -1);
  return `$${text}`;
}

type SectionName = "status" | "result" | "notes" | "stats";

/** Applied to a trimmed line of bounded length, so it cannot backtrack badly. */
const HEADER_RE =
  /^(?:[-*+]\s+|\d+[.)]\s+|#{1,6}\s+)?(?:\*\*|__)?(status|result|notes|stats)(?:\*\*|__)?\s*:\s*(?:\*\*|__)?(.*)$/i;
const MAX_HEADER_LINE = 300;

interface ParsedReply {
  preamble: string[];
  result?: string[] | undefined;
  notes?: string[] | undefined;
}

/**
 * Splits a reply into its `Result:` and `Notes:` sections. `Status:`/`Stats:` lines outside the Result section are
 * the model's own metadata and are dropped; inside it they are ordinary text (`Status: 200 OK`).
 */
function parseSections(reply: string): ParsedReply {
  const parsed: ParsedReply = { preamble: [] };
  let current: "preamble" | "result" | "notes" = "preamble";
  let lines = parsed.preamble;
  for (const line of reply.split(/\r?\n/)) {
    const trimmed = line.trim();
    const header = trimmed.length <= MAX_HEADER_LINE ? HEADER_RE.exec(trimmed) : null;
    const name = (header?.[1]?.toLowerCase() ?? "") as SectionName | "";
    const opens = name === "notes" || (name === "result" && parsed.result === undefined);
    if (header === null || (!opens && current === "result")) {
      lines.push(line);
      continue;
    }
    if (!opens) continue;
    current = name as "result" | "notes";
    lines = parsed[current] ?? [];
    parsed[current] = lines;
    const inline = (header[2] ?? "").replace(/(?:\*\*|__)\s*$/, "").trim();
    if (inline !== "") lines.push(inline);
  }
  return parsed;
}

function block(lines: readonly string[] | undefined): string {
  if (lines === undefined) return "";
  return lines
    .join("\n")
    .replace(/^\s*\n/, "")
    .trimEnd();
}

function statsLine(stats: SubagentAnnounceStats): string {
  const parts = [`runtime ${formatDuration(stats.runtimeMs)}`];
  const total = isCount(stats.totalTokens)
    ? stats.totalTokens
    : isCount(stats.inputTokens) || isCount(stats.outputTokens)
      ? (isCount(stats.inputTokens) ? stats.inputTokens : 0) +
        (isCount(stats.outputTokens) ? stats.outputTokens : 0)
      : undefined;
  let tokens = `tokens ${formatTokenCount(total)}`;
  if (isCount(stats.inputTokens) || isCount(stats.outputTokens)) {
    tokens += ` (in ${formatTokenCount(stats.inputTokens)} / out ${formatTokenCount(stats.outputTokens)})`;
  }
  parts.push(tokens);
  if (isCount(stats.costUsd)) parts.push(`est ${formatUsd(stats.costUsd)}`);
  const text = (value: unknown) =>
    typeof value === "string" && value.trim() !== "" ? value.trim() : undefined;
  const sessionKey = text(stats.sessionKey);
  const sessionId = text(stats.sessionId);
  const transcript = text(stats.transcriptPath);
  if (sessionKey !== undefined) parts.push(`sessionKey ${sessionKey}`);
  if (sessionId !== undefined) parts.push(`sessionId ${sessionId}`);
  if (transcript !== undefined) parts.push(`transcript ${transcript}`);
  return `Stats: ${parts.join(" • ")}`;
}

/**
 * Normalises a sub-agent's announce reply to `Status` / `Result` / `Notes` (+ `Stats`) (SPEC 6). The status comes
 * from the runtime outcome; section markup in the reply (`- **Result:**`) never leaks into the text.
 */
export function formatSubagentAnnounce(input: FormatSubagentAnnounceInput): string {
  const outcome = input?.outcome;
  const status =
    typeof outcome?.status === "string" && Object.hasOwn(STATUS_WORD, outcome.status)
      ? STATUS_WORD[outcome.status]
      : "unknown";
  const reply = typeof input?.reply === "string" ? input.reply : "";
  const parsed = parseSections(reply);

  let result = block(parsed.result ?? parsed.preamble);
  if (result === "") result = typeof input?.fallbackResult === "string" ? input.fallbackResult.trim() : "";
  if (result === "") result = "(not available)";

  const notes: string[] = [];
  const noted = block(parsed.notes);
  if (noted !== "" && !/^[-*]?\s*\(none\)$/i.test(noted)) notes.push(noted);
  const failed = outcome?.status === "error" || outcome?.status === "timeout";
  const error = typeof outcome?.error === "string" ? outcome.error.trim() : "";
  if (failed && error !== "") notes.push(`- Error: ${error}`);
  if (notes.length === 0) notes.push("- (none)");

  const out = [`Status: ${status}`, "", "Result:", result, "", "Notes:", notes.join("\n")];
  if (input?.stats !== undefined && input.stats !== null && typeof input.stats === "object") {
    out.push("", statsLine(input.stats));
  }
  return out.join("\n");
}
