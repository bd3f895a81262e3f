import { type Clock, monotonicNow } from "../clock.js";
import type { ClusterSettings } from "./options.js";

/**
 * Whether this gateway has reached the store without a break for long enough to judge other gateways' leases.
 *
 * A lease another gateway holds lapses when that gateway stops renewing it: because it died, or because it could
 * not reach the store. A gateway that was cut off itself cannot tell which: everyone's leases lapsed while the
 * store was away. So after a break (and at start) it takes no other gateway's lease over, and judges no other
 * gateway gone, until its own calls have reached the store for one full lease time: by then every live gateway has
 * renewed. Contact is read from calls made every heartbeat (the liveness lease and lane renewals): a call that
 * fails, or none succeeding for two heartbeats (a call held by a partition never fails), is a break.
 */
export class StoreContact {
  /** Monotonic time since which every heartbeat reached the store promptly; undefined while cut off. */
  private since: number | undefined;
  /** Monotonic time the newest successful call came back. */
  private lastAt: number | undefined;

  constructor(
    private readonly clock: Clock,
    private readonly settings: Pick<ClusterSettings, "leaseTtlMs" | "heartbeatMs" | "graceMs">,
  ) {}

  /**
   * A call sent at monotonic `sentAt` reached the store. One that took longer than two heartbeats was held (a
   * partition), and one after two heartbeats without any success ends a break: contact counts from now on.
   */
  reached(sentAt: number): void {
    const now = monotonicNow(this.clock);
    const gap = this.maxGap();
    if (this.lastAt === undefined || now - this.lastAt > gap || now - sentAt > gap) this.since = undefined;
    this.since ??= now;
    this.lastAt = now;
  }

  /** A call failed to reach the store. */
  lost(): void {
    this.since = undefined;
  }

  /** Contact has held for a full lease time up to now. */
  trusted(): boolean {
    const now = monotonicNow(this.clock);
    if (this.since === undefined || this.lastAt === undefined) return false;
    if (now - this.lastAt > this.maxGap()) return false;
    return now - this.since >= this.settings.leaseTtlMs;
  }

  /**
   * The `lapsedBefore` for taking another gateway's lease now: its expiry less the grace for clocks that run at
   * different rates, or nothing at all (0) while contact is not trusted.
   */
  lapsedBefore(): number {
    return this.trusted() ? this.clock.now() - this.settings.graceMs : 0;
  }

  /** Two heartbeats and a bit: a healthy store answers every one. */
  private maxGap(): number {
    return 2 * this.settings.heartbeatMs + this.settings.graceMs;
  }
}
