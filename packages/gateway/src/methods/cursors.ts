import {
  normalizeAgentId,
  type ParsedMethodParams,
  SessionsError,
  SessionsListMethodParams,
} from "@sessions/core";
import { z } from "zod";
import type { ListEntriesQuery } from "../store/types.js";

// A cursor is the base64url of a small versioned JSON object: opaque to clients, checked in full when it comes back.
const VERSION = 1;
const BASE64URL = /^[A-Za-z0-9_-]+$/;

function encode(body: object): string {
  return Buffer.from(JSON.stringify({ v: VERSION, ...body }), "utf8").toString("base64url");
}

function decode<T>(schema: z.ZodType<T>, cursor: string, method: string): T {
  let body: unknown;
  const bytes = BASE64URL.test(cursor) ? Buffer.from(cursor, "base64url") : undefined;
  // Only the one spelling we issue: decoding ignores stray trailing characters, the comparison does not.
  if (bytes !== undefined && bytes.toString("base64url") === cursor) {
    try {
      body = JSON.parse(bytes.toString("utf8"));
    } catch {
      body = undefined;
    }
  }
  const parsed = schema.safeParse(body);
  if (!parsed.success) {
    throw new SessionsError(
      "invalid_params",
      `cursor is not a ${method} cursor: pass back the nextCursor of a ${method} page unchanged`,
      { field: "cursor" },
    );
  }
  return parsed.data;
}

/** `cursor` and `offset` both say where a page starts: a call gives one of them. */
export function refuseCursorWithOffset(p: {
  cursor?: string | undefined;
  offset?: number | undefined;
}): void {
  if (p.cursor !== undefined && p.offset !== undefined) {
    throw new SessionsError("invalid_params", "Pass cursor or offset, not both", { field: "cursor" });
  }
}

// ---------------------------------------------------------------- chat.history

const HistoryCursorSchema = z.strictObject({
  v: z.literal(VERSION),
  m: z.literal("chat.history"),
  /** The transcript's session: a cursor never continues into another transcript under the same key. */
  s: z.string().min(1),
  /** The page ends before this seq. */
  b: z.int().min(1),
});

/** Where a `chat.history` page starts: before `beforeSeq` of the transcript of `sessionId`. */
export interface HistoryCursor {
  sessionId: string;
  beforeSeq: number;
}

/** The `nextCursor` of a history page whose oldest message has `beforeSeq`. */
export function encodeHistoryCursor(cursor: HistoryCursor): string {
  return encode({ m: "chat.history", s: cursor.sessionId, b: cursor.beforeSeq });
}

/** @throws SessionsError `invalid_params` naming `cursor` when it is not a `chat.history` cursor of ours. */
export function decodeHistoryCursor(cursor: string): HistoryCursor {
  const body = decode(HistoryCursorSchema, cursor, "chat.history");
  return { sessionId: body.s, beforeSeq: body.b };
}

/**
 * The cursor's transcript is gone: its session was deleted, or deleted and created again (a new sessionId).
 * Not a mistake of the caller's: the walk starts again from the newest page, without a cursor.
 */
export function staleHistoryCursor(sessionKey: string): SessionsError {
  return new SessionsError(
    "invalid_params",
    `cursor is stale: session ${sessionKey} was deleted or reset since; read its history again without a cursor`,
    { field: "cursor", details: { code: "CURSOR_STALE" } },
  );
}

/** The cursor names the transcript of another session than the one asked for. */
export function foreignHistoryCursor(sessionKey: string, cursorKey: string): SessionsError {
  return new SessionsError(
    "invalid_params",
    `cursor belongs to the history of ${cursorKey}, not of ${sessionKey}`,
    { field: "cursor" },
  );
}

// ---------------------------------------------------------------- sessions.list

/** The filters of a `sessions.list` walk, as its first page asked for them; `since` is that page's `activeMinutes`. */
const WalkFiltersSchema = SessionsListMethodParams.pick({
  agentId: true,
  kinds: true,
  label: true,
  spawnedBy: true,
  search: true,
  activeMinutes: true,
  includeGlobal: true,
  includeUnknown: true,
  includeArchived: true,
}).extend({ since: z.number().optional() });

/** The filters of a `sessions.list` page (booleans only when true), with `activeMinutes` fixed to a time. */
export type SessionFilters = z.infer<typeof WalkFiltersSchema>;

const SessionsCursorSchema = z.strictObject({
  v: z.literal(VERSION),
  m: z.literal("sessions.list"),
  /** The last key the previous page read (shown or not). */
  k: z.string(),
  f: WalkFiltersSchema,
});

type ListParams = ParsedMethodParams<"sessions.list">;
const FILTER_NAMES = [
  "agentId",
  "kinds",
  "label",
  "spawnedBy",
  "search",
  "activeMinutes",
  "includeGlobal",
  "includeUnknown",
  "includeArchived",
] as const;

/** A comparable form of one filter: agents normalised, kinds as a set, `false` as absent. */
function canonical(name: (typeof FILTER_NAMES)[number], value: unknown): string | undefined {
  if (value === undefined || value === false) return undefined;
  if (name === "agentId") return normalizeAgentId(value);
  if (name === "kinds") return JSON.stringify([...new Set(value as string[])].sort());
  return JSON.stringify(value);
}

/** The filters a `sessions.list` call asks for; `activeMinutes` becomes a fixed `since` as of `now`. */
export function sessionFilters(p: ListParams, now: number): SessionFilters {
  const filters: SessionFilters = {};
  if (p.agentId !== undefined) filters.agentId = normalizeAgentId(p.agentId);
  if (p.kinds !== undefined) filters.kinds = [...new Set(p.kinds)].sort();
  if (p.label !== undefined) filters.label = p.label;
  if (p.spawnedBy !== undefined) filters.spawnedBy = p.spawnedBy;
  if (p.search !== undefined) filters.search = p.search;
  if (p.activeMinutes !== undefined) {
    filters.activeMinutes = p.activeMinutes;
    filters.since = now - p.activeMinutes * 60_000;
  }
  if (p.includeGlobal) filters.includeGlobal = true;
  if (p.includeUnknown) filters.includeUnknown = true;
  if (p.includeArchived) filters.includeArchived = true;
  return filters;
}

/** The store query of those filters (`global` and `unknown` are left out after it, by the caller). */
export function filtersQuery(f: SessionFilters): Omit<ListEntriesQuery, "limit"> {
  return {
    ...(f.agentId === undefined ? {} : { agentIds: [f.agentId] }),
    ...(f.kinds === undefined ? {} : { kinds: f.kinds }),
    ...(f.label === undefined ? {} : { label: f.label }),
    ...(f.spawnedBy === undefined ? {} : { spawnedBy: f.spawnedBy }),
    ...(f.search === undefined ? {} : { search: f.search }),
    ...(f.since === undefined ? {} : { updatedSince: f.since }),
    ...(f.includeArchived ? { includeArchived: true } : {}),
  };
}

/** The `nextCursor` of a page of a walk in key order whose last row read was `lastKey`. */
export function encodeSessionsCursor(lastKey: string, filters: SessionFilters): string {
  return encode({ m: "sessions.list", k: lastKey, f: filters });
}

/**
 * Where a walk continues and with which filters: the cursor's. A filter the call gives again must be the same;
 * one it leaves out is the cursor's.
 * @throws SessionsError `invalid_params` naming `cursor` for a cursor that is not ours, or filters that differ.
 */
export function continueSessionsWalk(p: ListParams & { cursor: string }): {
  afterKey: string;
  filters: SessionFilters;
} {
  const body = decode(SessionsCursorSchema, p.cursor, "sessions.list");
  if (p.sortBy === "updatedAt") {
    throw new SessionsError(
      "invalid_params",
      'cursor walks in key order: pass sortBy "key" or leave it out',
      {
        field: "cursor",
      },
    );
  }
  for (const name of FILTER_NAMES) {
    const given = p[name];
    if (given === undefined) continue;
    if (canonical(name, given) !== canonical(name, body.f[name])) {
      throw new SessionsError(
        "invalid_params",
        `cursor belongs to a walk with another ${name}: pass the walk's filters unchanged, or none`,
        { field: "cursor", details: { filter: name } },
      );
    }
  }
  return { afterKey: body.k, filters: body.f };
}
