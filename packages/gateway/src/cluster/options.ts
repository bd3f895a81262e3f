import { SessionsError } from "@sessions/core";
import type { SessionStore } from "../store/types.js";

/** How gateways sharing one database find out that one of them died, and how soon they take its work over. */
export interface ClusterOptions {
  /**
   * How long a gateway's liveness lease, a session lane and a held connection last without renewal (default
   * 3,000 ms). A gateway that dies is noticed within this (at once on the same host, where its pid is checked):
   * its interrupted runs end as errors, its queued deliveries and follow-ups move to another gateway. Leases are
   * renewed every third of it.
   */
  leaseTtlMs?: number | undefined;
  /** How often each gateway looks for work left by dead gateways (default 1,000 ms). */
  recoveryIntervalMs?: number | undefined;
}

export interface ClusterSettings {
  leaseTtlMs: number;
  heartbeatMs: number;
  recoveryIntervalMs: number;
}

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
  const leaseTtlMs = number("leaseTtlMs", 3_000, 300);
  return {
    leaseTtlMs,
    heartbeatMs: Math.max(100, Math.floor(leaseTtlMs / 3)),
    recoveryIntervalMs: number("recoveryIntervalMs", 1_000, 50),
  };
}
