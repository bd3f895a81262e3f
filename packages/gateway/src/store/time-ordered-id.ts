import { randomUUID } from "node:crypto";

/**
 * A UUID of version 7 (RFC 9562): the first 48 bits are the time in milliseconds, the rest random. Records keyed
 * by it (runs, deliveries) are written at the end of their index instead of on a random page of it, which keeps
 * each commit's pages few.
 */
export function timeOrderedId(now = Date.now()): string {
  const time = Math.max(0, Math.floor(now)).toString(16).padStart(12, "0").slice(-12);
  // randomUUID gives xxxxxxxx-xxxx-4xxx-[89ab]xxx-xxxxxxxxxxxx: keep its random bits and RFC variant.
  return `${time.slice(0, 8)}-${time.slice(8, 12)}-7${randomUUID().slice(15)}`;
}
