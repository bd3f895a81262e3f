import type {
  AcquireLeaseResult,
  DeliveryRecord,
  RunEndResult,
  RunEndUnit,
  RunRecord,
  RunStartResult,
  RunStartUnit,
  StoreChange,
  StoredEntry,
  StoredMessage,
} from "@sessions/gateway";
import type pg from "pg";
import { type LeaseRow, toLease } from "./leases.js";
import { toDelivery } from "./operations.js";
import type { Db } from "./units.js";

/** What a unit answers, and the changes it made (announced by the caller: at once, or with its own unit). */
export interface Done<T> {
  result: T;
  changes: StoreChange[];
  /** Messages the unit appended (their JSON text as stored, without the seq): what this process knows once committed. */
  appended?: { key: string; seq: number; text: string }[];
}

/**
 * A run's start and end as one statement each: the functions migration 2 installs (`run_start`, `run_end`) take
 * the same record locks and do the same reads and writes as the gateway's units through a transaction. Inside a
 * caller's unit they join it; outside, each is a transaction of its own.
 */
type StartRow = {
  declined: boolean;
  created: boolean;
  run_id: string | null;
  seq: string | null;
  run_data: string;
  entry_data: string | null;
  lease_taken: boolean | null;
  lease_row: string | null;
};
type EndRow = {
  declined: boolean;
  ended: boolean;
  entry_put: boolean | null;
  delivery_created: boolean | null;
  delivery_data: string | null;
  delivery_lease_owner: string | null;
  delivery_lease_until: string | null;
  entry_data: string | null;
  next_started: boolean | null;
  reply_seq: string | null;
};

/** The SQL types of `run_start`'s parameters after the lock space, in order. */
const START_TYPES = [
  "text",
  "text",
  "text",
  "text",
  "text",
  "bigint",
  "text",
  "text",
  "text",
  "boolean",
  "text",
  "text",
  "text",
  "bigint",
  "bigint",
  "text",
  "text",
];
/** The SQL types of `run_end`'s parameters after the lock space, in order. */
const END_TYPES = [
  "text",
  "text",
  "text",
  "text",
  "boolean",
  "text",
  "text",
  "text",
  "jsonb",
  "text",
  "text",
  "text",
  "text",
  "text",
  "bigint",
  "bigint",
  "text",
  "bigint",
  "text",
  "text",
  "text",
  "text",
  "text",
  "text",
  "text",
];

/** The run as recorded when the lane it asks for is not free: waiting for it. */
function waitingRun(unit: RunStartUnit): RunStartUnit["run"] {
  const { startedAt: _, ...waiting } = { ...unit.run, status: "queued" as const };
  return waiting;
}

function startParams(unit: RunStartUnit): unknown[] {
  const { lease } = unit;
  return [
    unit.sessionKey,
    unit.idempotencyKey ?? null,
    unit.runId ?? null,
    unit.preferredRunId ?? null,
    unit.freshRunId,
    unit.now,
    JSON.stringify(unit.input),
    JSON.stringify(unit.run),
    unit.run.status,
    unit.run.followUp !== undefined && unit.run.followUpDone !== true,
    unit.run.owner ?? null,
    lease?.name ?? null,
    lease?.owner ?? null,
    // The function compares a holder's expiry with this (migration 2's run_start), so a lane another owner held
    // is taken only once it lapsed before `lapsedBefore`; a lease taken over records that moment as acquired.
    lease === undefined ? null : (lease.lapsedBefore ?? lease.now),
    lease === undefined ? null : lease.now + lease.ttlMs,
    lease?.data === undefined ? null : JSON.stringify(lease.data),
    lease === undefined ? null : JSON.stringify(waitingRun(unit)),
  ];
}

function startResult(unit: RunStartUnit, row: StartRow | undefined): Done<RunStartResult | undefined> {
  if (row === undefined) throw new Error("run_start returned no row");
  if (row.declined) return { result: undefined, changes: [] };
  if (!row.created)
    return { result: { created: false, run: JSON.parse(row.run_data) as RunRecord }, changes: [] };
  const runId = row.run_id as string;
  const seq = Number(row.seq);
  const run: RunRecord = {
    runId,
    ...(row.lease_taken === false ? waitingRun(unit) : unit.run),
    inputSeq: seq,
  };
  if (unit.idempotencyKey !== undefined) run.idempotencyKey = unit.idempotencyKey;
  const input = { ...unit.input, runId, seq } as StoredMessage;
  const entry = row.entry_data === null ? undefined : (JSON.parse(row.entry_data) as StoredEntry);
  const held = row.lease_row === null ? undefined : toLease(JSON.parse(row.lease_row) as LeaseRow);
  const leased: AcquireLeaseResult | undefined =
    held === undefined
      ? undefined
      : row.lease_taken === true
        ? { acquired: true, lease: held }
        : { acquired: false, holder: held };
  const changes: StoreChange[] = [];
  if (entry !== undefined) changes.push({ type: "entry", key: unit.sessionKey, op: "put" });
  changes.push({ type: "run", runId, sessionKey: run.sessionKey, status: run.status });
  return {
    result: { created: true, run, input, entry, ...(leased === undefined ? {} : { lease: leased }) },
    changes,
    appended: [{ key: unit.sessionKey, seq, text: storedInput(JSON.stringify(unit.input), runId) }],
  };
}

/** The input's JSON text as `run_start` stores it: with the run's id added as its last field. */
function storedInput(input: string, runId: string): string {
  return `${input.slice(0, -1)}${input === "{}" ? "" : ","}"runId":${JSON.stringify(runId)}}`;
}

function endParams(unit: RunEndUnit): unknown[] {
  const { run, delivery } = unit;
  return [
    run.sessionKey,
    run.runId,
    unit.owner ?? null,
    run.status,
    run.followUp !== undefined && run.followUpDone !== true,
    run.owner ?? null,
    JSON.stringify(run),
    unit.reply === undefined ? null : JSON.stringify(unit.reply),
    JSON.stringify(unit.entry),
    delivery?.id ?? null,
    delivery?.idempotencyKey ?? null,
    delivery?.sessionKey ?? null,
    delivery?.runId ?? null,
    delivery?.status ?? null,
    delivery?.nextAttemptAt ?? null,
    delivery?.createdAt ?? null,
    delivery?.leaseOwner ?? null,
    delivery?.leaseUntil ?? null,
    delivery === undefined ? null : JSON.stringify(delivery),
    unit.releaseLease?.name ?? null,
    unit.releaseLease?.owner ?? null,
    unit.fence?.name ?? null,
    unit.fence?.owner ?? null,
    unit.next?.runId ?? null,
    unit.next === undefined ? null : JSON.stringify(unit.next),
  ];
}

function endResult(unit: RunEndUnit, row: EndRow | undefined): Done<RunEndResult | undefined> {
  const { run, delivery } = unit;
  if (row === undefined) throw new Error("run_end returned no row");
  if (row.declined) return { result: undefined, changes: [] };
  if (!row.ended) return { result: { ended: false }, changes: [] };
  const changes: StoreChange[] = [];
  if (row.entry_put === true) changes.push({ type: "entry", key: run.sessionKey, op: "put" });
  let recorded: { record: DeliveryRecord; created: boolean } | undefined;
  if (delivery !== undefined) {
    if (row.delivery_created === true) {
      recorded = { record: structuredClone(delivery), created: true };
      changes.push({
        type: "delivery",
        id: delivery.id,
        sessionKey: delivery.sessionKey,
        status: delivery.status,
      });
    } else {
      const stored = { data: row.delivery_data as string, lease_owner: row.delivery_lease_owner };
      recorded = { record: toDelivery({ ...stored, lease_until: row.delivery_lease_until }), created: false };
    }
  }
  changes.push({ type: "run", runId: run.runId, sessionKey: run.sessionKey, status: run.status });
  const { next } = unit;
  if (next !== undefined && row.next_started === true)
    changes.push({ type: "run", runId: next.runId, sessionKey: next.sessionKey, status: next.status });
  const entry = row.entry_data === null ? undefined : (JSON.parse(row.entry_data) as StoredEntry);
  const { reply } = unit;
  return {
    result: {
      ended: true,
      delivery: recorded,
      entry,
      ...(next === undefined ? {} : { nextStarted: row.next_started === true }),
    },
    changes,
    ...(reply === undefined || row.reply_seq === null
      ? {}
      : { appended: [{ key: run.sessionKey, seq: Number(row.reply_seq), text: JSON.stringify(reply) }] }),
  };
}

/** `SELECT * FROM fn($1, …)`: one unit. */
const singleSql = (s: string, fn: string, params: number) =>
  `SELECT * FROM ${s}.${fn}(${Array.from({ length: params + 1 }, (_, i) => `$${i + 1}`).join(", ")})`;

/**
 * One statement for several units: the function called per row of the parameters, in order. The rows go as one
 * jsonb parameter, an array of arrays (each row's parameters in order), each parameter taken out by its place and
 * cast to its type. `JSON.stringify` escapes in one native pass what a text array per parameter (as the driver builds
 * it) escaped twice per value in JavaScript, the largest part of what the gateway allocated under a backlog; arrays
 * rather than objects keyed by column (`json_to_recordset`) halve that again, and Postgres reads them no slower.
 */
const batchSql = (s: string, fn: string, types: readonly string[]) =>
  `SELECT r.* FROM jsonb_array_elements($2::jsonb) WITH ORDINALITY AS u(params, ord)
    CROSS JOIN LATERAL ${s}.${fn}($1, ${types.map((type, i) => `(u.params->>${i})::${type}`).join(", ")}) r
    ORDER BY u.ord`;

/** The parameters of several units as the JSON text `batchSql` reads. */
const rowsJson = (rows: unknown[][]) => JSON.stringify(rows.map((row) => row.map(asJsonValue)));

const NUL = String.fromCharCode(0);
/**
 * A parameter as the batch's JSON carries it, so that Postgres reads what it reads from the parameter alone. JSON
 * has no NaN or Infinity (they would go as null): as text, Postgres refuses them, as it does alone. A NUL or a lone
 * surrogate in a plain value (a key), which JSON escapes and Postgres's JSON then refuses, becomes U+FFFD, as the
 * store's queries and the driver's UTF-8 make it alone.
 */
function asJsonValue(value: unknown): unknown {
  if (typeof value === "number") return Number.isFinite(value) ? value : String(value);
  if (typeof value !== "string") return value ?? null;
  const text = (value as WellFormed).isWellFormed() ? value : (value as WellFormed).toWellFormed();
  return text.includes(NUL) ? text.replaceAll(NUL, "\uFFFD") : text;
}

/** ES2024's string methods (Node 20 has them; the compiled library is ES2022). */
type WellFormed = string & { isWellFormed(): boolean; toWellFormed(): string };

/** A unit done by one Postgres function: alone (`one`), or several in one statement (`many`). */
export interface UnitCalls<U, R> {
  one(db: Db, unit: U): Promise<Done<R>>;
  many(db: Db, units: U[]): Promise<Done<R>[]>;
}

function unitCalls<U, Row extends pg.QueryResultRow, R>(
  s: string,
  lockSpace: string,
  fn: string,
  types: readonly string[],
  params: (unit: U) => unknown[],
  read: (unit: U, row: Row | undefined) => Done<R>,
  sessionOf: (unit: U) => string,
): UnitCalls<U, R> {
  const one = singleSql(s, fn, types.length);
  const many = batchSql(s, fn, types);
  return {
    async one(db, unit) {
      return read(unit, (await db.query<Row>(one, [lockSpace, ...params(unit)])).rows[0]);
    },
    async many(db, units) {
      // Each unit locks its session first, and a batch holds every lock it took until it commits: batches that
      // took two sessions in opposite orders would deadlock (each then waits a second for Postgres to notice).
      // In session order, every batch takes them in the one order: no cycle.
      const order = units
        .map((_, i) => i)
        .sort((a, b) => compare(sessionOf(units[a] as U), sessionOf(units[b] as U)) || a - b);
      const sorted = order.map((i) => units[i] as U);
      const { rows } = await db.query<Row>(many, [lockSpace, rowsJson(sorted.map(params))]);
      const done: Done<R>[] = new Array(units.length);
      order.forEach((unitIndex, row) => {
        done[unitIndex] = read(sorted[row] as U, rows[row]);
      });
      return done;
    },
  };
}

/** Code-unit order, as the batch sorts its sessions (any fixed order would do). */
const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/**
 * A run's start and end as one statement each: the functions migration 2 installs (`run_start`, `run_end`) take
 * the same record locks and do the same reads and writes as the gateway's units through a transaction. Inside a
 * caller's unit they join it; outside, each is a transaction of its own — or, several at a time, one transaction
 * for all of them (`many`: group commit, one statement per batch).
 */
export function createRunUnits(s: string, lockSpace: string) {
  return {
    start: unitCalls(s, lockSpace, "run_start", START_TYPES, startParams, startResult, (u) => u.sessionKey),
    end: unitCalls(s, lockSpace, "run_end", END_TYPES, endParams, endResult, (u) => u.run.sessionKey),
  };
}
