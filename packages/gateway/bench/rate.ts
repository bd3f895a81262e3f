// How the runs bench measures a row: runs per second, and CPU time per run of the process and of its main thread.
import { readFileSync } from "node:fs";

/**
 * Runs per second (wall clock), CPU time of the whole process per run and of its main thread alone (steadier on a
 * shared machine; the main thread is where a run's work queues up, the rest is the checkpointer's thread).
 */
export interface Rate {
  perSecond: number;
  cpuUsPerRun: number;
  mainUsPerRun: number | undefined;
}

/** CPU time of the main thread so far in µs, from /proc (undefined where there is none). */
export function mainThreadCpuUs(): number | undefined {
  try {
    const stat = readFileSync(`/proc/self/task/${process.pid}/stat`, "utf8");
    // Fields after the command name (which may hold spaces): utime and stime are the 12th and 13th, in ticks.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const ticks = Number(fields[11]) + Number(fields[12]);
    return Number.isFinite(ticks) ? (ticks * 1_000_000) / 100 : undefined;
  } catch {
    return undefined;
  }
}

/** Where a measurement starts: the wall clock and both CPU clocks. */
export interface Start {
  wall: number;
  cpu: NodeJS.CpuUsage;
  main: number | undefined;
}

export const start = (): Start => ({
  wall: performance.now(),
  cpu: process.cpuUsage(),
  main: mainThreadCpuUs(),
});

export function rate(runs: number, { wall: started, cpu, main }: Start): Rate {
  const used = process.cpuUsage(cpu);
  const mainNow = mainThreadCpuUs();
  return {
    perSecond: runs / ((performance.now() - started) / 1000),
    cpuUsPerRun: (used.user + used.system) / runs,
    mainUsPerRun: main === undefined || mainNow === undefined ? undefined : (mainNow - main) / runs,
  };
}
