import { readFileSync } from "node:fs";
import { applyMasks, isEpochMs, type MaskOptions, maskIds } from "./ids.js";

/** A runner turn as a recording has it (`createGateway({ record })` in `@sessions/gateway` writes them). */
export interface RecordedTurn {
  type: "turn";
  runId: string;
  agentId: string;
  sessionKey: string;
  kind: string;
  input: string;
  system: string[];
  events: ({ text: string } | { call: { id: string; tool: string; params: unknown; result?: unknown } })[];
  reply?: string | undefined;
  usage?: Record<string, number | undefined> | undefined;
  error?: string | undefined;
}

/**
 * A request that started a tree, as a recording has it (recordings made before requests were recorded have none):
 * what a replay sends again with it. Its idempotency key is not recorded; its run id pairs it with its replay's.
 */
export interface RecordedRequest {
  type: "request";
  runId: string;
  method: string;
  sessionKey: string;
  budget?:
    | {
        tokens?: number | undefined;
        costUsd?: number | undefined;
        runs?: number | undefined;
        seconds?: number | undefined;
      }
    | undefined;
  traceparent?: string | undefined;
  deliver?:
    | {
        channel?: string | undefined;
        to?: string | undefined;
        accountId?: string | undefined;
        threadId?: string | undefined;
      }
    | undefined;
}

/** How `normalizeRecording` reads a recording. */
export interface NormalizeOptions extends MaskOptions {
  /**
   * Keep the requests that started the exchange (`type: "request"` lines). Left out by default: they are what a
   * replay sends again, and recordings made before they were recorded have none.
   */
  requests?: boolean | undefined;
}

/** The lines of a recording: a JSONL file's path, or its text when `{ text }` is given. */
export function readRecording(source: string | { text: string }): Record<string, unknown>[] {
  const text = typeof source === "string" ? readFileSync(source, "utf8") : source.text;
  const lines: Record<string, unknown>[] = [];
  for (const [i, line] of text.split("\n").entries()) {
    if (line.trim() === "") continue;
    let parsed: unknown;
    try {
      parsed = JSON.parse(line);
    } catch (error) {
      throw new Error(`recording line ${i + 1} is not JSON: ${(error as Error).message}`);
    }
    if (parsed === null || typeof parsed !== "object" || (parsed as { v?: unknown }).v !== 1)
      throw new Error(`recording line ${i + 1} is not a version 1 recording line`);
    lines.push(parsed as Record<string, unknown>);
  }
  return lines;
}

/** The order of a normalised recording's lines by type: requests, turns, deliveries. */
const TYPE_ORDER: Record<string, number> = { request: 0, turn: 1, delivery: 2 };

/**
 * A recording with its ids and times normalised, so that two recordings of the same exchange are the same text,
 * byte for byte: lines grouped by what they are (requests when asked for, turns, then deliveries), by session and
 * kind (a request's method), each group in its recorded order (sessions run side by side, so lines of different
 * sessions interleave differently from one run to the next); then every id becomes `<id1>`, `<id2>`, … in order of
 * first appearance, epoch-millisecond numbers `0`, and ISO times and stated run times `<time>`.
 */
export function normalizeRecording(
  source: string | { text: string },
  options: NormalizeOptions = {},
): string {
  const ids = new Map<string, string>();
  const mask = (id: string) => {
    let name = ids.get(id);
    if (name === undefined) {
      name = `<id${ids.size + 1}>`;
      ids.set(id, name);
    }
    return name;
  };
  const normal = (value: unknown): unknown => {
    if (typeof value === "string") return maskIds(applyMasks(value, options.masks), mask);
    if (isEpochMs(value)) return 0;
    if (Array.isArray(value)) return value.map(normal);
    if (value !== null && typeof value === "object")
      return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, normal(v)]));
    return value;
  };
  const group = (line: Record<string, unknown>) =>
    `${TYPE_ORDER[String(line.type)] ?? 3}|${maskIds(String(line.sessionKey))}|${String(line.kind ?? line.method)}`;
  return readRecording(source)
    .filter((line) => options.requests === true || line.type !== "request")
    .map((line, i) => ({ line, i, group: group(line) }))
    .sort((a, b) => (a.group < b.group ? -1 : a.group > b.group ? 1 : a.i - b.i))
    .map(({ line }) => `${JSON.stringify(normal(line))}\n`)
    .join("");
}
