import type { DeliveryRecord, ExecOutcome, WitnessRecord } from "./witness.js";

/**
 * Checks a fault test's witness log against what a correct cluster guarantees: one execution per session at a
 * time, every accepted message answered, every delivery posted once, every wait result true. Each finding comes
 * with a `detail` line for the failure message; an empty report is a correct run.
 */

/**
 * When processes were killed (SIGKILL: their executions have no `exec-end`), by gateway name or by `String(pid)`
 * (the pid wins): one time, or several for a name restarted and killed again.
 */
export type KilledAt = Record<string, number | readonly number[]>;

/** One execution of a run, its start paired with its end. */
export interface Execution {
  runId: string;
  sessionKey: string;
  gateway: string;
  pid: number;
  input: string;
  repeat: boolean;
  start: number;
  /** Its `exec-end`; else the first kill of its process at or after its start; else `Infinity` (never ended). */
  end: number;
  /** `killed`: no end, its process was killed; `unfinished`: no end and no kill known. */
  outcome: ExecOutcome | "killed" | "unfinished";
}

/** A message the cluster accepted (the `agent` answer): it must be answered by an `ok` execution. */
export interface AcceptedMessage {
  runId: string;
  sessionKey: string;
  text: string;
}

/** What a wait said about a run (for a run merged into another, pass the run that answered: `mergedInto`). */
export interface WaitResult {
  runId: string;
  status: "ok" | "error" | "timeout";
  /** When the wait answered (witness clock): only what had happened by then counts. Absent: the whole log. */
  at?: number | undefined;
}

export interface Overlap {
  sessionKey: string;
  first: Execution;
  second: Execution;
  overlapMs: number;
  detail: string;
}
export interface Loss {
  message: AcceptedMessage;
  executions: Execution[];
  detail: string;
}
export interface Duplicate {
  deliveryId: string;
  deliveries: DeliveryRecord[];
  detail: string;
}
export interface WrongWait {
  wait: WaitResult;
  executions: Execution[];
  detail: string;
}
export interface HistoryReport {
  overlaps: Overlap[];
  losses: Loss[];
  duplicates: Duplicate[];
  wrongWaits: WrongWait[];
}

/** `Map.groupBy` (Node 21+), for Node 20. */
function groupBy<T>(items: readonly T[], key: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const name = key(item);
    const group = groups.get(name);
    if (group === undefined) groups.set(name, [item]);
    else group.push(item);
  }
  return groups;
}

const killTimes = (killedAt: KilledAt, key: string): readonly number[] => {
  const times = killedAt[key];
  return times === undefined ? [] : typeof times === "number" ? [times] : times;
};

/**
 * The executions of a witness log, in start order. An `exec-end` closes the earliest open start of the same run,
 * gateway and pid; one with no open start is an error (the log is not a witness log).
 */
export function executions(witness: readonly WitnessRecord[], killedAt: KilledAt = {}): Execution[] {
  const open = new Map<string, Execution[]>();
  const all: Execution[] = [];
  for (const record of witness) {
    if (record.kind === "delivery") continue;
    const key = JSON.stringify([record.runId, record.gateway, record.pid]);
    if (record.kind === "exec-start") {
      const execution: Execution = {
        runId: record.runId,
        sessionKey: record.sessionKey,
        gateway: record.gateway,
        pid: record.pid,
        input: record.input,
        repeat: record.repeat === true,
        start: record.at,
        end: Number.POSITIVE_INFINITY,
        outcome: "unfinished",
      };
      all.push(execution);
      open.set(key, [...(open.get(key) ?? []), execution]);
      continue;
    }
    const execution = open.get(key)?.shift();
    if (execution === undefined)
      throw new Error(`witness: exec-end without its start: ${JSON.stringify(record)}`);
    execution.end = record.at;
    execution.outcome = record.outcome;
  }
  for (const execution of all) {
    if (execution.outcome !== "unfinished") continue;
    const byPid = killTimes(killedAt, String(execution.pid));
    const times = byPid.length > 0 ? byPid : killTimes(killedAt, execution.gateway);
    const kill = times.reduce(
      (min, at) => (at >= execution.start ? Math.min(min, at) : min),
      Number.POSITIVE_INFINITY,
    );
    if (Number.isFinite(kill)) {
      execution.end = kill;
      execution.outcome = "killed";
    }
  }
  return all.sort((a, b) => a.start - b.start);
}

/** `run r1 on g1/123 [12.0–40.5 ok]`, times in ms from `origin`. */
const show = (e: Execution, origin: number) =>
  `run ${e.runId} on ${e.gateway}/${e.pid} [${(e.start - origin).toFixed(1)}–${
    Number.isFinite(e.end) ? (e.end - origin).toFixed(1) : "never ended"
  } ${e.outcome}]`;

/**
 * Overlaps: two executions of one session that ran at once, by more than `toleranceMs` (default 0: intervals
 * that only touch do not overlap). An execution without an end lasts until its process's kill, when `killedAt`
 * has one, else forever: it overlaps every later execution of its session.
 *
 * Losses: an accepted message with no `ok` execution of its run, nor (a message a queue mode folded into another
 * run) an `ok` execution of its session whose input contains its text.
 *
 * Duplicates: a delivery id on more than one `delivery` record (every POST the platform took counts).
 *
 * Wrong waits: `ok` with no execution of the run ended `ok` (by the wait's `at`); `error` or `timeout` while the
 * run's last execution started by then had ended `ok` by then.
 */
export function checkHistory(options: {
  witness: readonly WitnessRecord[];
  accepted?: readonly AcceptedMessage[] | undefined;
  waits?: readonly WaitResult[] | undefined;
  killedAt?: KilledAt | undefined;
  toleranceMs?: number | undefined;
}): HistoryReport {
  const { witness, accepted = [], waits = [], toleranceMs = 0 } = options;
  const all = executions(witness, options.killedAt);
  // Times in details count from the first record.
  const origin = witness.reduce((min, record) => Math.min(min, record.at), witness[0]?.at ?? 0);

  const overlaps: Overlap[] = [];
  const bySession = groupBy(all, (e) => e.sessionKey);
  for (const [sessionKey, list] of bySession) {
    let active: Execution[] = [];
    for (const second of list) {
      active = active.filter((first) => first.end - second.start > toleranceMs);
      for (const first of active) {
        const overlapMs = Math.min(first.end, second.end) - second.start;
        const detail = `session ${sessionKey}: ${show(first, origin)} overlaps ${show(second, origin)} by ${
          Number.isFinite(overlapMs) ? `${overlapMs.toFixed(1)} ms` : "ever after"
        }`;
        overlaps.push({ sessionKey, first, second, overlapMs, detail });
      }
      active.push(second);
    }
  }

  const byRun = groupBy(all, (e) => e.runId);
  const losses: Loss[] = [];
  for (const message of accepted) {
    const runs = byRun.get(message.runId) ?? [];
    const answered =
      runs.some((e) => e.outcome === "ok") ||
      (message.text !== "" &&
        (bySession.get(message.sessionKey) ?? []).some(
          (e) => e.outcome === "ok" && e.input.includes(message.text),
        ));
    if (answered) continue;
    const seen = runs.length === 0 ? "never executed" : runs.map((e) => show(e, origin)).join(", ");
    losses.push({
      message,
      executions: runs,
      detail: `message ${JSON.stringify(message.text)} (run ${message.runId}, session ${message.sessionKey}) was accepted and never answered: ${seen}`,
    });
  }

  const duplicates: Duplicate[] = [];
  const deliveries = groupBy(
    witness.filter((record): record is DeliveryRecord => record.kind === "delivery"),
    (record) => record.deliveryId,
  );
  for (const [deliveryId, posts] of deliveries) {
    if (posts.length < 2) continue;
    const by = posts.map((post) => `${post.gateway} at ${(post.at - origin).toFixed(1)}`).join(", ");
    duplicates.push({
      deliveryId,
      deliveries: posts,
      detail: `delivery ${deliveryId} (to ${posts[0]?.to}) posted ${posts.length} times: ${by}`,
    });
  }

  const wrongWaits: WrongWait[] = [];
  for (const wait of waits) {
    const at = wait.at ?? Number.POSITIVE_INFINITY;
    const runs = byRun.get(wait.runId) ?? [];
    const endedOk = (e: Execution) => e.outcome === "ok" && e.end <= at;
    const last = runs.filter((e) => e.start <= at).at(-1);
    const wrong = wait.status === "ok" ? !runs.some(endedOk) : last !== undefined && endedOk(last);
    if (!wrong) continue;
    const seen = runs.length === 0 ? "never executed" : runs.map((e) => show(e, origin)).join(", ");
    const when = wait.at === undefined ? "" : ` at ${(wait.at - origin).toFixed(1)}`;
    wrongWaits.push({
      wait,
      executions: runs,
      detail: `wait for run ${wait.runId} said ${wait.status}${when}, but: ${seen}`,
    });
  }
  return { overlaps, losses, duplicates, wrongWaits };
}

/** The report's findings, one line each (empty for a correct run): for an assertion's message. */
export function describeHistory(report: HistoryReport): string[] {
  return [
    ...report.overlaps.map((each) => `overlap: ${each.detail}`),
    ...report.losses.map((each) => `loss: ${each.detail}`),
    ...report.duplicates.map((each) => `duplicate: ${each.detail}`),
    ...report.wrongWaits.map((each) => `wrong wait: ${each.detail}`),
  ];
}
