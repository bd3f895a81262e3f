import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";

/** The longest the checkpointer sleeps before it looks at its stop flag again (a missed wake-up costs no more). */
const IDLE_CHECK_MS = 1_000;
/**
 * The least time between two checkpoints. Each costs two fsyncs however little it copies: a gateway serving one run
 * at a time commits thousands of times a second, and a checkpoint after every commit doubled its CPU time per run.
 */
const CHECKPOINT_GAP_MS = 20;

/**
 * The checkpointer's thread: its own connection to the file, and a PASSIVE checkpoint whenever the writer has
 * committed since the last one, at most one per `CHECKPOINT_GAP_MS`. The writer says so through shared memory (a
 * counter it bumps, `Atomics.notify`), not a message: a busy event loop could leave a message unread for as long as
 * the burst lasts, while the thread sleeping in `Atomics.wait` wakes at once. PASSIVE never waits for the writer or
 * readers, so the gateway's transactions never wait for it either.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require("node:worker_threads");
const Database = require(workerData.driver);
const signal = new Int32Array(workerData.signal);
const db = new Database(workerData.file, { fileMustExist: true });
db.pragma("synchronous = " + workerData.synchronous);
const checkpoint = () => {
  try {
    db.pragma("wal_checkpoint(PASSIVE)");
  } catch {
    // A busy or failing checkpoint is tried again after the next commit; the writer's own autocheckpoint is the backstop.
  }
};
let seen = Atomics.load(signal, 0);
checkpoint();
while (Atomics.load(signal, 1) === 0) {
  if (Atomics.wait(signal, 0, seen, workerData.idleMs) === "timed-out") continue;
  seen = Atomics.load(signal, 0);
  if (Atomics.load(signal, 1) !== 0) break;
  checkpoint();
  if (workerData.gapMs > 0) Atomics.wait(signal, 1, 0, workerData.gapMs);
}
db.close();
parentPort.postMessage("stopped");
`;

/** better-sqlite3 as this module resolves it, so the worker loads the same driver. */
const driverPath = (): string => createRequire(import.meta.url).resolve("better-sqlite3");

export interface Checkpointer {
  /** The writer committed: the worker checkpoints what it wrote (kicks meanwhile fold into one more checkpoint). */
  kick(): void;
  stop(): Promise<void>;
}

/**
 * Checkpoints the WAL of `file` on a worker thread, off the request path: without it SQLite checkpoints inside
 * whichever COMMIT crosses `wal_autocheckpoint` pages, copying and syncing pages while every caller waits.
 * Returns undefined when no worker can be started (the caller keeps SQLite's own checkpoints then).
 */
export function startCheckpointer(
  file: string,
  synchronous: "NORMAL" | "FULL",
  idleMs: number = IDLE_CHECK_MS,
): Checkpointer | undefined {
  // [0] counts the writer's commits, [1] is set to stop the worker.
  const signal = new Int32Array(new SharedArrayBuffer(8));
  let worker: Worker;
  try {
    worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: {
        file,
        driver: driverPath(),
        synchronous,
        signal: signal.buffer,
        idleMs,
        gapMs: CHECKPOINT_GAP_MS,
      },
    });
  } catch {
    return undefined;
  }
  worker.unref();
  // A worker that fails (its driver will not load, the file went away) only costs the background checkpoints.
  worker.on("error", () => undefined);
  let stopping: Promise<void> | undefined;
  return {
    kick() {
      Atomics.add(signal, 0, 1);
      Atomics.notify(signal, 0);
    },
    stop() {
      stopping ??= new Promise<void>((resolve) => {
        const done = () => {
          void worker.terminate().finally(resolve);
        };
        worker.once("exit", () => resolve());
        worker.once("message", function onMessage(message) {
          if (message === "stopped") done();
          else worker.once("message", onMessage);
        });
        Atomics.store(signal, 1, 1);
        Atomics.notify(signal, 1);
        Atomics.add(signal, 0, 1);
        Atomics.notify(signal, 0);
        // Never let a stuck worker hold `close()`.
        setTimeout(done, 1000).unref();
      });
      return stopping;
    },
  };
}
