import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import { SessionsError } from "@sessions/core";
import { holderGone, leaseHolderData } from "../lease-liveness.js";
import type { AcquireLease, AcquireLeaseResult, Lease } from "../types.js";

/** The lease that makes one process the owner of a SQLite file. */
export const OWNER_LEASE = "store.owner";
const OWNER_TTL_MS = 30_000;
const HEARTBEAT_MS = 5_000;

interface LeaseCalls {
  acquireLease(input: AcquireLease): AcquireLeaseResult;
  renewLease(name: string, owner: string, ttlMs: number, now: number): boolean;
  releaseLease(name: string, owner: string): boolean;
}

export interface FileOwnership {
  /** Set when another process took the file over (this one stalled past its lease): writes must stop. */
  readonly lost: SessionsError | undefined;
  release(): void;
}

export function inUseError(file: string, holder: Lease): SessionsError {
  const pid = String(holder.data?.pid ?? "?");
  const host = String(holder.data?.host ?? "?");
  const since = new Date(holder.acquiredAt).toISOString();
  return new SessionsError(
    "conflict",
    `SQLite store ${file} is in use by pid ${pid} on host ${host} since ${since} (one gateway per SQLite file; stop it, or use a networked store for several gateways)`,
    { field: "path", details: { pid: holder.data?.pid, host: holder.data?.host, since } },
  );
}

/**
 * Takes the file for this process or throws `inUseError`. A heartbeat (unref'd, so it never keeps the process
 * alive) renews the lease through `whenFree`, which waits for an open transaction to end first.
 */
export function claimFileOwnership(
  file: string,
  leases: LeaseCalls,
  whenFree: (beat: () => void) => void,
): FileOwnership {
  const owner = `${hostname()}:${process.pid}:${randomUUID()}`;
  const take = (): AcquireLeaseResult => {
    const now = Date.now();
    const result = leases.acquireLease({
      name: OWNER_LEASE,
      owner,
      ttlMs: OWNER_TTL_MS,
      now,
      data: leaseHolderData(),
    });
    if (result.acquired || !holderGone(result.holder, now)) return result;
    leases.releaseLease(OWNER_LEASE, result.holder.owner);
    return leases.acquireLease({
      name: OWNER_LEASE,
      owner,
      ttlMs: OWNER_TTL_MS,
      now,
      data: leaseHolderData(),
    });
  };

  const first = take();
  if (!first.acquired) throw inUseError(file, first.holder);

  let lost: SessionsError | undefined;
  const beat = () => {
    try {
      if (leases.renewLease(OWNER_LEASE, owner, OWNER_TTL_MS, Date.now())) return;
      const again = take();
      if (!again.acquired) lost = inUseError(file, again.holder);
    } catch {
      // A busy or full file: the lease has 30 s of slack, the next beat tries again.
    }
  };
  const timer = setInterval(() => whenFree(beat), HEARTBEAT_MS);
  timer.unref();

  return {
    get lost() {
      return lost;
    },
    release() {
      clearInterval(timer);
      try {
        leases.releaseLease(OWNER_LEASE, owner);
      } catch {
        // Closing anyway: the lease lapses in 30 s, or at once for a restart on this host.
      }
    },
  };
}
