import { appendFileSync, readFileSync } from "node:fs";
import { type AgentRunner, type AgentRunRequest, messageText } from "@sessions/gateway";

/**
 * The witness log: what really happened in a fault test, written by the runners and the fake platform themselves,
 * apart from the gateways' own records. One JSON object per line, each appended with one `appendFileSync` (one
 * `write` on an `O_APPEND` file, under 4 KiB): several processes share a file, and one killed with SIGKILL leaves
 * only whole lines.
 */

/** A runner began executing a run (`repeat`: this run had begun before, here or in another process). */
export interface ExecStartRecord {
  kind: "exec-start";
  runId: string;
  sessionKey: string;
  gateway: string;
  pid: number;
  at: number;
  /** The input message's text (cut to fit a line). */
  input: string;
  repeat?: boolean | undefined;
}

/** How an execution ended: it returned, it stopped on its abort signal, or it threw. */
export type ExecOutcome = "ok" | "aborted" | "error";

/** A runner finished executing a run. */
export interface ExecEndRecord {
  kind: "exec-end";
  runId: string;
  sessionKey: string;
  gateway: string;
  pid: number;
  at: number;
  outcome: ExecOutcome;
}

/** The platform posted a message (one line per POST it accepted, repeats included). */
export interface DeliveryRecord {
  kind: "delivery";
  deliveryId: string;
  to: string;
  text: string;
  gateway: string;
  at: number;
}

export type WitnessRecord = ExecStartRecord | ExecEndRecord | DeliveryRecord;

/** A record as a writer gives it: `kind` is the method's, `at` defaults to now, `pid` to this process. */
type Fields<R extends WitnessRecord> = Omit<R, "kind" | "at" | "pid"> & { at?: number; pid?: number };

/** Wall-clock milliseconds, sub-millisecond, comparable across processes of one host. */
export const witnessNow = () => performance.timeOrigin + performance.now();

/** A line must stay below this (bytes, newline included) for an `O_APPEND` write to land whole. */
export const MAX_LINE_BYTES = 4000;

/** `record` as one line, its free text (`input`, `text`) cut until the line fits. */
function line(record: WitnessRecord): string {
  let text = JSON.stringify(record);
  const field = record.kind === "exec-start" ? "input" : record.kind === "delivery" ? "text" : undefined;
  while (Buffer.byteLength(text) + 2 > MAX_LINE_BYTES) {
    const value = field === undefined ? "" : String((record as unknown as Record<string, string>)[field]);
    if (value === "") throw new Error(`witness: a ${record.kind} record does not fit in one line`);
    // Shrinks by the share of the line that is too much (a few rounds at most: escapes make bytes uneven).
    const keep = Math.floor((value.length * MAX_LINE_BYTES) / (Buffer.byteLength(text) + 2));
    record = { ...record, [field as string]: value.slice(0, Math.min(keep, value.length - 1)) };
    text = JSON.stringify(record);
  }
  // A newline first too: a write that a SIGKILL cut short (Linux stops a write at a page boundary once a fatal signal
  // is pending) stays a line of its own, and the next process's line starts clean.
  return `\n${text}\n`;
}

export interface Witness {
  readonly file: string;
  execStart(fields: Fields<ExecStartRecord>): ExecStartRecord;
  execEnd(fields: Fields<ExecEndRecord>): ExecEndRecord;
  delivery(fields: Omit<DeliveryRecord, "kind" | "at"> & { at?: number }): DeliveryRecord;
}

/** A writer of the witness log `file` (created on the first record). */
export function createWitness(file: string): Witness {
  const append = <R extends WitnessRecord>(record: R): R => {
    appendFileSync(file, line(record));
    return record;
  };
  return {
    file,
    execStart: ({ at, pid, ...rest }) =>
      append({ kind: "exec-start", ...rest, pid: pid ?? process.pid, at: at ?? witnessNow() }),
    execEnd: ({ at, pid, ...rest }) =>
      append({ kind: "exec-end", ...rest, pid: pid ?? process.pid, at: at ?? witnessNow() }),
    delivery: ({ at, ...rest }) => append({ kind: "delivery", ...rest, at: at ?? witnessNow() }),
  };
}

/**
 * The records of `file` in the order they were appended: none when it does not exist yet; a last line without its
 * newline (a write under way, as read) is left out, and so is a line cut short (it does not end its object: its
 * writer was killed mid-write). Any other line that does not parse is an error.
 */
export function readWitness(file: string): WitnessRecord[] {
  let content: string;
  try {
    content = readFileSync(file, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw error;
  }
  const lines = content.split("\n");
  lines.pop();
  const records: WitnessRecord[] = [];
  for (const each of lines) {
    if (each === "") continue;
    try {
      records.push(JSON.parse(each) as WitnessRecord);
    } catch (error) {
      if (each.endsWith("}")) throw error;
    }
  }
  return records;
}

/** The duration rule of the fault tests' runner: `slow:<ms>` anywhere in a message's text, else `fallbackMs`. */
export function slowDuration(text: string, fallbackMs = 20): number {
  const slow = /slow:(\d+)/.exec(text);
  return slow ? Number(slow[1]) : fallbackMs;
}

/** Resolves `true` after `ms`, or `false` as soon as `signal` aborts. */
function sleep(ms: number, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const onAbort = () => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve(true);
    }, ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

/**
 * An AgentRunner that witnesses each execution: `exec-start`, a sleep of `durationMs(request)` (cut short when the
 * run is aborted: outcome `aborted`, and it throws the abort reason as runners do), `exec-end`, and the reply
 * `done <input text>`. `repeat` is set when the file already shows a start of the same run.
 */
export function witnessRunner(options: {
  file: string;
  gateway: string;
  pid?: number | undefined;
  durationMs(request: AgentRunRequest): number;
}): AgentRunner {
  const witness = createWitness(options.file);
  const pid = options.pid ?? process.pid;
  return {
    async run(request) {
      const { runId, sessionKey } = request;
      const input = messageText(request.input);
      const repeat = readWitness(options.file).some(
        (record) => record.kind === "exec-start" && record.runId === runId,
      );
      witness.execStart({
        runId,
        sessionKey,
        gateway: options.gateway,
        pid,
        input,
        ...(repeat ? { repeat } : {}),
      });
      const end = (outcome: ExecOutcome) =>
        witness.execEnd({ runId, sessionKey, gateway: options.gateway, pid, outcome });
      let finished: boolean;
      try {
        finished = await sleep(options.durationMs(request), request.signal);
      } catch (error) {
        end("error");
        throw error;
      }
      if (!finished) {
        end("aborted");
        throw request.signal.reason ?? new Error("aborted");
      }
      end("ok");
      return { reply: `done ${input}` };
    },
  };
}
