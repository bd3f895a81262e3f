// Shared by the gateway bench's feature files: targets, the runner, the result table (the rest is in kit.ts).
import { createScriptedRunner } from "../src/index.js";
import type { Row } from "./kit.js";

export * from "./kit.js";

/** Targets on a 2-core machine (see gateway.bench.ts). */
export const TARGET = {
  listP50Ms: 20,
  historyP50Ms: 5,
  historyRatio: 2,
  appendP50Ms: 0.5,
  spawnTotalMs: 10_000,
  spawnRssMb: 400,
};

/** A runner that answers "ok" for every agent. */
export const runner = createScriptedRunner({ agents: {}, fallback: () => "ok" });

export const rows: Row[] = [];
export const notes: string[] = [];
export const note = (line: string) => {
  notes.push(line);
  console.log(`  ${line}`);
};
