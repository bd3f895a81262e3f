import { SessionsError } from "@sessions/core";
import type { SessionStore } from "../store/types.js";

/** How gateways sharing one database find out that one of them died, and how soon they take its work over. */
export interface ClusterOptions {
  /**
   * How long a gateway's liveness lease, a session lane and a held connection last without renewal (default
   * 15,000 ms). It trades two things: a gateway that dies on another host is noticed only after it (plus a tenth of
   * it for clocks; at once on the same host, where its pid is checked), and a database outage shorter than nine
   * tenths of it stops nothing (runs finish, their ends are written when it is back); one longer stops the runs of
   * every session lane whose lease could not be renewed, and they run again once the lane is held again. Leases
   * are renewed every third of it.
   */
  leaseTtlMs?: number | undefined;
  /** How often each gateway looks for work left by dead gateways (default 1,000 ms). */
  recoveryIntervalMs?: number | undefined;
}

export interface ClusterSettings {
  leaseTtlMs: number;
  heartbeatMs: number;
  recoveryIntervalMs: number;
  /**
   * Both sides of a lease keep this margin for clocks that run at different rates and timers that fire late: a
   * holder stops acting under a lease it could not renew this long before the lease expires, and another gateway
   * takes it over only this long after (a tenth of `leaseTtlMs`).
   */
  graceMs: number;
}

/** The default `leaseTtlMs`: see `ClusterOptions.leaseTtlMs` and docs/scale-out.md for what it trades. */
export const DEFAULT_LEASE_TTL_MS = 15_000;

/** Stores made for one process; any other kind is taken to be shared by several gateways. */
const SINGLE_PROCESS_STORES = new Set(["sqlite", "memory"]);

/**
 * The cluster settings, or undefined for a gateway alone with its store. `cluster: true` or an object turns
 * cluster mode on; `false` turns it off; left out, it is on for every store that is not SQLite or memory.
 */
export function clusterSettings(
  option: boolean | ClusterOptions | undefined,
  store: SessionStore,
): ClusterSettings | undefined {
  if (option === false) return undefined;
  if (option === undefined && SINGLE_PROCESS_STORES.has(store.kind)) return undefined;
  if (option !== undefined && option !== true && (option === null || typeof option !== "object")) {
    throw new SessionsError("invalid_config", "createGateway: cluster must be a boolean or an object", {
      field: "cluster",
    });
  }
  const given = typeof option === "object" ? option : {};
  const number = (field: keyof ClusterOptions, fallback: number, min: number) => {
    const value = given[field] ?? fallback;
    if (!Number.isInteger(value) || value < min) {
      throw new SessionsError(
        "invalid_config",
        `createGateway: cluster.${field} must be an integer ≥ ${min}`,
        {
          field: `cluster.${field}`,
        },
      );
    }
    return value;
  };
  const leaseTtlMs = number("leaseTtlMs", DEFAULT_LEASE_TTL_MS, 300);
  return {
    leaseTtlMs,
    heartbeatMs: Math.max(100, Math.floor(leaseTtlMs / 3)),
    recoveryIntervalMs: number("recoveryIntervalMs", 1_000, 50),
    graceMs: Math.floor(leaseTtlMs / 10),
  };
}
