import { hostname } from "node:os";
import type { Lease } from "./types.js";

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: the process exists but belongs to someone else.
    return (error as NodeJS.ErrnoException).code !== "ESRCH";
  }
}

/**
 * Whether a lease's holder is gone: its lease lapsed at or before `lapsedBefore` (the time now, less any margin the
 * caller keeps), or it recorded a pid on this host that no longer runs (a process killed with SIGKILL frees what it
 * held at once). A holder on another host is gone only when it lapses.
 */
export function holderGone(holder: Lease, lapsedBefore: number): boolean {
  if (holder.expiresAt <= lapsedBefore) return true;
  const pid = holder.data?.pid;
  return (
    holder.data?.host === hostname() && typeof pid === "number" && Number.isInteger(pid) && !pidAlive(pid)
  );
}

/** What a process records in the leases it takes, so others can tell whether it still runs. */
export const leaseHolderData = (): Record<string, unknown> => ({ pid: process.pid, host: hostname() });
