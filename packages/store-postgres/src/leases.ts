import type {
  AcquireLease,
  AcquireLeaseResult,
  ClaimDeliveries,
  DeliveryRecord,
  Lease,
} from "@sessions/gateway";
import { type DeliveryRow, toDelivery } from "./operations.js";
import type { Db } from "./units.js";

export type LeaseRow = {
  name: string;
  owner: string;
  acquired_at: string;
  expires_at: string;
  data: string | null;
};

const LEASE_COLUMNS = "name, owner, acquired_at, expires_at, data";

export function toLease(row: LeaseRow): Lease {
  return {
    name: row.name,
    owner: row.owner,
    acquiredAt: Number(row.acquired_at),
    expiresAt: Number(row.expires_at),
    ...(row.data === null ? {} : { data: JSON.parse(row.data) as Record<string, unknown> }),
  };
}

/** Named leases and delivery claims: each one statement, so each is atomic without a unit around it. */
export function createLeaseOperations(s: string) {
  /** `hold`: inside a transaction, the row stays as read until it ends (a takeover waits), for fenced writes. */
  async function getLease(db: Db, name: string, hold = false): Promise<Lease | undefined> {
    const { rows } = await db.query<LeaseRow>(
      `SELECT ${LEASE_COLUMNS} FROM ${s}.leases WHERE name = $1${hold ? " FOR SHARE" : ""}`,
      [name],
    );
    return rows[0] === undefined ? undefined : toLease(rows[0]);
  }

  return {
    getLease,
    async acquireLease(db: Db, input: AcquireLease): Promise<AcquireLeaseResult> {
      // Takes a free or expired lease, or renews the caller's own (keeping when it was first taken).
      for (;;) {
        const { rows } = await db.query<LeaseRow>(
          `INSERT INTO ${s}.leases AS l (name, owner, acquired_at, expires_at, data) VALUES ($1, $2, $3, $4, $5)
           ON CONFLICT (name) DO UPDATE SET
             acquired_at = CASE WHEN l.owner = excluded.owner THEN l.acquired_at ELSE excluded.acquired_at END,
             data = CASE WHEN l.owner = excluded.owner THEN coalesce(excluded.data, l.data) ELSE excluded.data END,
             owner = excluded.owner, expires_at = excluded.expires_at
           WHERE l.owner = excluded.owner OR l.expires_at <= $6
           RETURNING ${LEASE_COLUMNS}`,
          [
            input.name,
            input.owner,
            input.now,
            input.now + input.ttlMs,
            input.data === undefined ? null : JSON.stringify(input.data),
            input.lapsedBefore ?? input.now,
          ],
        );
        if (rows[0] !== undefined) return { acquired: true, lease: toLease(rows[0]) };
        const holder = await getLease(db, input.name);
        // Released between the two statements: try again.
        if (holder !== undefined) return { acquired: false, holder };
      }
    },
    async renewLease(db: Db, name: string, owner: string, ttlMs: number, now: number): Promise<boolean> {
      const result = await db.query(`UPDATE ${s}.leases SET expires_at = $1 WHERE name = $2 AND owner = $3`, [
        now + ttlMs,
        name,
        owner,
      ]);
      return (result.rowCount ?? 0) > 0;
    },
    async releaseLease(db: Db, name: string, owner: string): Promise<boolean> {
      const result = await db.query(`DELETE FROM ${s}.leases WHERE name = $1 AND owner = $2`, [name, owner]);
      return (result.rowCount ?? 0) > 0;
    },
    async listLeases(db: Db, prefix: string): Promise<Lease[]> {
      const { rows } = await db.query<LeaseRow>(
        `SELECT ${LEASE_COLUMNS} FROM ${s}.leases WHERE starts_with(name, $1) ORDER BY name`,
        [prefix],
      );
      return rows.map(toLease);
    },
    /**
     * One statement: the due, unclaimed rows are locked with `FOR UPDATE SKIP LOCKED`, so gateways claiming at
     * the same moment each get different rows instead of queueing behind one another.
     */
    async claimDeliveries(db: Db, { owner, now, ttlMs, limit }: ClaimDeliveries): Promise<DeliveryRecord[]> {
      const { rows } = await db.query<DeliveryRow>(
        `UPDATE ${s}.deliveries SET lease_owner = $1, lease_until = $2
         WHERE id IN (
           SELECT id FROM ${s}.deliveries
           WHERE status = 'queued' AND next_attempt_at <= $3 AND (lease_until IS NULL OR lease_until <= $3)
           ORDER BY next_attempt_at ASC, id ASC LIMIT $4
           FOR UPDATE SKIP LOCKED)
         RETURNING data, lease_owner, lease_until`,
        [owner, now + ttlMs, now, Math.max(0, Math.floor(limit))],
      );
      return rows
        .map(toDelivery)
        .sort((a, b) => a.nextAttemptAt - b.nextAttemptAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    },
  };
}
