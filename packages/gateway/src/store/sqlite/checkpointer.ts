import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";

/** How often the background checkpointer copies the WAL back into the database file. */
const CHECKPOINT_EVERY_MS = 100;

/**
 * The checkpointer's thread: its own connection to the file, a PASSIVE checkpoint every interval. PASSIVE never
 * waits for the writer or readers, so the gateway's transactions never wait for it either.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require("node:worker_threads");
const Database = require(workerData.driver);
const db = new Database(workerData.file, { fileMustExist: true });
db.pragma("synchronous = " + workerData.synchronous);
let stopped = false;
const timer = setInterval(() => {
  if (stopped) return;
  try {
    db.pragma("wal_checkpoint(PASSIVE)");
  } catch {
    // A busy or failing checkpoint is tried again next time; the writer's own autocheckpoint is the backstop.
  }
}, workerData.everyMs);
parentPort.on("message", (message) => {
  if (message !== "stop") return;
  stopped = true;
  clearInterval(timer);
  db.close();
  parentPort.postMessage("stopped");
});
parentPort.postMessage("started");
`;

/** better-sqlite3 as this module resolves it, so the worker loads the same driver. */
const driverPath = (): string => createRequire(import.meta.url).resolve("better-sqlite3");

export interface Checkpointer {
  stop(): Promise<void>;
}

/**
 * Checkpoints the WAL of `file` on a worker thread, off the request path: without it SQLite checkpoints inside
 * whichever COMMIT crosses `wal_autocheckpoint` pages, copying and syncing pages while every caller waits.
 * Returns undefined when no worker can be started (the caller keeps SQLite's own checkpoints then).
 */
export function startCheckpointer(file: string, synchronous: "NORMAL" | "FULL"): Checkpointer | undefined {
  let worker: Worker;
  try {
    worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { file, driver: driverPath(), synchronous, everyMs: CHECKPOINT_EVERY_MS },
    });
  } catch {
    return undefined;
  }
  worker.unref();
  // A worker that fails (its driver will not load, the file went away) only costs the background checkpoints.
  worker.on("error", () => undefined);
  let stopping: Promise<void> | undefined;
  return {
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
        worker.postMessage("stop");
        // Never let a stuck worker hold `close()`.
        setTimeout(done, 1000).unref();
      });
      return stopping;
    },
  };
}
